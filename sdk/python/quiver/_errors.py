"""Typed errors raised by the Quiver SDK.

Every error the server answers with is ``{"error": "<code>", "message": "...", ...extra}``.
The SDK maps it to a class by the ``error`` code first and by the HTTP status second,
so ``except NotFoundError`` works whatever the exact code was.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from typing import Any, Dict, Mapping, Optional, Type

from ._models import ConfigurationStep

# The error codes of API.md whose answer says the request did nothing: it was refused before anything was
# sent to the tool (unavailable: before anything was dispatched), so no idempotency key holds an outcome of
# it. Not among them: idempotency_key_reused and request_in_progress (the key's earlier request ran or is
# running), tool_outcome_unknown, and internal (a bug, which may come after a change was made). The one rule
# both SDKs share; see QuiverError.did_nothing.
DID_NOTHING_CODES = frozenset({
    "bad_request",
    "invalid_json",
    "invalid_idempotency_key",
    "idempotency_key_required",
    "unauthorized",
    "forbidden",
    "not_found",
    "tool_not_configured",
    "payload_too_large",
    "validation_error",
    "invalid_arguments",
    "rate_limited",
    "tool_unreachable",
    "upstream_auth_failed",
    "upstream_refused",
    "unavailable",
})

__all__ = [
    "QuiverError",
    "InvalidRequestError",
    "APIConnectionError",
    "APITimeoutError",
    "APIStatusError",
    "BadRequestError",
    "InvalidJSONError",
    "InvalidIdempotencyKeyError",
    "IdempotencyKeyRequiredError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "IdempotencyKeyReusedError",
    "RequestInProgressError",
    "ToolNotConfiguredError",
    "ToolOutcomeUnknownError",
    "ToolOutcomeUnknownConflictError",
    "PayloadTooLargeError",
    "ValidationError",
    "InvalidArgumentsError",
    "RateLimitError",
    "InternalServerError",
    "ToolUnreachableError",
    "UpstreamAuthFailedError",
    "UpstreamRefusedError",
    "ServiceUnavailableError",
]


class QuiverError(Exception):
    """Base class of every error the SDK raises.

    Attributes:
        code: the server's ``error`` code (``"not_found"``, ...), or ``None`` when there was no answer.
        message: the server's one-sentence ``message`` (or a description of the client-side failure).
        status: the HTTP status, or ``None`` when no response was received.
        body: the whole decoded error body (a dict; empty when the body was not JSON).
        headers: the response headers, or ``None``.
        request_id: the response's ``X-Request-Id``, else the error body's ``request_id``, if any.
        retry_after: seconds from the ``Retry-After`` header, if any.

    Extra fields of the error body (``fields``, ``next_configuration_step``, ...) are also
    readable as attributes.
    """

    # Set by the SDK when an earlier attempt of the same request (retried automatically) may have been
    # acted on: then the request as a whole did not provably do nothing, whatever this answer says.
    _earlier_attempt_may_have_run = False

    def __init__(
        self,
        message: str,
        *,
        code: Optional[str] = None,
        status: Optional[int] = None,
        body: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.body: Dict[str, Any] = dict(body or {})
        self.headers = headers
        self.request_id: Optional[str] = headers.get("X-Request-Id") if headers is not None else None
        if not self.request_id and isinstance(self.body.get("request_id"), str):
            self.request_id = self.body["request_id"]
        self.retry_after: Optional[float] = _parse_retry_after(headers.get("Retry-After")) if headers is not None else None

    @property
    def status_code(self) -> Optional[int]:
        """Alias of :attr:`status`."""
        return self.status

    @property
    def did_nothing(self) -> bool:
        """Whether the request provably did nothing, on none of its attempts: sending it again (with the
        same idempotency key, which then holds no outcome, or a new one) cannot do anything twice.

        True for an error raised before anything was sent (:class:`InvalidRequestError`, a key refused
        client-side), a refused connection, and Quiver's answers that say so (a 4xx other than
        ``idempotency_key_reused``, ``request_in_progress`` and ``tool_outcome_unknown``; ``502
        tool_unreachable``, ``upstream_auth_failed``, ``upstream_refused``; ``503 unavailable``), as long
        as no earlier attempt of the same request may have been acted on. False for everything else: a
        cut connection or timeout, ``500 internal``, ``tool_outcome_unknown``, and any answer without
        Quiver's ``error`` code (a proxy's page proves nothing of what happened behind it).
        """
        return not self._earlier_attempt_may_have_run and self._says_it_did_nothing()

    def _says_it_did_nothing(self) -> bool:
        # Neither an answer that is not the API's shape nor a non-JSON 2xx proves anything.
        return False

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: expose extra fields of the error body.
        if name.startswith("_"):
            raise AttributeError(name)
        body = self.__dict__.get("body") or {}
        if name in body:
            return body[name]
        raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")

    def __str__(self) -> str:
        parts = []
        if self.status is not None:
            parts.append(str(self.status))
        if self.code:
            parts.append(self.code)
        prefix = " ".join(parts)
        text = f"{prefix}: {self.message}" if prefix else self.message
        extra = {k: v for k, v in self.body.items() if k not in ("error", "message")}
        if extra:
            text += " " + json.dumps(extra, ensure_ascii=False, default=str)
        return text

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, message={self.message!r})"


class InvalidRequestError(QuiverError, ValueError):
    """The request cannot be sent as given; raised before anything is sent, and never retried.

    For example an API key or header value with a character HTTP headers cannot carry (outside
    Latin-1, or NUL/CR/LF), text that is not valid Unicode (a lone surrogate) in a request body, or
    an invalid URL. ``status`` is ``None``. Also a :class:`ValueError`.
    """

    def _says_it_did_nothing(self) -> bool:
        return True  # nothing was sent


class APIConnectionError(QuiverError):
    """No response came back: the connection failed, was cut, or timed out.

    For a non-idempotent request the outcome is unknown: the server may or may not have acted.
    """

    def __init__(self, message: str = "Connection error.", *, cause: Optional[BaseException] = None) -> None:
        super().__init__(message)
        self.__cause__ = cause

    def _says_it_did_nothing(self) -> bool:
        # Only a refused connection: the request was never sent. Any other may have been cut after it left.
        cause = self.__cause__
        return isinstance(getattr(cause, "reason", cause), ConnectionRefusedError)


class APITimeoutError(APIConnectionError):
    """The request timed out before a response arrived."""

    def __init__(self, message: str = "Request timed out.", *, cause: Optional[BaseException] = None) -> None:
        super().__init__(message, cause=cause)


class APIStatusError(QuiverError):
    """The server answered with a non-2xx status (base of every HTTP error class)."""

    def _says_it_did_nothing(self) -> bool:
        return self.code in DID_NOTHING_CODES


class BadRequestError(APIStatusError):
    """400: the request itself is malformed (``invalid_json``, ...); also Quiver's ``bad_request`` for a request it
    refuses before routing, whatever the status (``431`` for a header block over its limit, ``417``, ``505``)."""


class InvalidJSONError(BadRequestError):
    """400 ``invalid_json``: the body is not JSON, not an object, or has a duplicate key."""


class InvalidIdempotencyKeyError(BadRequestError, ValueError):
    """The idempotency key is not 1–255 printable ASCII characters without leading/trailing space.

    Raised client-side before anything is sent (``status`` is ``None``), or for the server's
    ``400 invalid_idempotency_key``. Also a :class:`ValueError`.
    """


class IdempotencyKeyRequiredError(BadRequestError):
    """400 ``idempotency_key_required``: a non-retryable action was called without an idempotency key."""


class AuthenticationError(APIStatusError):
    """401: missing or unknown API key."""


class PermissionDeniedError(APIStatusError):
    """403: the key is valid but lacks the permission."""


class NotFoundError(APIStatusError):
    """404: the resource does not exist, or belongs to another account."""


class ConflictError(APIStatusError):
    """409 (base of the more specific conflict errors)."""


class IdempotencyKeyReusedError(ConflictError):
    """409 ``idempotency_key_reused``: the same key was sent earlier with a different body."""


class RequestInProgressError(ConflictError):
    """409 ``request_in_progress``: an earlier request with this key is still running.

    ``retry_after`` holds the server's ``Retry-After`` in seconds.
    """


class ToolNotConfiguredError(ConflictError):
    """409 ``tool_not_configured``: the tool needs (re)configuration.

    ``next_configuration_step`` says what to provide: a :class:`~quiver.ConfigurationStep`, like a
    tool's (``.step``, ``.fields``, ``.authorization_url``), or ``None``.
    """

    @property
    def next_configuration_step(self) -> Optional[ConfigurationStep]:
        step = self.body.get("next_configuration_step")
        return ConfigurationStep._from_json(step) if isinstance(step, dict) else step


class ToolOutcomeUnknownError(APIStatusError):
    """504 or 409 ``tool_outcome_unknown``: the call was dispatched and its outcome is unknown.

    This is terminal for the idempotency key: the tool is never re-run for it. Inspect the
    tool's side, then use a new key for a new, intentional operation. The 409 form (every later
    answer for the key) is a :class:`ToolOutcomeUnknownConflictError`, a :class:`ConflictError` too.
    """


class ToolOutcomeUnknownConflictError(ToolOutcomeUnknownError, ConflictError):
    """409 ``tool_outcome_unknown``: a later request with a key whose outcome is unknown.

    Both a :class:`ToolOutcomeUnknownError` (``except ToolOutcomeUnknownError`` catches both forms) and
    a :class:`ConflictError` (``except ConflictError`` catches every 409); the first answer, the 504,
    is a :class:`ToolOutcomeUnknownError` only.
    """


class PayloadTooLargeError(APIStatusError):
    """413 ``payload_too_large``: the request body is over the server's limit."""


