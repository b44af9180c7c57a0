"""HTTP transport: urllib, JSON, typed errors, and retries that cannot duplicate work."""

from __future__ import annotations

import http.client
import json
import random
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from ._errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    InvalidIdempotencyKeyError,
    QuiverError,
    error_from_response,
)
from ._version import __version__

# How a request may be retried.
#
# SAFE: repeating it cannot duplicate an effect (GET, DELETE, or a tool call carrying the caller's
#   idempotency key, which the server deduplicates). Retried on connection errors, timeouts, 5xx
#   (except the terminal tool_outcome_unknown and the deterministic upstream_auth_failed), 429 and
#   409 request_in_progress.
# REFUSED_ONLY: repeating it could duplicate an effect (POST without a key, PATCH). Retried only when
#   the server answered that it did nothing: 429 rate_limited and 503 unavailable.
SAFE = "safe"
REFUSED_ONLY = "refused_only"

_NO_BODY = object()
_MAX_RETRY_AFTER = 60.0


def validate_idempotency_key(key: Any) -> str:
    """Check an idempotency key client-side; return it unchanged.

    Raises ``TypeError`` when it is not a ``str`` and :class:`InvalidIdempotencyKeyError`
    (a ``ValueError``) when it is not 1–255 printable ASCII characters (0x20–0x7E) without a
    leading or trailing space. HTTP strips such spaces, so the server would see a different key.
    """
    if not isinstance(key, str):
        raise TypeError(f"idempotency_key must be a str, not {type(key).__name__}")
    problem = None
    if not 1 <= len(key) <= 255:
        problem = "must be 1-255 characters long"
    elif any(not (0x20 <= ord(c) <= 0x7E) for c in key):
        problem = "must contain only printable ASCII characters (0x20-0x7E)"
    elif key[0] == " " or key[-1] == " ":
        problem = "must not start or end with a space"
    if problem:
        raise InvalidIdempotencyKeyError(
            f"Invalid idempotency key: it {problem}.", code="invalid_idempotency_key"
        )
    return key


class Response:
    """A raw HTTP response."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


class Transport:
    """Sends requests to the Quiver API and turns answers into JSON values or typed errors."""

    def __init__(
        self,
        *,
        api_key: Optional[str],
        base_url: str,
        timeout: float,
        max_retries: int,
        initial_retry_delay: float = 0.5,
        max_retry_delay: float = 8.0,
        default_headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.api_key = api_key
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries
        self.initial_retry_delay = initial_retry_delay
        self.max_retry_delay = max_retry_delay
        self.default_headers = dict(default_headers or {})
        self.user_agent = f"quiver-python/{__version__} (Python {sys.version_info[0]}.{sys.version_info[1]})"
        self._opener = urllib.request.build_opener()
        self.sleep: Callable[[float], None] = time.sleep

    # -- public -----------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Optional[Mapping[str, Any]] = None,
        body: Any = _NO_BODY,
        headers: Optional[Mapping[str, str]] = None,
        retry: str = SAFE,
        timeout: Optional[float] = None,
    ) -> Tuple[Any, Response]:
        """Send a request, retrying when safe; return ``(decoded JSON or None, response)``."""
        url = self.base_url + path
        if params:
            query = {k: _query_value(v) for k, v in params.items() if v is not None}
            if query:
                url += "?" + urllib.parse.urlencode(query)
        data: Optional[bytes] = None
        all_headers: Dict[str, str] = {
            "Accept": "application/json",
            "User-Agent": self.user_agent,
        }
        all_headers.update(self.default_headers)
        if self.api_key:
            all_headers["X-API-KEY"] = self.api_key
        if body is not _NO_BODY:
            # Encoded once: every retry sends the very same bytes.
            data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            all_headers["Content-Type"] = "application/json; charset=utf-8"
        if headers:
            all_headers.update(headers)
        effective_timeout = self.timeout if timeout is None else timeout

        attempt = 0
        while True:
            try:
                response = self._send(method, url, data, all_headers, effective_timeout)
            except APIConnectionError:
                if retry == SAFE and attempt < self.max_retries:
                    self.sleep(self._delay(attempt, None))
                    attempt += 1
                    continue
                raise
            if 200 <= response.status < 300:
                return _decode(response), response
            error = error_from_response(response.status, response.headers, response.body)
            if attempt < self.max_retries and _should_retry(error, retry):
                if error.retry_after is not None and error.retry_after > _MAX_RETRY_AFTER:
                    raise error
                self.sleep(self._delay(attempt, error.retry_after))
                attempt += 1
                continue
            raise error

    # -- internals --------------------------------------------------------------------------

    def _delay(self, attempt: int, retry_after: Optional[float]) -> float:
        if retry_after is not None:
            return retry_after
        base = min(self.max_retry_delay, self.initial_retry_delay * (2 ** attempt))
        return base * (0.75 + random.random() * 0.25)

    def _send(self, method: str, url: str, data: Optional[bytes], headers: Mapping[str, str], timeout: float) -> Response:
        request = urllib.request.Request(url, data=data, method=method, headers=dict(headers))
        try:
            with self._opener.open(request, timeout=timeout) as raw:
                return Response(raw.status, raw.headers, raw.read())
        except urllib.error.HTTPError as exc:
            try:
                payload = exc.read()
            except (OSError, http.client.HTTPException) as read_exc:
                raise _connection_error(read_exc) from read_exc
            finally:
                exc.close()
            return Response(exc.code, exc.headers, payload)
        except urllib.error.URLError as exc:
            raise _connection_error(exc.reason if isinstance(exc.reason, BaseException) else exc) from exc
        except (OSError, http.client.HTTPException, ValueError) as exc:
            if isinstance(exc, ValueError) and not isinstance(exc, UnicodeError):
                # e.g. an invalid URL: a programming error, not a network one.
                raise QuiverError(f"Invalid request: {exc}") from exc
            raise _connection_error(exc) from exc


def _connection_error(exc: BaseException) -> APIConnectionError:
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return APITimeoutError(cause=exc)
    return APIConnectionError(f"Connection error: {exc}", cause=exc)


def _should_retry(error: APIStatusError, mode: str) -> bool:
    status = error.status or 0
    code = error.code
    if status == 429 or (status == 503 and code in (None, "unavailable")):
        return True
    if mode != SAFE:
        return False
    if code == "request_in_progress":
        return True
    if code in ("tool_outcome_unknown", "upstream_auth_failed"):
        return False
    return status >= 500


def _decode(response: Response) -> Any:
    if response.status == 204 or not response.body:
        return None
    try:
        return json.loads(response.body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise QuiverError(
            f"The server answered {response.status} with a body that is not JSON.",
            status=response.status,
            headers=response.headers,
        ) from exc


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
