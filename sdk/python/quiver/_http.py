"""HTTP transport: urllib, JSON, typed errors, and retries that cannot duplicate work."""

from __future__ import annotations

import http.client
import json
import math
import random
import re
import socket
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from ._deadline import DeadlineHTTPHandler, DeadlineHTTPSHandler
from ._errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    InvalidIdempotencyKeyError,
    InvalidRequestError,
    QuiverError,
    body_snippet,
    error_from_response,
)
from ._version import __version__

# How a request may be retried.
#
# SAFE: repeating it cannot duplicate an effect (GET, DELETE, or a tool call carrying the caller's
#   idempotency key, which the server deduplicates). Retried on connection errors, timeouts, 5xx
#   (except the terminal tool_outcome_unknown and the deterministic upstream_auth_failed and
#   upstream_refused), 429 and 409 request_in_progress, with or without Quiver's error code.
# REFUSED_ONLY: repeating it could duplicate an effect (POST without a key, PATCH). Retried only when
#   it provably did nothing (QuiverError.did_nothing) for a reason that passes: a refused connection
#   (nothing was sent), Quiver's 429 rate_limited and 503 unavailable. An answer without Quiver's code
#   (a proxy's HTML 503 "upstream reset before headers", a gateway's 502/504 or 429) proves nothing
#   about what happened upstream, so it is never retried for these.
#
# A DELETE retried after an attempt that may have run unseen (one whose error's did_nothing is False: a
# cut connection, a timeout, a 5xx other than Quiver's own word that nothing was done) takes a later 404
# not_found as success: that attempt deleted it. An error raised after such an attempt says
# did_nothing False whatever its own answer says.
SAFE = "safe"
REFUSED_ONLY = "refused_only"

_NO_BODY = object()
# A server's Retry-After up to this many seconds is waited for before each retry; a longer one ends the
# retries at once (the error is raised with its retry_after). So a request can take longer than `timeout`.
_MAX_RETRY_AFTER = 60.0

# What an HTTP header can carry: a token as its name; Latin-1 text without NUL, CR or LF as its value.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


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


