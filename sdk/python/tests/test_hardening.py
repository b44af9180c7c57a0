"""SDK behaviour against odd answers and arguments: redirects, bodies of the wrong shape, endless pages,
Retry-After, what JSON cannot carry, constructor checks. A scripted fake server, no Go toolchain.
"""

from __future__ import annotations

import os
import types
import unittest
from unittest import mock

import support  # noqa: F401  (sets sys.path and NO_PROXY)
from support import ScriptedServer
from unit_base import FakeServerTest as Base

import quiver
from quiver import AgentClient


class TestRedirects(Base):
    """A 3xx is never followed: it is an APIStatusError, not retried, and the key stays with base_url."""

    def test_redirect_is_an_error_and_the_key_never_reaches_another_origin(self) -> None:
        other = ScriptedServer()
        self.addCleanup(other.close)
        other.default = (200, {"tools": [], "next_cursor": None}, {})
        sends = [("POST create", lambda: self.client.tools.create(mcp_tool="tavily")),
                 ("GET list", lambda: self.client.tools.list()),
                 ("call with key", lambda: self.client.tools.call(1, action="a", idempotency_key="k"))]
        for status in (301, 302, 303, 307, 308):
            for name, send in sends:
                with self.subTest(status=status, request=name):
                    before = len(self.fake.requests)
                    self.fake.push(status, b"moved", {"Location": other.url + "/api/v1/agents/custom-tools/"})
                    with self.assertRaises(quiver.APIStatusError) as ctx:
                        send()
                    self.assertEqual(ctx.exception.status, status)
                    self.assertIn(other.url, ctx.exception.message)
                    self.assertEqual(len(self.fake.requests), before + 1)  # not retried
        self.assertEqual(self.delays, [])
        self.assertEqual(other.requests, [])  # neither the request nor the X-API-KEY went there


class TestResponseShape(Base):
    """A 2xx body of the wrong shape is a QuiverError (like a 2xx that is not JSON), never a raw TypeError."""

    def test_wrong_shape_is_a_quiver_error(self) -> None:
        get = lambda: self.client.tools.get(1)  # noqa: E731
        call = lambda: self.client.tools.call(1, action="a")  # noqa: E731
        tools = lambda: self.client.tools.list()  # noqa: E731
        page = lambda: self.client.agents.list_page()  # noqa: E731
        actions = lambda: self.client.tools.actions(1)  # noqa: E731
        cases = [([1, 2], get), ("hello", get), (5, get), (None, get), (True, call), ([1, 2], call),
                 ([1, 2], tools), ("hello", tools), ({"tools": {"a": 1}}, tools), ({"tools": "abc"}, tools),
                 ({"tools": [1, None]}, tools), ({"agents": [{"id": 1}, "x"]}, page),
                 ({"actions": 5}, actions), ({"actions": ["x"]}, actions), (7, actions),
                 ({"next_cursor": None}, tools), ({"tools": None, "next_cursor": None}, tools),
                 ({"agents": None}, page), ({}, actions), ({"actions": None}, actions)]
        for body, send in cases:
            with self.subTest(body=body):
                self.fake.push(200, body)
                with self.assertRaises(quiver.QuiverError) as ctx:
                    send()
                self.assertIs(type(ctx.exception), quiver.QuiverError)
                self.assertEqual(ctx.exception.status, 200)
                self.assertIn("not the expected shape", ctx.exception.message)
        self.fake.push(200, b"not json")  # the same class as a body that is not JSON at all
        with self.assertRaises(quiver.QuiverError) as ctx:
            get()
        self.assertIs(type(ctx.exception), quiver.QuiverError)
        self.assertIsNone(ctx.exception.code)

    def test_a_2xx_that_is_not_json_shows_what_came(self) -> None:
        # A base_url naming a web app (which answers every path with its index.html) gets a 200 that is not
        # JSON; the error said only that, while a non-2xx that is not JSON shows its first 200 characters.
        page = b"<!doctype html><html><head><title>Acme Console</title></head>" + b"x" * 500
        self.fake.push(200, page)
        with self.assertRaises(quiver.QuiverError) as ctx:
            self.client.tools.list()
        self.assertIs(type(ctx.exception), quiver.QuiverError)
        self.assertIn("Acme Console", ctx.exception.message)
        self.assertIn("base_url", ctx.exception.message)
        self.assertNotIn("x" * 300, ctx.exception.message)

    def test_right_shapes_still_read(self) -> None:
        self.fake.push(200, {"actions": [{"name": "search", "retryable": True}]})
        self.assertEqual(self.client.tools.actions(1)[0].name, "search")
        self.fake.push(200, {"tools": [], "next_cursor": None})
        self.assertEqual(self.client.tools.list(), [])