class ValidationError(APIStatusError):
    """422 ``validation_error`` or ``invalid_arguments``; ``fields`` maps each bad field to a message."""

    @property
    def fields(self) -> Dict[str, Any]:
        value = self.body.get("fields")
        return value if isinstance(value, dict) else {}


class InvalidArgumentsError(ValidationError):
    """422 ``invalid_arguments``: the call's ``arguments`` do not satisfy the action's input schema; ``fields``
    names each bad argument. (``validation_error``, any other bad field, is the :class:`ValidationError` itself.)"""


class RateLimitError(APIStatusError):
    """429 ``rate_limited``; ``retry_after`` holds the server's ``Retry-After`` in seconds."""


class InternalServerError(APIStatusError):
    """500 ``internal`` (a server bug; carries ``request_id``), and any 5xx without a Quiver ``error`` code.

    A 5xx without Quiver's code (``code`` is ``None``; ``status`` is the real one) usually comes from
    something between the SDK and Quiver, e.g. a proxy's HTML ``502``/``503``/``504``: it says nothing
    of whether the request reached Quiver or what Quiver did.
    """


class ToolUnreachableError(APIStatusError):
    """502 ``tool_unreachable``: the tool's server could not be reached; the request never left."""


class UpstreamAuthFailedError(APIStatusError):
    """502 ``upstream_auth_failed``: the tool's server rejected Quiver's credentials."""


