"""Test fixtures: a real `quiver serve`, a fake Tavily, a target HTTP server and a connection-dropping proxy.

The server is built once per test process (``go build ./cmd/quiver`` in the repo root, or the binary
named by ``QUIVER_BIN``) and shared by every test module; it is killed at exit.
"""

from __future__ import annotations

import atexit
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
SDK_ROOT = HERE.parent
REPO_ROOT = HERE.parents[2]

if str(SDK_ROOT) not in sys.path:
    sys.path.insert(0, str(SDK_ROOT))

# Loopback traffic must never go through a proxy from the environment.
for _var in ("NO_PROXY", "no_proxy"):
    os.environ[_var] = ",".join(filter(None, [os.environ.get(_var, ""), "127.0.0.1", "localhost"]))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:  # keep test output clean
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _reply(self, status: int, raw: bytes, content_type: str, headers: Optional[Dict[str, str]] = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)

    def _json(self, status: int, payload: Any, headers: Optional[Dict[str, str]] = None) -> None:
        self._reply(status, json.dumps(payload).encode(), "application/json", headers)

    def _drop(self) -> None:
        """Close the client connection without an answer."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class _LocalServer:
    """A threaded HTTP server on a free loopback port; its handler reads this object as ``server.state``.

    Subclasses set their own state first, then call ``super().__init__(handler_cls)``. With ``tls`` (a
    server-side context) it speaks HTTPS.
    """

    def __init__(self, handler_cls: type, port: int = 0, tls: Optional[ssl.SSLContext] = None) -> None:
        self.lock = threading.Lock()
        self.server = _QuietServer(("127.0.0.1", port), handler_cls)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.server.state = self  # type: ignore[attr-defined]
        self.port = self.server.server_address[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- fake Tavily ------------------------------------------------------------------------------


class FakeTavily(_LocalServer):
    """Implements Tavily's `POST /search` and `POST /extract`; counts requests."""

    def __init__(self) -> None:
        self.requests: List[Dict[str, Any]] = []
        super().__init__(_TavilyHandler)

    @property
    def count(self) -> int:
        with self.lock:
            return len(self.requests)


class _TavilyHandler(_Handler):
    def do_POST(self) -> None:
        state: FakeTavily = self.server.state  # type: ignore[attr-defined]
        raw = self._body()
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        auth = self.headers.get("Authorization", "")
        # Tavily also accepts the key in the body as api_key.
        key = auth[len("Bearer "):] if auth.startswith("Bearer ") else str(body.get("api_key", ""))
        with state.lock:
            state.requests.append({"path": self.path, "body": body, "auth": auth})
        if not key.startswith("tvly-"):
            self._json(401, {"detail": {"error": "Unauthorized: missing or invalid API key."}})
            return
        if self.path.rstrip("/") == "/search":
            q = body.get("query", "")
            self._json(200, {
                "query": q,
                "answer": None,
                "results": [
                    {"title": f"Result about {q}", "url": "https://example.com/1", "content": "First.", "score": 0.9},
                    {"title": "Another", "url": "https://example.com/2", "content": "Second.", "score": 0.5},
                ],
                "response_time": 0.01,
            })
        elif self.path.rstrip("/") == "/extract":
            self._json(200, {"results": [{"url": u, "raw_content": "text"} for u in body.get("urls", [])],
                             "failed_results": []})
        else:
            self._json(404, {"detail": "not found"})


# -- target server of the http-request tool ---------------------------------------------------


class TargetServer(_LocalServer):
    """Records every request; `/slow...` paths answer after `slow_seconds`."""

    def __init__(self, slow_seconds: float = 2.0) -> None:
        self.requests: List[Dict[str, Any]] = []
        self.slow_seconds = slow_seconds
        super().__init__(_TargetHandler)

    def count(self, path: Optional[str] = None, method: Optional[str] = None) -> int:
        with self.lock:
            return sum(1 for r in self.requests
                       if (path is None or r["path"].split("?")[0] == path) and (method is None or r["method"] == method))


class _TargetHandler(_Handler):
    def _handle(self) -> None:
        state: TargetServer = self.server.state  # type: ignore[attr-defined]
        raw = self._body()
        with state.lock:
            state.requests.append({"method": self.command, "path": self.path, "body": raw,
                                   "headers": self.headers})
            n = sum(1 for r in state.requests if r["path"] == self.path)
        if self.path.startswith("/slow"):
            time.sleep(state.slow_seconds)
        if self.path.startswith("/fail"):
            self._json(500, {"oops": True})
            return
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode("utf-8", "replace")
        self._json(200, {"ok": True, "method": self.command, "path": self.path, "n": n, "echo": parsed})

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