class TestPaginationGuards(Base):
    def test_non_string_cursor_is_an_error(self) -> None:
        for cursor in ([1], {"a": 1}, 5, True):
            for send in (self.client.tools.list, self.client.agents.list, self.client.tools.list_page):
                with self.subTest(cursor=cursor, send=send.__name__):
                    self.fake.push(200, {"tools": [], "agents": [], "next_cursor": cursor})
                    with self.assertRaises(quiver.QuiverError) as ctx:
                        send()
                    self.assertIs(type(ctx.exception), quiver.QuiverError)
                    self.assertIn("next_cursor", ctx.exception.message)

    def test_page_cap(self) -> None:
        for i in range(3):
            self.fake.push(200, {"tools": [{"id": i}], "next_cursor": f"c{i}"})
        with mock.patch("quiver._client.MAX_PAGES", 3):
            with self.assertRaises(quiver.QuiverError) as ctx:
                self.client.tools.list()
        self.assertIn("3 pages", ctx.exception.message)
        self.assertEqual(len(self.fake.requests), 3)
        self.assertEqual(quiver._client.MAX_PAGES, 10_000)

    def test_repeated_cursor_is_an_error(self) -> None:
        self.fake.push(200, {"agents": [{"id": 1}], "next_cursor": "same"})
        self.fake.push(200, {"agents": [{"id": 2}], "next_cursor": "same"})
        with self.assertRaises(quiver.QuiverError):
            self.client.agents.list()
        self.assertEqual(len(self.fake.requests), 2)


class TestRetryAfterParsing(Base):
    def test_only_delay_seconds_or_imf_fixdate(self) -> None:
        client = self.make_client(max_retries=0)
        cases = [("7", 7.0), (" 7 ", 7.0), ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),
                 ("Mon, 01 Jan 2024 00:00:00 +999999999999999999", None), ("Mon, 01 Jan 2024 00:00:00 +0000", None),
                 ("Mon, 31 Feb 2024 00:00:00 GMT", None), ("Monday, 01-Jan-24 00:00:00 GMT", None),
                 ("1.5", None), ("-1", None), ("1e3", None), ("soon", None), ("", None),
                 ("9" * 400, float("inf"))]
        for value, expected in cases:
            with self.subTest(value=value[:60]):
                self.fake.push(429, {"error": "rate_limited", "message": "slow"}, {"Retry-After": value})
                with self.assertRaises(quiver.RateLimitError) as ctx:
                    client.tools.list()
                self.assertEqual(ctx.exception.retry_after, expected)

    def test_huge_retry_after_gives_up_without_raising_overflow(self) -> None:
        self.fake.push(429, {"error": "rate_limited", "message": "slow"}, {"Retry-After": "9" * 400})
        with self.assertRaises(quiver.RateLimitError):
            self.client.tools.list()
        self.assertEqual(len(self.fake.requests), 1)
        self.assertEqual(self.delays, [])


class TestRequestIdFallback(Base):
    def test_body_request_id_when_header_missing(self) -> None:
        client = self.make_client(max_retries=0)
        self.fake.push(500, {"error": "internal", "message": "bug", "request_id": "r-body"})
        with self.assertRaises(quiver.InternalServerError) as ctx:
            client.tools.get(1)
        self.assertEqual(ctx.exception.request_id, "r-body")
        self.fake.push(500, {"error": "internal", "message": "bug", "request_id": "r-body"}, {"X-Request-Id": "r-hdr"})
        with self.assertRaises(quiver.InternalServerError) as ctx:
            client.tools.get(1)
        self.assertEqual(ctx.exception.request_id, "r-hdr")
        self.fake.push(500, {"error": "internal", "message": "bug", "request_id": 5})
        with self.assertRaises(quiver.InternalServerError) as ctx:
            client.tools.get(1)
        self.assertIsNone(ctx.exception.request_id)


