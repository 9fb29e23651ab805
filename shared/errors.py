"""The one error hierarchy of Deniable.

Every error the library raises on purpose derives from :class:`DeniableError`,
so callers can catch one root (as ``requests.RequestException`` does).  Errors
about bad input also derive from :class:`ValueError` so generic code that
expects ``ValueError`` keeps working::

    DeniableError
    ├── InvalidParameter      (ValueError)  a mechanism/survey parameter is out of range
    ├── InvalidValue          (ValueError)  a respondent's true answer is not in the domain
    ├── InvalidReport         (ValueError)  a noisy report fails strict decoding
    ├── InvalidSurvey         (ValueError)  a survey definition fails validation
    ├── InvalidJson           (ValueError)  a document is not strict JSON (deniable.wire)
    ├── NotFound                            a survey, question or report id is unknown
    ├── Conflict                            state forbids the request (closed survey, id reuse)
    │   ├── SurveyClosed                    the survey no longer takes answers or batches
    │   ├── UnknownKey                      units sealed to a key that is not taken (reseal)
    │   └── AlreadyDelivered                a spent enrolment token's submission was delivered
    ├── AuthenticationError                 operator or enrolment token missing
    │   └── Forbidden                       token forged, spent, or lacks the right
    ├── RateLimited                         too many requests; carries ``retry_after``
    ├── PayloadTooLarge                     request body or batch over the configured limit
    ├── SealingError          (ValueError)  a sealed report does not seal or open (HPKE)
    ├── StorageError                        the database failed or holds an unreadable row
    ├── MissingDependency     (ImportError) numpy (simulation, aggregation) is not installed
    └── ClientError                         raised only on the respondent's device
        ├── SignatureError                  survey signature missing, wrong, or key changed
        ├── PolicyViolation                 survey asks more than the respondent allows
        ├── BudgetExceeded                  the privacy ledger would go over a cap
        ├── AlreadyAnswered                 this device already answered the survey
        ├── StateError                      device state file corrupt or undecryptable
        └── TransportError                  the aggregator could not be reached or refused

Each class has one problem type (:class:`deniable.wire.ProblemType`), and the services map
it to one HTTP status in one place (``deniable.service.problems``); the library itself knows
nothing of HTTP.
"""

from __future__ import annotations

__all__ = [
    "AlreadyAnswered",
    "AlreadyDelivered",
    "AuthenticationError",
    "BudgetExceeded",
    "ClientError",
    "Conflict",
    "DeniableError",
    "Forbidden",
    "InvalidJson",
    "InvalidParameter",
    "InvalidReport",
    "InvalidSurvey",
    "InvalidValue",
    "MissingDependency",
    "NotFound",
    "PayloadTooLarge",
    "PolicyViolation",
    "RateLimited",
    "SealingError",
    "SignatureError",
    "StateError",
    "StorageError",
    "SurveyClosed",
    "TransportError",
    "UnknownKey",
]


class DeniableError(Exception):
    """Root of every error Deniable raises on purpose."""


class InvalidParameter(DeniableError, ValueError):
    """A mechanism or survey parameter is outside its documented range."""


class InvalidValue(DeniableError, ValueError):
    """A respondent's true answer is of the wrong type or outside the domain."""


class InvalidReport(DeniableError, ValueError):
    """A noisy report does not decode under its mechanism's strict wire format."""


class InvalidSurvey(DeniableError, ValueError):
    """A survey definition does not validate.

    ``reason`` is a machine-readable code (docs/protocol.md §7, "Reason codes"), the same in
    every client, so tests can tell a refusal for the right reason from one for another.
    """

    def __init__(self, message: str, *, reason: str = "invalid") -> None:
        super().__init__(message)
        self.reason = reason


class InvalidJson(DeniableError, ValueError):
    """A document is not strict JSON (:func:`deniable.wire.strict_json.loads`).

    ``reason`` names the rule it breaks: ``not-utf8``, ``not-json``, ``duplicate-member``,
    ``too-deep`` or ``surrogate``.
    """

    def __init__(self, message: str, *, reason: str = "not-json") -> None:
        super().__init__(message)
        self.reason = reason


class NotFound(DeniableError):
    """A survey, question or report does not exist."""


class Conflict(DeniableError):
    """The current state forbids the request (closed survey, reused report id)."""


class SurveyClosed(Conflict):
    """The survey is closed: it takes no more reports, sealed units or batches.  Final: a
    client drops what it holds for the survey, a relay drops the batch."""


class UnknownKey(Conflict):
    """Units sealed to an encryption key the relay does not take (not the aggregator's
    current one, nor one it retired recently): the device verifies the current key and
    seals the same reports to it (docs/protocol.md §11.2)."""


class AlreadyDelivered(Conflict):
    """The submission an enrolment token admitted was delivered already (a relay forgot which
    units it was, docs/relay.md): a retry with that token is answered with this, which clients
    treat as delivered, and nothing is taken."""


class AuthenticationError(DeniableError):
    """An operator or enrolment token is missing, forged or already spent."""


class Forbidden(AuthenticationError):
    """A token was presented but is forged, spent, or does not grant this request."""


class RateLimited(DeniableError):
    """Too many requests; ``retry_after`` is in seconds."""

    def __init__(self, message: str, *, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PayloadTooLarge(DeniableError):
    """A request body or batch exceeds the configured limit."""


class SealingError(DeniableError, ValueError):
    """A report cannot be sealed, or a sealed blob does not open (altered, wrong key,
    survey or unit, bad padding): see :mod:`deniable.sealing`."""


class StorageError(DeniableError):
    """The database failed, or a stored row cannot be read back."""


class MissingDependency(DeniableError, ImportError):
    """An optional dependency is not installed (the device install leaves numpy out)."""


class ClientError(DeniableError):
    """Errors raised only by the respondent-side client."""


class SignatureError(ClientError):
    """The survey signature is missing or wrong, or the aggregator key changed.

    ``reason``: ``signature``, ``key-id`` or ``id-mismatch`` for a survey document
    (docs/protocol.md §7, "Reason codes"); ``invalid`` otherwise.
    """

    def __init__(self, message: str, *, reason: str = "invalid") -> None:
        super().__init__(message)
        self.reason = reason


class PolicyViolation(ClientError):
    """The survey asks for more privacy loss, or other mechanisms, than policy allows."""


class BudgetExceeded(ClientError):
    """Answering would take the privacy ledger over one of its caps."""


class AlreadyAnswered(ClientError):
    """This device has already answered the survey."""


class StateError(ClientError):
    """The device state file is corrupt, truncated, or cannot be decrypted."""


class TransportError(ClientError):
    """The aggregator could not be reached, or refused the request."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