class UpstreamRefusedError(APIStatusError):
    """502 ``upstream_refused``: the tool's server refused the request itself; nothing ran.

    An HTTP 4xx from it other than 401/403/429 (such as 404/405/406/415), or a JSON-RPC refusal that
    is not about the arguments (such as "method not found" or "unsupported protocol version"). The
    idempotency key is released. Deterministic: the same request gets the same refusal, so it is never
    retried.
    """


class ServiceUnavailableError(APIStatusError):
    """503 ``unavailable``: the server cannot safely take the request now."""


_BY_CODE: Dict[str, Type[APIStatusError]] = {
    # Quiver's code for a request it refuses before routing (431 headers too large, 417, 505), whatever the status.
    "bad_request": BadRequestError,
    "invalid_json": InvalidJSONError,
    "invalid_idempotency_key": InvalidIdempotencyKeyError,
    "idempotency_key_required": IdempotencyKeyRequiredError,
    "unauthorized": AuthenticationError,
    "forbidden": PermissionDeniedError,
    "not_found": NotFoundError,
    "idempotency_key_reused": IdempotencyKeyReusedError,
    "request_in_progress": RequestInProgressError,
    "tool_outcome_unknown": ToolOutcomeUnknownError,
    "tool_not_configured": ToolNotConfiguredError,
    "payload_too_large": PayloadTooLargeError,
    "validation_error": ValidationError,
    "invalid_arguments": InvalidArgumentsError,
    "rate_limited": RateLimitError,
    "tool_unreachable": ToolUnreachableError,
    "upstream_auth_failed": UpstreamAuthFailedError,
    "upstream_refused": UpstreamRefusedError,
    "unavailable": ServiceUnavailableError,
    "internal": InternalServerError,
}