class TestClientArguments(Base):
    """Invalid bodies, URLs and timeouts are InvalidRequestError (a ValueError), raised before anything is sent."""

    def test_body_json_cannot_carry(self) -> None:
        import datetime

        cycle: dict = {}
        cycle["self"] = cycle
        for value in (float("nan"), float("inf"), -float("inf"), datetime.datetime(2024, 1, 1), {1, 2}, b"bytes",
                      cycle, {(1, 2): "tuple key"}):
            with self.subTest(value=type(value).__name__):
                self.assert_refused(lambda: self.client.tools.call(1, action="a", arguments={"x": value},
                                                                   idempotency_key="k"), "JSON")
        self.assert_refused(lambda: self.client.agents.create(name="a", goal=float("nan")), "JSON")

    def test_invalid_base_url_refused_at_construction(self) -> None:
        for url in ("not a url", "http://[::1", "http://127.0.0.1:99999", "", "http://exa mple.com", "ftp://h",
                    "http://", "http://:80", "http://h:0", "http://h:abc", "http://h/?q=1", "http://h/#f",
                    "http://h\n", "localhost:8080", "http://127.0.0.1:8080/?", "http://127.0.0.1:8080#",
                    "http://h/prefix?", "http://alice@h"):
            with self.subTest(url=url):
                with self.assertRaises(quiver.InvalidRequestError) as ctx:
                    AgentClient(api_key="x", base_url=url)
                self.assertIsInstance(ctx.exception, ValueError)
        with self.assertRaises(quiver.InvalidRequestError):
            AgentClient(api_key="x", base_url=b"http://h")  # type: ignore[arg-type]
        for url in ("http://127.0.0.1:8080/", "https://api.example.com/prefix/", "http://[::1]:8080", "HTTP://h"):
            with self.subTest(url=url):
                self.assertEqual(AgentClient(api_key="x", base_url=url).base_url, url.rstrip("/"))

    def test_base_url_with_credentials_refused_without_showing_them(self) -> None:
        for url in ("http://alice:s3cret@127.0.0.1:8080", "https://:s3cret@h/", "http://alice:s3cret@127.0.0.1:99999",
                    "http://alice:s3cret@h x", "ftp://alice:s3cret@h", "http://alice:s3cret@h/?q"):
            with self.subTest(url=url):
                with self.assertRaises(quiver.InvalidRequestError) as ctx:
                    AgentClient(api_key="x", base_url=url)
                self.assertNotIn("s3cret", str(ctx.exception))
                self.assertNotIn("s3cret", repr(ctx.exception))
        with self.assertRaises(quiver.InvalidRequestError) as ctx:
            AgentClient(api_key="x", base_url="http://alice:s3cret@h")
        self.assertIn("credentials", str(ctx.exception))

    def test_empty_base_url_env_means_default(self) -> None:
        with mock.patch.dict(os.environ, {"QUIVER_BASE_URL": ""}):
            self.assertEqual(AgentClient(api_key="x").base_url, "http://localhost:8080")

    def test_host_that_cannot_be_encoded_is_not_retried(self) -> None:
        client = AgentClient(api_key="x", base_url="http://" + "a" * 64 + ".invalid", max_retries=2)
        client._transport.sleep = self.delays.append
        self.assert_refused(client.tools.list)

    def test_timeout_must_be_positive(self) -> None:
        for bad in (0, 0.0, -1, float("nan"), float("inf"), "5", True):
            with self.subTest(timeout=bad):
                with self.assertRaises(quiver.InvalidRequestError):
                    AgentClient(api_key="x", base_url=self.fake.url, timeout=bad)
                self.assert_refused(lambda: self.client.tools.call(1, action="a", idempotency_key="k", timeout=bad),
                                    "timeout")
        for bad in (-1, 1.5, True):
            with self.subTest(max_retries=bad):
                with self.assertRaises(quiver.InvalidRequestError):
                    AgentClient(api_key="x", base_url=self.fake.url, max_retries=bad)
        self.assertIsNone(AgentClient(api_key="x", base_url=self.fake.url, timeout=None).timeout)

    def test_arguments_and_user_response_must_be_mappings(self) -> None:
        for bad in ([("a", 1)], [], "ab", 5, ("x",)):
            with self.subTest(value=bad):
                with self.assertRaises(TypeError) as ctx:
                    self.client.tools.call(1, action="a", arguments=bad, idempotency_key="k")
                self.assertIn("arguments must be a mapping", str(ctx.exception))
                with self.assertRaises(TypeError) as ctx:
                    self.client.tools.provide_config(1, user_response=bad)
                self.assertIn("user_response must be a mapping", str(ctx.exception))
        with self.assertRaises(TypeError):
            self.client.tools.provide_config(1, user_response=None)  # type: ignore[arg-type]
        self.assertEqual(self.fake.requests, [])
        self.fake.push(200, {"call_id": "c", "tool": 1, "action": "a", "is_error": False, "result": {}})
        self.client.tools.call(1, action="a", arguments=None)
        self.assertEqual(self.body()["arguments"], {})
        self.fake.push(200, {"id": 1})
        self.client.tools.provide_config(1, user_response=types.MappingProxyType({"k": "v"}))  # any Mapping
        self.assertEqual(self.body()["user_response"], {"k": "v"})

    def test_huge_timeout_works(self) -> None:
        client = AgentClient(api_key="x", base_url=self.fake.url, timeout=1e12)
        self.fake.push(200, {"id": 1})
        self.assertEqual(client.tools.get(1).id, 1)


