"""The README's Python examples, run in order as one program against a real server.

Only the API key (the README's ``"qv_..."``) and the http-request tool's base URL (the README's
``https://api.example.com``, here the local target server) differ; ``QUIVER_BASE_URL`` names the server.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import unittest
from unittest import mock

import support

ENV: "support.Env"
README = support.SDK_ROOT / "README.md"


def setUpModule() -> None:
    global ENV
    ENV = support.env()


class TestReadmeExamples(unittest.TestCase):
    def test_every_python_example_runs(self) -> None:
        blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.S | re.M)
        self.assertEqual(len(blocks), 4, "the quickstart, the idempotency pattern, the error and did_nothing examples")
        source = "\n".join(blocks)
        self.assertIn('"qv_..."', source)
        self.assertIn("https://api.example.com", source)
        source = source.replace('"qv_..."', repr(ENV.api_key)).replace("https://api.example.com", ENV.target.url)
        before = ENV.target.count("/payments")
        pings = ENV.target.count("/ping")
        namespace = {"__name__": "readme_example"}
        out = io.StringIO()
        with mock.patch.dict(os.environ, {"QUIVER_BASE_URL": ENV.base_url}), contextlib.redirect_stdout(out):
            exec(compile(source, "<README.md python examples>", "exec"), namespace)
        printed = out.getvalue()
        self.assertIn("tavily (builtin): Tavily Search", printed)  # the quickstart's catalog listing
        self.assertIn("False {'query': 'latest AI research papers'", printed)  # its call
        self.assertIn("422 validation_error {'TAVILY_API_KEY':", printed)  # the error example
        result = namespace["result"]  # the idempotency pattern's call
        self.assertFalse(result.is_error, result)
        self.assertEqual(result.result["body"]["echo"], {"amount": 100})
        self.assertEqual(ENV.target.count("/payments"), before + 1)
        self.assertEqual(ENV.target.count("/ping"), pings + 1)  # the did_nothing example's call
        # Its comment: calling again with the same key replays, and the tool does not run again.
        again = namespace["client"].tools.call(
            namespace["http_tool"].id, action="post",
            arguments={"path": "/payments", "body": {"amount": 100}}, idempotency_key=namespace["key"])
        self.assertTrue(again.replayed)
        self.assertEqual(ENV.target.count("/payments"), before + 1)


if __name__ == "__main__":
    unittest.main()
