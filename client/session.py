"""SurveyClient: fetch a signed survey, check it, randomize answers, deliver them once.

Order of operations for one survey, and why:

1. ``fetch``: pin the aggregator's Ed25519 key (``trusted_key`` or trust on
   first use of ``/api/v1/key``, stored in the state file), download the
   survey; if it is signed by another key, follow the aggregator's signed
   rotation chain from the pinned key (:mod:`deniable.keychain`,
   docs/key-rotation.md) or refuse; rebuild the definition with
   :meth:`Survey.from_dict` (``resolved=True``: a /2 definition must carry every
   parameter; docs/protocol.md) and verify the signature over
   :meth:`Survey.canonical_bytes`; then the policy (ε caps, mechanism
   allowlist), the survey status, "already answered" and the budget
   (charges that depend on which surveys were answered, never on the answers).
   Any failure raises a typed error and nothing is posted.
2. ``answer``: every true answer is validated first (InvalidValue, nothing
   sent); each is randomized with the CSPRNG through the question's shared
   mechanism (longitudinal questions: memoized permanent response, then a
   fresh instantaneous one); each report gets a fresh ``uuid4``.  The ledger is
   charged, the survey marked answered and the batch put in the outbox, all in
   one atomic state write, *before* any byte is sent.
3. ``flush`` (also run by ``answer``): POST each outbox batch; it leaves the
   outbox only when the aggregator acknowledges it.  Retries (connection
   errors, 5xx, 429 with Retry-After) resend the identical body with the same
   report ids, which the aggregator stores once.

No side channels: every report body for a survey has the same size and key
order whatever the true answers are (fixed-length payloads and UUIDs), the
headers are fixed, and exactly one batch is posted per answered survey.

Relayed surveys (a signed ``relay`` member, docs/protocol.md "Sealing"): ``fetch``
also verifies the aggregator's encryption key against the pinned signing key
(:meth:`KeyPinning.verified_encryption_key`); ``answer`` seals each report (one
unit per question, or the whole submission) with :mod:`deniable.sealing`, padded
to the unit's fixed size, and the outbox entry is a POST to the relay's sealed
route only: every sealed body of a survey has one size, one path and one header
set whatever the answers.  The enrolment token, if any, travels in that body to
the relay, never to the aggregator.  A 409 from the relay (the body's encryption
key is no longer taken) makes ``flush`` verify the current one and reseal the SAME
randomized reports to it, then retry once (``_reseal``); refused again, it is a refusal.

Enrolment: a survey created with ``require_enrolment`` admits one batch per
one-time token the operator issued.  ``answer(..., enrolment_token=...)``
stores the token with the outbox entry, so every retry resends it (header
``X-Deniable-Enrolment``) with the identical body; the aggregator acknowledges
such a retry again even though the token is already spent.  The token depends
on nothing but the respondent's enrolment, never on the answers.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from deniable import errors
from deniable.errors import (
    AlreadyAnswered,
    ClientError,
    InvalidParameter,
    InvalidSurvey,
    InvalidValue,
    SignatureError,
    TransportError,
)

from .ledger import Ledger
from .pinning import KeyPinning, decode_public_key
from .policy import Policy, question_cost
from .randomized import randomize_answers, survey_charges
from .sealed import resealed_body, sealed_body, with_token
from .state import StateStore
from .transport import FINAL_CONFLICTS, HttpTransport, accepted, problem_type, requests_module

# Printable ASCII without spaces: nothing that could split or fold an HTTP header.
ENROLMENT_TOKEN = re.compile(r"[!-~]{1,256}")

if TYPE_CHECKING:
    import requests

    from deniable.survey import Survey

# requests, deniable.survey (every mechanism), cryptography, uuid and secrets are
# imported where first needed, so that ``import deniable.client`` stays light.


__all__ = [
    "AnswerDeclined",
    "FlushResult",
    "Receipt",
    "SurveyClient",
    "EnrolmentTokenRequired",
    "SurveyClosed",
    "VerifiedSurvey",
]


class SurveyClosed(errors.SurveyClosed, ClientError):
    """The survey no longer accepts answers (seen on the device: the signed document's
    status, before anything is sent)."""


class AnswerDeclined(ClientError):
    """The respondent saw the randomized reports and chose not to send them."""


class EnrolmentTokenRequired(ClientError):
    """The survey admits only enrolled respondents, and no enrolment token was given."""


@dataclass(frozen=True)
class VerifiedSurvey:
    """A survey whose signature verified against the pinned key of ``origin``."""

    survey: Survey
    status: str
    origin: str
    key_id: str
    signature: bytes = field(repr=False)
    public_key: bytes = field(repr=False)
    # Whether the aggregator admits only respondents with a one-time enrolment token.
    require_enrolment: bool = False
    # A relayed survey: the key document's encryption_key member, verified at fetch.
    encryption: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    @property
    def id(self) -> str:
        return self.survey.id

    @property
    def total_epsilon(self) -> float:
        return sum(question_cost(q) for q in self.survey.questions)


@dataclass(frozen=True)
class FlushResult:
    delivered: int
    pending: int


@dataclass(frozen=True)
class Receipt:
    """What ``answer`` did: reports charged and queued, and whether they were delivered."""

    survey: str
    report_ids: tuple[str, ...]
    epsilon_charged: float
    delivered: bool


def _check_enrolment_token(token: str | None) -> None:
    """Refuse an enrolment token that is not one printable-ASCII word (None is no token)."""
    if token is not None and (not isinstance(token, str) or not ENROLMENT_TOKEN.fullmatch(token)):
        raise InvalidParameter(
            "enrolment_token must be the token text (printable ASCII, no spaces)"
        )


class SurveyClient(HttpTransport, KeyPinning):
    """The respondent's side of the protocol, for one aggregator ``base_url``."""

    def __init__(
        self,
        base_url: str,
        *,
        trusted_key: str | None = None,
        state: StateStore | str | os.PathLike[str] | None = None,
        policy: Policy | None = None,
        session: requests.Session | None = None,
        timeout: float | tuple[float, float] = 10.0,
        retries: int = 4,
        backoff: float = 0.25,
        max_backoff: float = 30.0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not isinstance(base_url, str):
            raise InvalidParameter("base_url must be a string such as https://host/")
        try:
            parts = urlsplit(base_url)
            parts.port  # noqa: B018 - ValueError for a port that is not a number in range
            # Why: requests' own URL parser refuses more (spaces or bad labels in the host), and
            # its InvalidURL is a ValueError that would otherwise escape from the first request.
            requests_module().PreparedRequest().prepare_url(base_url, None)
        except ValueError:
            raise InvalidParameter(f"base_url must be an http(s) URL, got {base_url!r}") from None
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query:
            raise InvalidParameter(f"base_url must be an http(s) URL, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.origin = f"{parts.scheme}://{parts.netloc.lower()}{parts.path.rstrip('/')}"
        self._trusted_key: bytes | None = None
        if trusted_key is not None:
            try:
                self._trusted_key = decode_public_key(trusted_key, "trusted_key")
            except SignatureError as error:
                raise InvalidParameter(str(error)) from None
        if state is None or isinstance(state, str | os.PathLike):
            state = StateStore(state)
        if not isinstance(state, StateStore):
            raise InvalidParameter("state must be a StateStore or a path")
        self.store = state
        if policy is None:
            policy = Policy()
        if not isinstance(policy, Policy):
            raise InvalidParameter("policy must be a deniable.client.Policy")
        self.policy = policy
        self.session = session if session is not None else requests_module().Session()
        self.timeout = self._check_timeout(timeout)
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 20:
            raise InvalidParameter(f"retries must be an int in [0, 20], got {retries!r}")
        for name, value in (("backoff", backoff), ("max_backoff", max_backoff)):
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise InvalidParameter(f"{name} must be a non-negative number, got {value!r}")
        self.retries = retries
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.clock = clock
        self.sleep = sleep

    # -- keys and surveys ---------------------------------------------------------
    def _verify(self, survey_id: str, document: object, key: bytes, key_id: str) -> VerifiedSurvey:
        if not isinstance(document, dict):
            raise SignatureError(f"survey {survey_id!r}: the survey document is not an object")
        from deniable.keychain import decode_signature, verify_document

        # key_id, signature, definition, id: docs/protocol.md §2, §7 (reason codes on errors).
        from deniable.wire import SurveyEnvelope

        survey = verify_document(document, survey_id, key)
        signature = decode_signature(document.get("signature"), f"survey {survey_id!r}")
        envelope = SurveyEnvelope.parse(document, survey_id)  # status, require_enrolment
        return VerifiedSurvey(
            survey=survey,
            status=envelope.status,
            origin=self.origin,
            key_id=key_id,
            signature=signature,
            public_key=key,
            require_enrolment=envelope.require_enrolment,
        )

    @staticmethod
    def _answered_key(key_id: str, survey_id: str) -> str:
        """Who was answered: the aggregator's pinned key identity and the survey id.

        Why not the URL: ``http://localhost:8000`` and ``http://127.0.0.1:8000`` are one
        aggregator (one key), and must not admit two answers to one survey.
        """
        return f"key:{key_id}#{survey_id}"

    def _answered(self, state: Any, key_id: str, survey_id: str) -> bool:
        # Why the retired keys too: after a rotation the aggregator is the same one (the
        # pin followed its signed chain), and must not get a second answer to a survey.
        identities = {key_id}
        for pin in state.keys.values():
            if isinstance(pin, dict) and pin.get("key_id") == key_id:
                identities.update(pin.get("retired") or ())
        # The last form: state files written before answers were keyed by the pinned key.
        return (
            any(self._answered_key(k, survey_id) in state.answered for k in identities)
            or f"{self.origin}#{survey_id}" in state.answered
        )

    def _refuse_answered(self, state: Any, key_id: str, survey_id: str) -> None:
        if not self._answered(state, key_id, survey_id):
            return
        entry = state.answered.get(self._answered_key(key_id, survey_id))
        if isinstance(entry, dict) and entry.get("declined"):
            raise AlreadyAnswered(
                f"this device declined survey {survey_id!r} after seeing its randomized "
                "reports, and sent nothing; it does not answer it again"
            )
        waiting = any(
            e.get("survey") == survey_id and e.get("refused") in (401, 403) for e in state.outbox
        )
        hint = (
            (
                " (its batch waits for an enrolment token: flush with enrolment_token=..., "
                "or `deniable flush --enrolment-token`)"
            )
            if waiting
            else ""
        )
        raise AlreadyAnswered(f"this device already answered survey {survey_id!r}{hint}")

    def _admit(self, verified: VerifiedSurvey) -> None:
        """Everything but the signature: policy, status, already answered, budget."""
        self.policy.check(verified.survey)
        if verified.status != "open":
            raise SurveyClosed(f"survey {verified.id!r} is closed")
        state = self.store.load()
        self._refuse_answered(state, verified.key_id, verified.id)
        charges, _ = survey_charges(verified.survey, state.device_secret, state.memo)
        Ledger(state, self.policy, self.clock).check(
            sum(c for _, _, c in charges), f"answering survey {verified.id!r}"
        )

    @staticmethod
    def _strict_json(response: requests.Response, what: str) -> Any:
        """JSON with every member name once per object (InvalidSurvey ``duplicate-member``)."""
        from deniable.canonical import loads

        try:
            return loads(response.content)
        except ValueError as error:
            if isinstance(error, InvalidSurvey):
                raise
            raise TransportError(
                f"aggregator sent a {what} that is not JSON", status=response.status_code
            ) from None

    def fetch(self, survey_id: str) -> VerifiedSurvey:
        """Download, verify and admit a survey; raise a typed error otherwise."""
        from deniable.survey import IDENTIFIER

        if not isinstance(survey_id, str) or not IDENTIFIER.fullmatch(survey_id):
            raise InvalidParameter(f"survey id must match {IDENTIFIER.pattern}, got {survey_id!r}")
        key, key_id = self._pinned_key()
        self._refuse_answered(self.store.load(), key_id, survey_id)
        path = f"/api/v1/surveys/{survey_id}"
        response = self._request("GET", path)
        if response.status_code != 200:
            raise self._http_error("GET", path, response)
        document = self._strict_json(response, "survey")
        served_key_id = document.get("key_id") if isinstance(document, dict) else None
        if served_key_id is not None and served_key_id != key_id:
            # Signed by another key: follow the signed rotation chain, or refuse.
            self.follow_rotation()
            key, key_id = self._pinned_key()
        verified = self._verify(survey_id, document, key, key_id)
        if verified.survey.relay is not None:
            encryption = self.verified_encryption_key()
            key, key_id = self._pinned_key()
            if key != verified.public_key:  # rotated meanwhile: fetch again under the new key
                raise SignatureError(
                    f"the aggregator key changed while fetching {survey_id!r}; fetch it again"
                )
            verified = replace(verified, encryption=encryption)
        self._admit(verified)
        return verified

    # -- answering ----------------------------------------------------------------
    def _check_answers(self, survey: Survey, answers: object) -> dict[str, Any]:
        if not isinstance(answers, Mapping):
            raise InvalidValue("answers must be a mapping {question_id: true answer}")
        ids = survey.question_ids
        unknown = [k for k in answers if k not in ids]
        if unknown:
            raise InvalidValue(f"survey {survey.id!r} has no question(s) {unknown!r}")
        # Every question gets a value on every path: a hidden one "not applicable", a declined
        # optional one "declined" (docs/protocol.md §5.5), so one report per question is sent.
        return survey.path_answers(answers)

    def answer(
        self,
        survey: VerifiedSurvey | str,
        answers: Mapping[str, Any],
        *,
        enrolment_token: str | None = None,
        confirm: Callable[[Mapping[str, str]], bool] | None = None,
    ) -> Receipt:
        """Randomize and submit one batch for ``survey``; see the module docstring.

        ``enrolment_token``: the one-time token for a survey that requires
        enrolment; kept with the queued batch and sent with every attempt.

        ``confirm``: called with the randomized payloads (question id -> payload)
        before anything is charged, queued or sent; these exact reports are sent if it
        returns True.  If it returns False nothing is charged, queued or sent, the
        device records that it declined the survey and :class:`AnswerDeclined` is
        raised; answering the survey again is refused.  Why: someone who could draw
        again until the reports looked like their answers would, unknowingly, send
        their true answers (the randomization only protects a report drawn once).
        """
        _check_enrolment_token(enrolment_token)
        if isinstance(survey, str):
            survey = self.fetch(survey)
        if not isinstance(survey, VerifiedSurvey):
            raise InvalidParameter("answer() needs a survey from fetch() or a survey id")
        if survey.origin != self.origin:
            raise InvalidParameter(f"survey {survey.id!r} was fetched from {survey.origin}")
        key, _ = self._pinned_key()
        if key != survey.public_key:
            raise SignatureError(f"survey {survey.id!r} was not verified under the pinned key")
        from deniable.keychain import signature_valid

        if not signature_valid(key, survey.signature, survey.survey.canonical_bytes()):
            raise SignatureError(f"survey {survey.id!r} was altered after fetch()")
        if survey.require_enrolment and enrolment_token is None:
            # Why before anything: answering without a token would charge the ledger and
            # mark the survey answered for a batch the aggregator must refuse.
            raise EnrolmentTokenRequired(
                f"survey {survey.id!r} admits only enrolled respondents: give the one-time "
                "enrolment token from its operator (enrolment_token=...)"
            )
        checked = self._check_answers(survey.survey, answers)
        self._admit(survey)
        import uuid  # with the first answer, not with the module (see the top)

        batch_id = uuid.uuid4().hex
        declined = False
        with self.store.transaction() as state:
            answered_key = self._answered_key(survey.key_id, survey.id)
            self._refuse_answered(state, survey.key_id, survey.id)
            ledger = Ledger(state, self.policy, self.clock)
            charges, _ = survey_charges(survey.survey, state.device_secret, state.memo)
            ledger.check(sum(c for _, _, c in charges), f"answering survey {survey.id!r}")
            randomized = randomize_answers(survey.survey, checked, state.device_secret, state.memo)
            if confirm is not None and not confirm(dict(randomized.payloads)):
                state.answered[answered_key] = {"at": self.clock(), "declined": True}
                declined = True
            else:
                reports = [
                    {"id": str(uuid.uuid4()), "question": question_id, "payload": payload}
                    for question_id, payload in randomized.payloads.items()
                ]
                relay = survey.survey.relay
                if relay is None:
                    from deniable.wire import Report, Submission

                    submission = Submission(reports=tuple(Report(**report) for report in reports))
                    body = submission.encode().decode("ascii")
                else:
                    body = sealed_body(survey, reports, enrolment_token)
                charged = ledger.charge(answered_key, randomized.charges)
                now = self.clock()
                for family, (memo_key, count) in randomized.families.items():
                    state.memo[family] = {"key": memo_key, "count": count, "at": now}
                report_ids = [r["id"] for r in reports]
                state.answered[answered_key] = {"at": now, "batch": batch_id, "reports": report_ids}
                entry = {
                    "batch": batch_id,
                    "origin": self.origin,
                    "survey": survey.id,
                    "path": f"/api/v1/surveys/{survey.id}/reports",
                    "body": body,
                    "created_at": now,
                    "answered": answered_key,
                }
                if relay is not None:
                    # Only the relay hears from this device; the token is in the body.
                    entry["url"] = relay.sealed_url(survey.id)
                    entry["path"] = f"/api/v1/surveys/{survey.id}/sealed"
                    # Kept (in the encrypted state, until delivered) to reseal the same reports
                    # once if the relay says the encryption key went stale (flush()).
                    entry["reseal"] = {"survey": survey.survey.to_dict(), "reports": reports}
                elif enrolment_token is not None:
                    entry["enrolment"] = enrolment_token
                state.outbox.append(entry)
        if declined:
            raise AnswerDeclined(
                f"nothing was sent; this device declined survey {survey.id!r} and will not "
                "answer it again"
            )
        # The charge, the "answered" mark and the batch are on disk: now send.  flush()
        # keeps the batch if the aggregator is unreachable and raises if it refuses it.
        self.flush()
        pending = any(e["batch"] == batch_id for e in self.store.load().outbox)
        return Receipt(
            survey=survey.id,
            report_ids=tuple(report_ids),
            epsilon_charged=charged,
            delivered=not pending,
        )

    def pending(self) -> int:
        """Batches for this aggregator waiting in the outbox."""
        return sum(1 for e in self.store.load().outbox if e.get("origin") == self.origin)

    def flush(
        self, *, enrolment_token: str | None = None, survey_id: str | None = None
    ) -> FlushResult:
        """Deliver this aggregator's outbox, oldest first; stop at the first unreachable try.

        A batch leaves the outbox only when acknowledged (2xx, or a relay's 409
        ``already-delivered``: its token's submission was forwarded) or refused for good
        (4xx other than 401, 403 and 429: then TransportError is raised after the
        rest is tried).  A batch refused for its enrolment (401 no token, 403 a
        token not valid) stays, byte for byte, and is not resent until a token is
        given: ``enrolment_token`` attaches one to such a batch (``survey_id``
        picks which, if several wait) and resends it.  The same randomized
        reports cost no new privacy, so the ledger is not charged again.
        """
        _check_enrolment_token(enrolment_token)
        delivered = 0
        refused: TransportError | None = None
        # Every change is saved at once (save_now), so the batch that left is never resent.
        with self.store.transaction(write=False) as state:
            mine = [e for e in state.outbox if e.get("origin") == self.origin]
            if enrolment_token is not None:
                self._attach_token(mine, enrolment_token, survey_id)
                self.store.save_now()
            for entry in mine:
                if entry.get("refused") in (401, 403):
                    continue  # waiting for an enrolment token; resending cannot help
                path = entry["path"]
                try:
                    response = self._post(entry)
                    if (
                        response.status_code == 409
                        and problem_type(response) not in FINAL_CONFLICTS
                        and self._reseal(entry)
                    ):
                        self.store.save_now()
                        response = self._post(entry)
                except TransportError:
                    break  # still unreachable: keep this and later batches, in order
                status, delivery = response.status_code, accepted(response)
                if not delivery:
                    refused = refused or self._http_error("POST", path, response)
                    answered = state.answered.get(
                        entry.get("answered", f"{self.origin}#{entry['survey']}")
                    )
                    if answered is not None:
                        answered["refused"] = status
                if status in (401, 403):
                    entry["refused"] = status  # kept: the body is never touched
                else:
                    state.outbox.remove(entry)
                    delivered += delivery
                self.store.save_now()
            pending = sum(1 for e in state.outbox if e.get("origin") == self.origin)
        if refused is not None:
            raise refused
        return FlushResult(delivered=delivered, pending=pending)

    def _post(self, entry: dict[str, Any]) -> requests.Response:
        """One delivery attempt of an outbox batch: its body as it stands, byte for byte."""
        return self._request(
            "POST",
            entry["path"],
            entry["body"].encode("utf-8"),
            entry.get("enrolment"),
            url=entry.get("url"),
        )

    def _reseal(self, entry: dict[str, Any]) -> bool:
        """Once per relayed batch the relay refused (409) for its encryption key: fetch and
        verify the aggregator's key document (following the pin's rotation chain) and seal
        the SAME randomized reports to its encryption key; False if not possible.

        Why not re-randomize: the noise already charged is what must be sent.  Refused
        again, the batch takes the usual way of a refusal (flush())."""
        reseal = entry.get("reseal")
        if "url" not in entry or not isinstance(reseal, dict) or entry.get("resealed"):
            return False
        from deniable import keychain

        try:
            encryption = self.verified_encryption_key()
        except SignatureError:
            return False  # no verified key to seal to: the refusal stands
        key, _ = self._pinned_key()
        public = keychain.verify_encryption_key({"encryption_key": encryption}, key)
        entry["body"] = resealed_body(entry["body"], reseal, encryption, public)
        entry["resealed"] = True
        return True

    @staticmethod
    def _attach_token(entries: list[dict[str, Any]], token: str, survey_id: str | None) -> None:
        """Give ``token`` to the one batch waiting for enrolment (of ``survey_id``)."""
        waiting = [
            e
            for e in entries
            if e.get("refused") in (401, 403)
            and (survey_id is None or e.get("survey") == survey_id)
        ]
        if not waiting:
            raise InvalidParameter("no batch in the outbox is waiting for an enrolment token")
        if len(waiting) > 1:
            surveys = sorted({str(e.get("survey")) for e in waiting})
            raise InvalidParameter(
                f"batches of several surveys wait for enrolment tokens ({', '.join(surveys)}): "
                "name the survey the token is for"
            )
        (entry,) = waiting
        if "url" in entry:  # a relayed batch: the token is a member of the body
            entry["body"] = with_token(entry["body"], token)
        else:
            entry["enrolment"] = token
        entry.pop("refused")

    # -- the ledger, for display ------------------------------------------------
    def budget(self) -> dict[str, float]:
        """ε spent and remaining on this device."""
        ledger = Ledger(self.store.load(), self.policy, self.clock)
        remaining = ledger.remaining()
        return {
            "spent_total": ledger.total(),
            "spent_period": ledger.in_period(),
            "remaining_lifetime": remaining["lifetime"],
            "remaining_period": remaining["period"],
        }