# Without a known Quiver code, only a 4xx is classed by its status: a 4xx says what was wrong with
# the request, which means the same from a proxy as from Quiver. The specific 5xx classes state facts
# only Quiver's code can vouch for (ToolUnreachableError: the request provably never left;
# ServiceUnavailableError: the server did nothing), so a 5xx without one (a proxy's HTML 502/503/504)
# is the generic InternalServerError, with its real status and code None.
_BY_STATUS: Dict[int, Type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: ValidationError,
    429: RateLimitError,
}


def error_class_for(code: Optional[str], status: int) -> Type[APIStatusError]:
    """The error class for a server ``error`` code (first) and HTTP status (second).

    Any 5xx without a known code is :class:`InternalServerError`; an unknown 4xx is
    :class:`APIStatusError`.
    """
    if code == "tool_outcome_unknown" and status == 409:
        return ToolOutcomeUnknownConflictError
    if code and code in _BY_CODE:
        return _BY_CODE[code]
    if status >= 500:
        return InternalServerError
    return _BY_STATUS.get(status, APIStatusError)


def body_snippet(raw: bytes) -> str:
    """A body's first 200 characters, as an error's message quotes a body that says nothing itself."""
    return raw[:200].decode("utf-8", "replace").strip() if raw else ""


def error_from_response(status: int, headers: Mapping[str, str], raw: bytes) -> APIStatusError:
    """Build the typed error for a non-2xx response."""
    body: Dict[str, Any] = {}
    try:
        decoded = json.loads(raw.decode("utf-8")) if raw else None
        if isinstance(decoded, dict):
            body = decoded
    except (ValueError, UnicodeDecodeError):
        pass
    code = body.get("error") if isinstance(body.get("error"), str) else None
    message = body.get("message") if isinstance(body.get("message"), str) else None
    if not message:
        message = body_snippet(raw) or f"HTTP {status}"
    if 300 <= status < 400:
        location = headers.get("Location")
        message = (f"The server answered {status}" + (f" redirecting to {location}" if location else "")
                   + "; the SDK never follows redirects (is base_url right?).")
    cls = error_class_for(code, status)
    return cls(message, code=code, status=status, body=body, headers=headers)


_DELAY_SECONDS = re.compile(r"[0-9]+")
_IMF_FIXDATE = re.compile(
    r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} "
    r"[0-9]{2}:[0-9]{2}:[0-9]{2} GMT"
)


def _parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds from ``Retry-After``: delay-seconds (1*DIGIT) or an IMF-fixdate (RFC 9110).

    Anything else is ``None``; never raises (an absurdly long number is ``inf``).
    """
    if value is None:
        return None
    value = value.strip()
    if _DELAY_SECONDS.fullmatch(value):
        return float(value)
    if _IMF_FIXDATE.fullmatch(value):
        try:
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
        except (ValueError, OverflowError):  # a date that does not exist (31 Feb)
            return None
    return None