class TestProxies(Base):
    """As the README says: HTTP_PROXY is used as urllib uses it, loopback included, except for NO_PROXY's hosts."""

    def test_http_proxy_is_used_unless_no_proxy_names_the_host(self) -> None:
        origin = ScriptedServer()
        self.addCleanup(origin.close)
        proxy = self.fake.url
        with mock.patch.dict(os.environ, {"http_proxy": proxy, "HTTP_PROXY": proxy, "no_proxy": "", "NO_PROXY": ""}):
            client = AgentClient(api_key="k-proxy", base_url=origin.url, max_retries=0)
            self.fake.push(200, {"id": 1})
            self.assertEqual(client.tools.get(1).id, 1)
            self.assertEqual(origin.requests, [])
            self.assertEqual(self.fake.requests[0]["path"], origin.url + "/api/v1/agents/custom-tools/1/")
            self.assertEqual(self.fake.requests[0]["headers"]["X-API-KEY"], "k-proxy")  # the proxy sees the key
            os.environ["no_proxy"] = os.environ["NO_PROXY"] = "127.0.0.1"
            origin.push(200, {"id": 2})
            self.assertEqual(client.tools.get(2).id, 2)
        self.assertEqual(len(self.fake.requests), 1)
        self.assertEqual(len(origin.requests), 1)


if __name__ == "__main__":
    unittest.main()


class TestNotHTTP(unittest.TestCase):
    def test_a_server_that_does_not_speak_http_is_quoted_escaped(self) -> None:
        import socket
        import threading

        ln = socket.socket()
        ln.bind(("127.0.0.1", 0))
        ln.listen(1)
        self.addCleanup(ln.close)

        def answer() -> None:
            conn, _ = ln.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")

        threading.Thread(target=answer, daemon=True).start()
        client = AgentClient(api_key="k", base_url=f"http://127.0.0.1:{ln.getsockname()[1]}", max_retries=0)
        with self.assertRaises(quiver.APIConnectionError) as ctx:
            client.tools.list()
        msg = str(ctx.exception)
        self.assertIn("did not answer in HTTP", msg)
        self.assertIn(r"'SSH-2.0-OpenSSH_9.6\r\n'", msg)
        self.assertNotIn("\r", msg)

    def test_a_connection_closed_without_an_answer_says_so(self) -> None:
        # http.client's RemoteDisconnected is a BadStatusLine too; it is no sign of a server that does not
        # speak HTTP, only of one (or a proxy) that closed the connection before answering.
        fake = support.ScriptedServer()
        self.addCleanup(fake.close)
        fake.push(200, "DROP")
        client = AgentClient(api_key="k", base_url=fake.url, max_retries=0)
        with self.assertRaises(quiver.APIConnectionError) as ctx:
            client.tools.list()
        self.assertNotIsInstance(ctx.exception, quiver.APITimeoutError)
        msg = str(ctx.exception)
        self.assertNotIn("did not answer in HTTP", msg)
        self.assertIn("closed the connection without an answer", msg)