# -- a proxy that can drop connections --------------------------------------------------------


class DropProxy(_LocalServer):
    """Forwards requests to `upstream` (HTTP; HTTPS to its clients with `tls`); can drop chosen requests'
    client connections.

    `drop(method, path_contains, when)`: the next matching request is forwarded to the upstream and
    then the client connection is closed without an answer — `when="after_response"` waits for the
    upstream's full answer first (the call completed), `when="before_response"` drops right after the
    request was sent (the upstream connection is closed too, like a real network cut).
    """

    def __init__(self, upstream: str, tls: Optional[ssl.SSLContext] = None) -> None:
        self.upstream = upstream.replace("http://", "")
        self.rules: List[Dict[str, Any]] = []
        self.seen: List[Tuple[str, str]] = []
        self.dropped = 0
        super().__init__(_ProxyHandler, tls=tls)

    def drop(self, method: str, path_contains: str, when: str = "after_response", times: int = 1) -> None:
        with self.lock:
            self.rules.append({"method": method, "path": path_contains, "when": when, "times": times})

    def count(self, method: Optional[str] = None, path_contains: str = "") -> int:
        with self.lock:
            return sum(1 for m, p in self.seen if (method is None or m == method) and path_contains in p)

    def _take_rule(self, method: str, path: str) -> Optional[str]:
        with self.lock:
            self.seen.append((method, path))
            for rule in self.rules:
                if rule["times"] > 0 and rule["method"] == method and rule["path"] in path:
                    rule["times"] -= 1
                    self.dropped += 1
                    return rule["when"]
        return None


class _ProxyHandler(_Handler):
    def _forward(self) -> None:
        state: DropProxy = self.server.state  # type: ignore[attr-defined]
        raw = self._body()
        when = state._take_rule(self.command, self.path)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection", "content-length")}
        conn = http.client.HTTPConnection(state.upstream, timeout=60)
        conn.request(self.command, self.path, body=raw if raw else None, headers=headers)
        if when == "before_response":
            time.sleep(0.2)  # let the request reach the server
            conn.close()
            self._drop()
            return
        resp = conn.getresponse()
        payload = resp.read()
        conn.close()
        if when == "after_response":
            self._drop()
            return
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length", "date", "server"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward


# -- the real server --------------------------------------------------------------------------


