"""HTTPS: Quiver behind a TLS-terminating proxy, as in production. The SDK's own HTTPS connection class
(the per-attempt deadline) reaches the real server, and a certificate that fails verification is an
APIConnectionError, as in the JS SDK: the connection failed, not the request as given."""

from __future__ import annotations

import os
import ssl
import tempfile
import unittest
from typing import Any
from unittest import mock

import support

import quiver
from quiver import AgentClient

ENV: "support.Env"

# A self-signed certificate for IP 127.0.0.1, valid until 2126 (made for this test; the key guards nothing).
CERT = """-----BEGIN CERTIFICATE-----
MIIBnDCCAUKgAwIBAgIUFoDJLytXznjdyYQ+JFaWuO+Ko2wwCgYIKoZIzj0EAwIw
GjEYMBYGA1UEAwwPcXVpdmVyLXNkay10ZXN0MCAXDTI2MTIwMjEyMTgyNFoYDzIx
MjYxMTA4MTIxODI0WjAaMRgwFgYDVQQDDA9xdWl2ZXItc2RrLXRlc3QwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAASabZBSC3Cr4uC8gM059fSSLVpvk5biEUWkcOnT
oWFqyOxbbR82UTR7iJoKyHA+C5FNOOIAjQ3lUuQiHC96TJq9o2QwYjAdBgNVHQ4E
FgQU7s2wsSbC7/ljFgTfrhvBuu0ihnQwHwYDVR0jBBgwFoAU7s2wsSbC7/ljFgTf
rhvBuu0ihnQwDwYDVR0TAQH/BAUwAwEB/zAPBgNVHREECDAGhwR/AAABMAoGCCqG
SM49BAMCA0gAMEUCIQDB5Qzu4XIbpfiNaObXxQw3A6z/qTl4O/AuwiSKnbPycgIg
fY+BdGncTwreknsXJJgKTbS5rRl1y8GsrtY7NCmRtQE=
-----END CERTIFICATE-----
"""
KEY = """-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgl1RDVWGOiTjD763L
bhZ31J+67x/6kUNNcDMxDPUihfihRANCAASabZBSC3Cr4uC8gM059fSSLVpvk5bi
EUWkcOnToWFqyOxbbR82UTR7iJoKyHA+C5FNOOIAjQ3lUuQiHC96TJq9
-----END PRIVATE KEY-----
"""


def setUpModule() -> None:
    global ENV
    ENV = support.env()


class TestHTTPS(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.mkdtemp(prefix="quiver-tls-")
        self.cert_file = os.path.join(tmp, "cert.pem")
        key_file = os.path.join(tmp, "key.pem")
        with open(self.cert_file, "w") as f:
            f.write(CERT)
        with open(key_file, "w") as f:
            f.write(KEY)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_file, key_file)
        self.proxy = support.DropProxy(ENV.base_url, tls=context)
        self.addCleanup(self.proxy.close)
        self.url = self.proxy.url

    def client(self, **kw: Any) -> AgentClient:
        client = AgentClient(api_key=ENV.api_key, base_url=self.url, timeout=30, **kw)
        client._transport.sleep = lambda seconds: None
        return client

    def test_https_reaches_the_server(self) -> None:
        with mock.patch.dict(os.environ, {"SSL_CERT_FILE": self.cert_file}):
            client = self.client()
            names = {t.name for t in client.tools.available()}
            self.assertIn("tavily", names)
            tool = client.tools.create(mcp_tool="browser")
            self.assertEqual(client.tools.get(tool.id).id, tool.id)
            with self.assertRaises(quiver.NotFoundError) as ctx:
                client.tools.get(999_999_999)
            self.assertEqual(ctx.exception.status, 404)
            self.assertTrue(ctx.exception.request_id)
            client.tools.delete(tool.id)

    def test_untrusted_certificate_is_a_connection_error(self) -> None:
        client = self.client(max_retries=0)
        for send in (client.tools.list, lambda: client.tools.create(mcp_tool="browser")):
            with self.assertRaises(quiver.APIConnectionError) as ctx:
                send()
            self.assertNotIsInstance(ctx.exception, quiver.InvalidRequestError)
            self.assertIsNone(ctx.exception.status)
            self.assertIn("CERTIFICATE_VERIFY_FAILED", str(ctx.exception))
            cause = ctx.exception.__cause__
            self.assertIsInstance(getattr(cause, "reason", cause), ssl.SSLCertVerificationError)
        self.assertEqual(self.proxy.count(), 0)  # nothing was sent


if __name__ == "__main__":
    unittest.main()