def check_timeout(timeout: Any) -> Optional[float]:
    """Return ``timeout`` as seconds: a number > 0 (``None``: no deadline); otherwise raise InvalidRequestError."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf:
        raise InvalidRequestError(f"timeout must be a number of seconds > 0, or None for no deadline; not {timeout!r}.")
    return float(timeout)


def check_base_url(url: Any) -> str:
    """Return ``url`` without trailing slashes if it is an http(s) URL with a host, a valid port, and no
    credentials, query or fragment.

    Otherwise raise InvalidRequestError: checked when the client is made, not on each request. The
    message never shows a URL with an ``@`` in it: it may carry a password.
    """
    if not isinstance(url, str):
        raise InvalidRequestError(f"base_url must be a str, not {type(url).__name__}.")
    problem = None
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        problem = "it has a space or a control character"
    else:
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port  # ValueError unless a number in 0-65535
        except ValueError as exc:
            problem = str(exc)
        else:
            if parts.scheme not in ("http", "https"):
                problem = "it must start with http:// or https://"
            elif not parts.hostname:
                problem = "it has no host"
            elif port == 0:
                problem = "port 0 cannot be connected to"
            elif parts.username or parts.password:
                problem = "it must not carry credentials (use api_key)"
            elif "?" in url or "#" in url:  # even an empty one ("http://h/?")
                problem = "it must not have a query or a fragment"
    if problem:
        shown = "" if "@" in url else f" {url!r}"
        raise InvalidRequestError(f"Invalid base_url{shown}: {problem}.")
    return url.rstrip("/")


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
        if api_key is not None and not isinstance(api_key, str):  # never shown: it may be a secret
            raise InvalidRequestError(f"api_key must be a str, not {type(api_key).__name__}.")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidRequestError(f"max_retries must be an int >= 0, not {max_retries!r}.")
        self.api_key = api_key
        self.base_url = check_base_url(base_url)
        self.timeout = check_timeout(timeout)
        self.max_retries = max_retries
        self.initial_retry_delay = initial_retry_delay
        self.max_retry_delay = max_retry_delay
        self.default_headers = dict(default_headers or {})
        for name, value in self.default_headers.items():
            # A default Idempotency-Key is checked as a call's is: HTTP would strip "abc " to another key.
            if isinstance(name, str) and name.lower() == "idempotency-key":
                validate_idempotency_key(value)
        self.user_agent = f"quiver-python/{__version__} (Python {sys.version_info[0]}.{sys.version_info[1]})"
        self._attempt = threading.local()  # the deadline of this thread's current attempt
        handlers: list = [_NoRedirectHandler(), DeadlineHTTPHandler(self._attempt)]
        if DeadlineHTTPSHandler is not None:
            handlers.append(DeadlineHTTPSHandler(self._attempt))
        self._opener = urllib.request.build_opener(*handlers)
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
                try:
                    url += "?" + urllib.parse.urlencode(query)
                except UnicodeEncodeError:  # a lone surrogate: no UTF-8, so no URL form
                    raise InvalidRequestError(
                        "The request cannot be sent: a query value has a lone surrogate, which is not Unicode text"
                        " and has no URL form. Nothing was sent."
                    ) from None
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
            data = _encode_body(body)
            all_headers["Content-Type"] = "application/json; charset=utf-8"
        if headers:
            all_headers.update(headers)
        _check_headers(all_headers)
        effective_timeout = self.timeout if timeout is None else check_timeout(timeout)

        attempt = 0
        maybe_done = False  # an earlier attempt may have been acted on (QuiverError.did_nothing was False)
        while True:
            try:
                response = self._send(method, url, data, all_headers, effective_timeout)
            except APIConnectionError as exc:
                # A refused connection sent nothing (did_nothing): any request may be repeated.
                if attempt < self.max_retries and (retry == SAFE or exc.did_nothing):
                    maybe_done = maybe_done or not exc.did_nothing
                    self.sleep(self._delay(attempt, None))
                    attempt += 1
                    continue
                exc._earlier_attempt_may_have_run = maybe_done
                raise
            if 200 <= response.status < 300:
                return _decode(response), response
            error = error_from_response(response.status, response.headers, response.body)
            if method == "DELETE" and maybe_done and error.status == 404 and error.code == "not_found":
                return None, response  # an earlier attempt deleted it: done
            if attempt < self.max_retries and _should_retry(error, retry):
                if error.retry_after is None or error.retry_after <= _MAX_RETRY_AFTER:
                    maybe_done = maybe_done or not error.did_nothing
                    self.sleep(self._delay(attempt, error.retry_after))
                    attempt += 1
                    continue
            error._earlier_attempt_may_have_run = maybe_done
            raise error

    # -- internals --------------------------------------------------------------------------

    def _delay(self, attempt: int, retry_after: Optional[float]) -> float:
        if retry_after is not None:
            return retry_after
        # 2 ** attempt as a float stops growing past the cap: an int past ~1,000 attempts is more than a
        # float can hold (OverflowError), and max_retries may be large ("retry for ever").
        base = min(self.max_retry_delay, self.initial_retry_delay * 2.0 ** min(attempt, 64))
        return base * (0.75 + random.random() * 0.25)

    def _send(
        self, method: str, url: str, data: Optional[bytes], headers: Mapping[str, str], timeout: Optional[float]
    ) -> Response:
        """One attempt. ``timeout`` is a deadline for all of it: connect, send, status, headers and body."""
        request = urllib.request.Request(url, data=data, method=method, headers=dict(headers))
        # Read by the connection the opener makes for this request (see quiver._deadline).
        self._attempt.deadline = None if timeout is None else time.monotonic() + timeout
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
            reason = exc.reason
            # A certificate that fails verification (ssl.SSLCertVerificationError) is an OSError and a
            # ValueError: the connection failed, not the request as given.
            if isinstance(reason, ValueError) and not isinstance(reason, OSError):
                raise InvalidRequestError(f"Invalid request: {reason}") from exc
            raise _connection_error(reason if isinstance(reason, BaseException) else exc) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise _connection_error(exc) from exc
        except ValueError as exc:
            # Raised before anything left (an invalid URL, a host name IDNA cannot encode, a header
            # http.client refuses): a local error, never a connection error, never retried.
            raise InvalidRequestError(f"Invalid request: {exc}") from exc
        finally:
            self._attempt.deadline = None


def _connection_error(exc: BaseException) -> APIConnectionError:
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return APITimeoutError(cause=exc)
    if isinstance(exc, http.client.RemoteDisconnected):  # a BadStatusLine too, but no sign of a non-HTTP server
        return APIConnectionError(
            "Connection error: the server (or a proxy before it) closed the connection without an answer", cause=exc
        )
    if isinstance(exc, http.client.BadStatusLine):
        # Something that is not an HTTP server (or not at this port): quote its first line, escaped and
        # cut, rather than as it came, line breaks and all.
        line = exc.line if isinstance(exc.line, str) else str(exc.line)
        shown = repr(line[:80] + ("…" if len(line) > 80 else ""))
        return APIConnectionError(
            f"Connection error: the server did not answer in HTTP (its first line: {shown})", cause=exc
        )
    return APIConnectionError(f"Connection error: {exc}", cause=exc)


def _should_retry(error: APIStatusError, mode: str) -> bool:
    status = error.status or 0
    code = error.code
    # Quiver's own word that it did nothing (QuiverError.did_nothing, the one rule of both SDKs), about a
    # state that passes (load, its database): any request may be repeated.
    if error.did_nothing and code in ("rate_limited", "unavailable"):
        return True
    if mode != SAFE:
        return False
    if code == "request_in_progress":
        return True
    if code in ("tool_outcome_unknown", "upstream_auth_failed", "upstream_refused"):
        return False
    return status == 429 or status >= 500


def _check_headers(headers: Mapping[str, Any]) -> None:
    """Refuse, before anything is sent, a header HTTP cannot carry (never naming its value: it may be a secret)."""
    for name, value in headers.items():
        if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
            raise InvalidRequestError(f"Invalid header name {name!r}: it must be an HTTP token. Nothing was sent.")
        if value is None:
            raise InvalidRequestError(f"The {name} header has no value (None). Nothing was sent.")
        text = value if isinstance(value, str) else str(value)
        for i, ch in enumerate(text):
            if ord(ch) > 0xFF or ch in "\0\r\n":
                what = "the API key" if name.lower() == "x-api-key" else "its value"
                raise InvalidRequestError(
                    f"The {name} header cannot be sent: {what} has the character U+{ord(ch):04X} at index {i}, "
                    "and HTTP header values can only be Latin-1 characters without NUL, CR or LF. Nothing was sent."
                )


def _encode_body(body: Any) -> bytes:
    try:
        # allow_nan=False: NaN and Infinity are not JSON, and the server would refuse them.
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:  # NaN, a datetime, a set, bytes, a cycle, ...
        raise InvalidRequestError(f"The request body cannot be sent as JSON: {exc}. Nothing was sent.") from exc
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start]
        raise InvalidRequestError(
            f"The request body cannot be sent: a string in it has U+{ord(bad):04X}, a lone surrogate, "
            "which is not Unicode text and has no UTF-8 encoding. Nothing was sent."
        ) from exc


class _NoRedirectHandler(urllib.request.HTTPRedirectHandler):
    """Never follow a redirect: the 3xx is raised as an APIStatusError and not retried.

    Following it would turn a POST into a GET (a create "succeeding" with nothing created) and send
    the X-API-KEY header to whatever origin the Location names.
    """

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _decode(response: Response) -> Any:
    if response.status == 204 or not response.body:
        return None
    try:
        return json.loads(response.body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        # Often a web page, from a base_url that names another server.
        snippet = body_snippet(response.body)
        raise QuiverError(
            f"The server answered {response.status} with a body that is not JSON (is base_url right?): {snippet!r}",
            status=response.status,
            headers=response.headers,
        ) from exc


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