class QuiverServer:
    """A `quiver serve` on a free port with its own data dir and two accounts' keys."""

    def __init__(self, binary: str, tavily_url: str) -> None:
        self.tmp = tempfile.mkdtemp(prefix="quiver-sdk-py-")
        self.env = dict(os.environ)
        self.env.update({
            "QUIVER_DATA_DIR": self.tmp,
            "QUIVER_ADDR": "127.0.0.1:0",  # set to the chosen port before `serve`
            "QUIVER_EGRESS_ALLOW_PRIVATE": "true",
            "QUIVER_TAVILY_BASE_URL": tavily_url,
        })
        self.env.pop("DATABASE_URL", None)
        self.env.pop("REDIS_URL", None)
        self.binary = binary
        self.api_key = self._create_key("sdk-test")
        self.other_api_key = self._create_key("sdk-other")
        self.log_path = os.path.join(self.tmp, "server.log")
        # A port from free_port() can be taken by someone else before the server binds it: retry. It is
        # chosen just before the server starts, to keep that window short.
        for attempt in range(1, 4):
            self.port = free_port()
            self.base_url = f"http://127.0.0.1:{self.port}"
            self.env["QUIVER_ADDR"] = f"127.0.0.1:{self.port}"
            self._log = open(self.log_path, "wb")
            self.proc = subprocess.Popen([binary, "serve"], env=self.env, stdout=self._log, stderr=subprocess.STDOUT)
            try:
                self._wait_healthy()
                return
            except RuntimeError:
                self._stop_process()
                if attempt == 3:
                    shutil.rmtree(self.tmp, ignore_errors=True)
                    raise

    def _create_key(self, account: str) -> str:
        out = subprocess.run([self.binary, "keys", "create", "--account", account], env=self.env,
                             capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise RuntimeError(f"quiver keys create failed ({out.returncode}): {out.stderr}{out.stdout}")
        lines = [line.strip() for line in out.stdout.splitlines() if line.strip()]
        if not lines:
            raise RuntimeError(f"quiver keys create printed no key: {out.stderr}")
        return lines[-1]

    def _wait_healthy(self) -> None:
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"quiver serve exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                # Our key proves it is this server: another one (a quiver serve of another test) may have
                # taken the port first, and this one will exit (then retried on another port).
                req = urllib.request.Request(self.base_url + "/api/v1/agents/", headers={"X-API-KEY": self.api_key})
                with urllib.request.urlopen(req, timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"quiver serve not healthy within 30s:\n{self.log_tail()}")

    def log_tail(self, n: int = 4000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def _stop_process(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()

    def stop(self) -> None:
        self._stop_process()
        shutil.rmtree(self.tmp, ignore_errors=True)


def build_binary() -> str:
    given = os.environ.get("QUIVER_BIN")
    if given:
        return given
    out_dir = tempfile.mkdtemp(prefix="quiver-bin-")
    binary = os.path.join(out_dir, "quiver")
    result = subprocess.run(["go", "build", "-o", binary, "./cmd/quiver"], cwd=str(REPO_ROOT),
                            capture_output=True, text=True, timeout=1200)
    if result.returncode != 0:
        raise RuntimeError(f"go build ./cmd/quiver failed in {REPO_ROOT}:\n{result.stderr[-4000:]}")
    atexit.register(shutil.rmtree, out_dir, True)
    return binary


class Env:
    """Everything an integration test needs."""

    def __init__(self) -> None:
        self.tavily = FakeTavily()
        self.target = TargetServer()
        self.server = QuiverServer(build_binary(), self.tavily.url)
        self.base_url = self.server.base_url
        self.api_key = self.server.api_key
        self.other_api_key = self.server.other_api_key

    def proxy(self) -> DropProxy:
        return DropProxy(self.base_url)

    def close(self) -> None:
        self.server.stop()
        self.tavily.close()
        self.target.close()


_env: Optional[Env] = None
_env_error: Optional[BaseException] = None
_env_lock = threading.Lock()


def env() -> Env:
    """The shared environment, started on first use (a failure is remembered and re-raised)."""
    global _env, _env_error
    with _env_lock:
        if _env_error is not None:
            raise RuntimeError(f"test server unavailable: {_env_error}")
        if _env is None:
            try:
                _env = Env()
            except BaseException as exc:  # noqa: BLE001
                _env_error = exc
                raise
            atexit.register(_env.close)
        return _env


# -- a scripted fake Quiver for retry/error unit tests ---------------------------------------


class ScriptedServer(_LocalServer):
    """Answers requests from a queue of (status, json body | bytes | "DROP", headers); records requests.

    ``port`` 0 (the default) takes a free one.
    """

    def __init__(self, port: int = 0) -> None:
        self.script: List[Tuple[int, Any, Dict[str, str]]] = []
        self.requests: List[Dict[str, Any]] = []
        self.default: Tuple[int, Any, Dict[str, str]] = (200, {}, {})
        super().__init__(_ScriptedHandler, port)

    def push(self, status: int, body: Any = None, headers: Optional[Dict[str, str]] = None) -> None:
        with self.lock:
            self.script.append((status, body, headers or {}))


class _ScriptedHandler(_Handler):
    def _handle(self) -> None:
        state: ScriptedServer = self.server.state  # type: ignore[attr-defined]
        raw = self._body()
        with state.lock:
            state.requests.append({"method": self.command, "path": self.path, "headers": self.headers,
                                   "body": raw})
            status, body, headers = state.script.pop(0) if state.script else state.default
        if body == "DROP":
            self._drop()
            return
        if status == 204:
            self.send_response(204)
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            return
        if isinstance(body, bytes):
            self._reply(status, body, "text/html", headers)
            return
        self._json(status, body, headers)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class TrickleServer:
    """Answers every request with ``response`` (raw HTTP bytes), ``chunk`` bytes every ``interval`` seconds.

    ``head`` bytes are sent at once first, so the status line and headers, the body, or both can trickle.
    """

    def __init__(self, response: bytes, head: int = 0, chunk: int = 1, interval: float = 0.3) -> None:
        self.response, self.head, self.chunk, self.interval = response, head, chunk, interval
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.closed = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            try:
                data = b""
                while b"\r\n\r\n" not in data:
                    more = conn.recv(65536)
                    if not more:
                        return
                    data += more
                conn.sendall(self.response[:self.head])
                for i in range(self.head, len(self.response), self.chunk):
                    if self.closed.wait(self.interval):
                        return
                    conn.sendall(self.response[i:i + self.chunk])
            except OSError:
                pass

    def close(self) -> None:
        self.closed.set()
        self.sock.close()


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()
