"""The test server is this suite's own, even when another server took its port first.

``QuiverServer`` picks a free port, then starts ``quiver serve`` on it; another process may bind it in
between. It waited for ``/healthz`` to answer 200, which another quiver serve (another test's, on this
shared machine) answers too: the suite then ran against a server that knows none of its keys.
"""

from __future__ import annotations

import unittest
from http.server import BaseHTTPRequestHandler
from unittest import mock

import support

import quiver


class _OtherQuiver(BaseHTTPRequestHandler):
    """Answers /healthz as any quiver serve does, and 401 to every API request (it has other keys)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        ok = self.path == "/healthz"
        body = b'{"status":"ok"}' if ok else b'{"error":"unauthorized","message":"Unknown API key."}'
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class TestServerPort(unittest.TestCase):
    def test_a_port_taken_by_another_server_is_not_mistaken_for_ours(self) -> None:
        other = support._LocalServer(_OtherQuiver)
        self.addCleanup(other.close)
        ports = iter([other.port])
        real_free_port = support.free_port
        with mock.patch.object(support, "free_port", lambda: next(ports, None) or real_free_port()):
            server = support.QuiverServer(support.build_binary(), "http://127.0.0.1:9")
        self.addCleanup(server.stop)
        self.assertNotEqual(server.port, other.port)
        client = quiver.AgentClient(api_key=server.api_key, base_url=server.base_url, max_retries=0)
        self.assertEqual(client.agents.list(), [])


if __name__ == "__main__":
    unittest.main()
