"""The client's HTTP: timeouts, retries with backoff and Retry-After, problem documents.

A mixin of :class:`deniable.client.SurveyClient` (which validates ``session``,
``timeout``, ``retries``, ``backoff``, ``max_backoff`` and ``sleep`` once, in its
constructor).  Every attempt of a request sends the same bytes: retrying never
changes a report, so the aggregator stores it once (docs/protocol.md, the HTTP flow).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

from deniable import __version__
from deniable.errors import InvalidParameter, TransportError

if TYPE_CHECKING:
    import requests

    from deniable.wire import ProblemType

__all__ = ["FINAL_CONFLICTS", "HttpTransport", "accepted", "problem_type", "requests_module"]

USER_AGENT = f"deniable-client/{__version__}"
ENROLMENT_HEADER = "X-Deniable-Enrolment"
# A relay's 409s after which a device does NOT seal the same reports to the aggregator's
# current encryption key and send once more: every other 409 may be about the key
# (unknown-key; the generic conflict of a relay older than that type).
FINAL_CONFLICTS = frozenset({"survey-closed", "already-delivered"})


def requests_module() -> Any:
    """requests, imported by the first client."""
    import requests

    return requests


def problem_type(response: requests.Response) -> ProblemType | None:
    """The kind of a refusal's problem document (None: none, or one this version does not
    know).  A client acts on this, never on the words of ``detail``."""
    from deniable.wire import ProblemType, strict_json

    if response.status_code < 400:
        return None
    try:
        return ProblemType.of(strict_json.loads(response.content, "problem"))
    except ValueError:
        return None


def accepted(response: requests.Response) -> bool:
    """Whether a batch was delivered: 200/201/202 (a relay holds it), or a relay's 409
    ``already-delivered`` problem: its enrolment token's submission was forwarded already,
    and the relay no longer knows which units it was (docs/protocol.md §11.2)."""
    if response.status_code in (200, 201, 202):
        return True
    if response.status_code != 409:
        return False
    return problem_type(response) == "already-delivered"


def retryable_exceptions() -> tuple[type[BaseException], ...]:
    exceptions = requests_module().exceptions
    return (exceptions.ConnectionError, exceptions.Timeout, exceptions.ChunkedEncodingError)


class HttpTransport:
    """Requests to ``base_url`` for a client with the attributes below."""

    base_url: str
    session: requests.Session
    timeout: float | tuple[float, float]
    retries: int
    backoff: float
    max_backoff: float
    sleep: Callable[[float], None]

    @staticmethod
    def _check_timeout(timeout: object) -> float | tuple[float, float]:
        values = timeout if isinstance(timeout, tuple) else (timeout,)
        if len(values) not in (1, 2) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0
            for v in values
        ):
            raise InvalidParameter(f"timeout must be positive seconds, got {timeout!r}")
        return timeout  # type: ignore[return-value]

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- HTTP -------------------------------------------------------------------
    def _delay(self, attempt: int) -> float:
        """Exponential backoff with jitter from the OS CSPRNG (``secrets``)."""
        import secrets  # only when a request is retried (see the top)

        ceiling = min(self.max_backoff, self.backoff * (2**attempt))
        return ceiling / 2 + ceiling / 2 * secrets.randbelow(1_000_001) / 1_000_000

    @staticmethod
    def _retry_after(response: requests.Response) -> float:
        value = response.headers.get("Retry-After", "").strip()
        if not value:
            return 0.0
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        import email.utils  # only for an HTTP-date Retry-After

        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return 1.0
        return max(0.0, when.timestamp() - time.time())

    def _relay(self, url: object) -> str | None:
        """ "relay at <its base>" for a URL outside the aggregator (a relay's), else None."""
        if not isinstance(url, str) or url.startswith(self.base_url):
            return None
        return f"relay at {url.split('/api/')[0]}"

    def _http_error(self, method: str, path: str, response: requests.Response) -> TransportError:
        detail = ""
        try:
            problem = response.json()
            if isinstance(problem, dict):
                detail = ": ".join(
                    str(problem[k]) for k in ("title", "detail") if problem.get(k) is not None
                )
        except ValueError:
            pass
        who = self._relay(getattr(response, "url", None)) or "aggregator"
        message = f"{who} answered {response.status_code} to {method} {path}"
        return TransportError(
            f"{message}{': ' + detail if detail else ''}", status=response.status_code
        )

    def _request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        enrolment: str | None = None,
        authorization: str | None = None,
        *,
        url: str | None = None,
    ) -> requests.Response:
        """One request with timeouts and retries; the same bytes on every attempt.

        ``authorization``: an operator bearer token (only the simulator's bulk
        route uses one; a respondent's device never does).  ``url``: an absolute
        URL instead of ``base_url + path`` (a relayed survey's relay).
        """
        url = url if url is not None else self.base_url + path
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if authorization is not None:
            headers["Authorization"] = f"Bearer {authorization}"
        if body is not None:
            headers["Content-Type"] = "application/json"
        if enrolment is not None:
            headers[ENROLMENT_HEADER] = enrolment
        error: TransportError | None = None
        retryable = retryable_exceptions()
        for attempt in range(self.retries + 1):
            try:
                response = self.session.request(
                    method,
                    url,
                    data=body,
                    headers=headers,
                    timeout=self.timeout,
                    allow_redirects=False,
                )
            except retryable as exc:
                where = self._relay(url) or f"aggregator at {self.base_url}"
                error = TransportError(f"{where} unreachable ({type(exc).__name__})")
                delay = self._delay(attempt)
            else:
                if response.status_code != 429 and response.status_code < 500:
                    return response
                error = self._http_error(method, path, response)
                delay = max(self._delay(attempt), self._retry_after(response))
                if delay > self.max_backoff:
                    break  # the server asks for more patience than we have; try later
            if attempt < self.retries:
                self.sleep(delay)
        assert error is not None
        raise error

    @staticmethod
    def _json(response: requests.Response, what: str) -> Any:
        try:
            return response.json()
        except ValueError:
            raise TransportError(
                f"aggregator sent a {what} that is not JSON", status=response.status_code
            ) from None
