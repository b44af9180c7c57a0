"""A deadline for the whole attempt: connecting, sending, and reading the status line, headers and body.

urllib's timeout bounds each socket operation, so a server sending one byte at a time could hold a request
open for ever. These handlers make the opener's connections give every operation (connect, each send, each
read of the status line, headers and body) only the time left before the attempt's deadline, and raise
socket.timeout once none is left. (A DNS lookup itself is not interruptible.) The deadline is read from a
``threading.local`` whose ``deadline`` the transport sets (``time.monotonic()`` seconds, or ``None``).
"""

from __future__ import annotations

import http.client
import io
import socket
import threading
import time
import urllib.request
from typing import Any, Callable, Dict, Optional

_MAX_SOCKET_WAIT = 1e6  # seconds; a socket refuses a much longer timeout (OverflowError)


def _time_left(deadline: Optional[float]) -> Optional[float]:
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise socket.timeout("timed out")
    return min(left, _MAX_SOCKET_WAIT)


class _DeadlineReader(io.RawIOBase):
    """The socket's reading side, each read bounded by the time left before the deadline."""

    def __init__(self, sock: socket.socket, deadline: Optional[float]) -> None:
        super().__init__()
        self._sock = sock
        self._raw = sock.makefile("rb", buffering=0)  # counted by the socket: keeps it open until closed
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> Optional[int]:
        self._sock.settimeout(_time_left(self._deadline))
        return self._raw.readinto(buffer)

    def fileno(self) -> int:
        return self._raw.fileno()

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class _DeadlineSocket:
    """What http.client.HTTPResponse needs of a socket: ``makefile("rb")``."""

    def __init__(self, sock: socket.socket, deadline: Optional[float]) -> None:
        self._sock = sock
        self._deadline = deadline

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline))


class _DeadlineConnectionMixin:
    deadline: Optional[float] = None
    sock: Any
    timeout: Any

    def connect(self) -> None:
        self.timeout = _time_left(self.deadline)
        super().connect()  # type: ignore[misc]

    def send(self, data: Any) -> None:
        if self.sock is not None:
            self.sock.settimeout(_time_left(self.deadline))
        super().send(data)  # type: ignore[misc]

    def response_class(self, sock: Any, *args: Any, **kwargs: Any) -> http.client.HTTPResponse:
        return http.client.HTTPResponse(_DeadlineSocket(sock, self.deadline), *args, **kwargs)


class _DeadlineHTTPConnection(_DeadlineConnectionMixin, http.client.HTTPConnection):
    pass


def _connection_factory(cls: type, attempt: threading.local) -> Callable[..., Any]:
    deadline = getattr(attempt, "deadline", None)

    def make(*args: Any, **kwargs: Any) -> Any:
        conn = cls(*args, **kwargs)
        conn.deadline = deadline
        return conn

    return make


class DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, attempt: threading.local) -> None:
        super().__init__()
        self._attempt = attempt

    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_connection_factory(_DeadlineHTTPConnection, self._attempt), req)


DeadlineHTTPSHandler: Optional[type] = None

if hasattr(http.client, "HTTPSConnection"):  # Python built with ssl

    class _DeadlineHTTPSConnection(_DeadlineConnectionMixin, http.client.HTTPSConnection):
        pass

    class DeadlineHTTPSHandler(urllib.request.HTTPSHandler):  # type: ignore[no-redef]
        def __init__(self, attempt: threading.local) -> None:
            super().__init__()
            self._attempt = attempt

        def https_open(self, req: urllib.request.Request) -> Any:
            kwargs: Dict[str, Any] = {"context": self._context}  # type: ignore[attr-defined]
            if getattr(self, "_check_hostname", None) is not None:  # Python < 3.12
                kwargs["check_hostname"] = self._check_hostname  # type: ignore[attr-defined]
            return self.do_open(_connection_factory(_DeadlineHTTPSConnection, self._attempt), req, **kwargs)
