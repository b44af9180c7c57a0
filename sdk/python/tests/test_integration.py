"""The SDK against a real `quiver serve` (embedded database), a fake Tavily and a local target server."""

from __future__ import annotations

import time
import unittest
import uuid
from typing import Any, Optional, Tuple

import support

import quiver
from quiver import AgentClient

ENV: "support.Env"


def setUpModule() -> None:
    global ENV
    ENV = support.env()


def key() -> str:
    return "sdk-" + str(uuid.uuid4())


class Base(unittest.TestCase):
    client: AgentClient

    @classmethod
    def setUpClass(cls) -> None:
        cls.client = AgentClient(api_key=ENV.api_key, base_url=ENV.base_url, timeout=30)


def http_tool_for(client: AgentClient, base_url: Optional[str] = None) -> quiver.Tool:
    """An http-request tool configured against ``base_url`` (default: the target server), auth none."""
    tool = client.tools.create(mcp_tool="http-request")
    tool = client.tools.provide_config(tool.id, user_response={"base_url": base_url or ENV.target.url})
    tool = client.tools.provide_config(tool.id, user_response={"auth_type": "none"})
    assert tool.is_configured, tool
    return tool


class TestCatalog(Base):
    def test_available(self) -> None:
        catalog = self.client.tools.available()
        names = {t.name for t in catalog}
        self.assertTrue({"tavily", "browser", "http-request", "custom-mcp"} <= names, names)
        tavily = next(t for t in catalog if t.name == "tavily")
        self.assertIsInstance(tavily, quiver.AvailableTool)
        self.assertEqual(tavily.type, "builtin")
        self.assertEqual(tavily.auth, "api_key")
        self.assertIn("search", tavily.categories)
        self.assertTrue(tavily.title)
        self.assertTrue(tavily.description)

    def test_available_category(self) -> None:
        search = self.client.tools.available(category="search")
        self.assertIn("tavily", {t.name for t in search})
        for t in search:
            self.assertIn("search", t.categories)

    def test_get_available(self) -> None:
        entry = self.client.tools.get_available("tavily")
        self.assertEqual(entry.name, "tavily")
        self.assertEqual(entry.config_steps[0].fields[0].name, "TAVILY_API_KEY")
        actions = {a.name: a for a in entry.actions}
        self.assertTrue(actions["search"].retryable)
        with self.assertRaises(quiver.NotFoundError):
            self.client.tools.get_available("no-such-tool")


class TestTavilyLifecycle(Base):
    def test_create_configure_call_reset_delete(self) -> None:
        tool = self.client.tools.create(mcp_tool="tavily")
        self.assertIsInstance(tool.id, int)
        self.assertEqual(tool.mcp_tool, "tavily")
        self.assertFalse(tool.is_configured)
        step = tool.next_configuration_step
        self.assertEqual(step.type, "form")
        self.assertEqual(step.fields[0].name, "TAVILY_API_KEY")

        with self.assertRaises(quiver.ValidationError) as ctx:
            self.client.tools.provide_config(tool.id, user_response={"TAVILY_API_KEY": "nope"})
        self.assertEqual(ctx.exception.status, 422)
        self.assertEqual(ctx.exception.code, "validation_error")
        self.assertIn("TAVILY_API_KEY", ctx.exception.fields)
        still = self.client.tools.get(tool.id)
        self.assertFalse(still.is_configured)
        self.assertEqual(still.next_configuration_step.step, step.step)

        # Not configured yet: calling is refused with the step to complete.
        with self.assertRaises(quiver.ToolNotConfiguredError) as nc:
            self.client.tools.call(tool.id, action="search", arguments={"query": "x"})
        self.assertEqual(nc.exception.status, 409)
        self.assertEqual(nc.exception.next_configuration_step["step"], step.step)

        secret = "tvly-secret-" + uuid.uuid4().hex
        tool = self.client.tools.provide_config(tool.id, user_response={"TAVILY_API_KEY": secret})
        self.assertTrue(tool.is_configured)
        self.assertIsNone(tool.next_configuration_step)
        self.assertNotIn(secret, str(tool.config))  # secrets come back masked

        actions = {a.name: a for a in self.client.tools.actions(tool.id)}
        self.assertIn("search", actions)
        self.assertTrue(actions["search"].retryable)
        self.assertIsInstance(actions["search"].input_schema, dict)

        before = ENV.tavily.count
        result = self.client.tools.call(tool.id, action="search", arguments={"query": "latest AI research papers"})
        self.assertIsInstance(result, quiver.CallResult)
        self.assertFalse(result.is_error, result)
        self.assertEqual(result.tool, tool.id)
        self.assertEqual(result.action, "search")
        self.assertTrue(result.call_id)
        self.assertEqual(result.result["query"], "latest AI research papers")
        self.assertEqual(len(result.result["results"]), 2)
        self.assertEqual(ENV.tavily.count, before + 1)
        self.assertEqual(ENV.tavily.requests[-1]["auth"], "Bearer " + secret)
        self.assertIn("call_id=", str(result))

        with self.assertRaises(quiver.ValidationError) as bad_args:
            self.client.tools.call(tool.id, action="search", arguments={"max_results": "many"})
        self.assertEqual(bad_args.exception.code, "invalid_arguments")
        self.assertIsInstance(bad_args.exception, quiver.InvalidArgumentsError)
        self.assertIn("max_results", bad_args.exception.fields)
        with self.assertRaises(quiver.NotFoundError):
            self.client.tools.call(tool.id, action="no_such_action", arguments={})

        tool = self.client.tools.reset_config(tool.id)
        self.assertFalse(tool.is_configured)
        self.assertEqual(tool.next_configuration_step.index, 1)

        self.client.tools.delete(tool.id)
        with self.assertRaises(quiver.NotFoundError):
            self.client.tools.get(tool.id)
        with self.assertRaises(quiver.NotFoundError):
            self.client.tools.delete(tool.id)

    def test_browser_is_configured_on_creation(self) -> None:
        browser = self.client.tools.create(mcp_tool="browser", name="my browser")
        self.assertTrue(browser.is_configured)
        self.assertIsNone(browser.next_configuration_step)
        self.assertEqual(browser.name, "my browser")
        self.assertEqual(self.client.tools.get(browser.id), browser)


class TestErrors(Base):
    def test_bad_key_is_401(self) -> None:
        bad = AgentClient(api_key="qk_not_a_real_key", base_url=ENV.base_url)
        for fn in (bad.tools.list, bad.tools.available, bad.agents.list,
                   lambda: bad.tools.call(1, action="search", arguments={}),
                   lambda: bad.tools.get(999999)):
            with self.assertRaises(quiver.AuthenticationError) as ctx:
                fn()
            self.assertEqual(ctx.exception.status, 401)
            self.assertEqual(ctx.exception.code, "unauthorized")
            self.assertTrue(ctx.exception.request_id)

    def test_missing_key_is_401(self) -> None:
        client = AgentClient(api_key="", base_url=ENV.base_url)
        with self.assertRaises(quiver.AuthenticationError):
            client.tools.list()

    def test_unknown_ids_are_404(self) -> None:
        for fn in (lambda: self.client.tools.get(987654321),
                   lambda: self.client.tools.provide_config(987654321, user_response={}),
                   lambda: self.client.tools.reset_config(987654321),
                   lambda: self.client.tools.actions(987654321),
                   lambda: self.client.tools.delete(987654321),
                   lambda: self.client.tools.call(987654321, action="search", arguments={"query": "x"}),
                   lambda: self.client.agents.get(987654321),
                   lambda: self.client.agents.update(987654321, name="x"),
                   lambda: self.client.agents.delete(987654321)):
            with self.assertRaises(quiver.NotFoundError) as ctx:
                fn()
            self.assertEqual(ctx.exception.status, 404)
            self.assertEqual(ctx.exception.code, "not_found")

    def test_other_accounts_tool_is_404(self) -> None:
        other = AgentClient(api_key=ENV.other_api_key, base_url=ENV.base_url)
        theirs = other.tools.create(mcp_tool="browser")
        with self.assertRaises(quiver.NotFoundError):
            self.client.tools.get(theirs.id)
        with self.assertRaises(quiver.NotFoundError):
            self.client.tools.call(theirs.id, action="fetch_page", arguments={"url": ENV.target.url})
        with self.assertRaises(quiver.ValidationError) as ctx:
            self.client.agents.create(name="a", goal="g", tools=[theirs.id])
        self.assertIn("tools", ctx.exception.fields)


class TestUnreachable(Base):
    def test_closed_port_is_502_tool_unreachable(self) -> None:
        tool = http_tool_for(self.client, base_url=f"http://127.0.0.1:{support.free_port()}")
        with self.assertRaises(quiver.ToolUnreachableError) as ctx:
            self.client.tools.call(tool.id, action="get", arguments={"path": "/x"})
        self.assertEqual(ctx.exception.status, 502)
        self.assertEqual(ctx.exception.code, "tool_unreachable")
        # A typed rejection before dispatch releases the key: the same key may be used again.
        k = key()
        for _ in range(2):
            with self.assertRaises(quiver.ToolUnreachableError):
                self.client.tools.call(tool.id, action="post", arguments={"path": "/x"}, idempotency_key=k)


class TestAgents(Base):
    def test_agent_lifecycle(self) -> None:
        t1 = self.client.tools.create(mcp_tool="browser")
        t2 = self.client.tools.create(mcp_tool="tavily")  # unconfigured may be attached
        agent = self.client.agents.create(name="Research Assistant", goal="Research things.",
                                          tools=[t1.id, t2.id], status="draft")
        self.assertIsInstance(agent, quiver.Agent)
        self.assertEqual(agent.name, "Research Assistant")
        self.assertEqual(agent.goal, "Research things.")
        self.assertEqual(agent.status, "draft")
        self.assertEqual(sorted(agent.tools), sorted([t1.id, t2.id]))
        self.assertTrue(agent.created_at and agent.updated_at)

        self.assertEqual(self.client.agents.get(agent.id).id, agent.id)
        self.assertIn(agent.id, [a.id for a in self.client.agents.list()])

        updated = self.client.agents.update(agent_id=agent.id, tools=[t1.id])
        self.assertEqual(updated.tools, [t1.id])
        self.assertEqual(updated.name, "Research Assistant")
        updated = self.client.agents.update(agent.id, name="Renamed", status="active")
        self.assertEqual(updated.name, "Renamed")
        self.assertEqual(updated.status, "active")
        self.assertEqual(updated.tools, [t1.id])

        # Deleting a tool detaches it from every agent.
        self.client.tools.delete(t1.id)
        self.assertEqual(self.client.agents.get(agent.id).tools, [])

        self.client.agents.delete(agent.id)
        with self.assertRaises(quiver.NotFoundError):
            self.client.agents.get(agent.id)

    def test_unknown_tool_id_is_422(self) -> None:
        t = self.client.tools.create(mcp_tool="browser")
        with self.assertRaises(quiver.ValidationError) as ctx:
            self.client.agents.create(name="x", goal="y", tools=[t.id, 987654321])
        self.assertEqual(ctx.exception.status, 422)
        self.assertEqual(ctx.exception.code, "validation_error")
        self.assertIn("tools", ctx.exception.fields)
        self.assertIn("987654321", str(ctx.exception.fields["tools"]))
        agent = self.client.agents.create(name="x", goal="y", tools=[t.id])
        with self.assertRaises(quiver.ValidationError):
            self.client.agents.update(agent.id, tools=[987654321])
        self.assertEqual(self.client.agents.get(agent.id).tools, [t.id])  # refused whole

    def test_agents_pagination(self) -> None:
        ids = [self.client.agents.create(name=f"p{i}", goal="g").id for i in range(5)]
        page = self.client.agents.list_page(limit=2)
        self.assertEqual(len(page.items), 2)
        self.assertIsNotNone(page.next_cursor)
        all_ids = [a.id for a in self.client.agents.list(limit=2)]
        self.assertEqual(len(all_ids), len(set(all_ids)))
        self.assertTrue(set(ids) <= set(all_ids))


class TestPagination(Base):
    def test_list_follows_every_page(self) -> None:
        created = [self.client.tools.create(mcp_tool="browser", name=f"page-{i}").id for i in range(53)]
        page = self.client.tools.list_page()
        self.assertEqual(len(page.items), 50)  # the default page size
        self.assertIsNotNone(page.next_cursor)
        tools = self.client.tools.list()
        ids = [t.id for t in tools]
        self.assertGreater(len(ids), 50)
        self.assertEqual(len(ids), len(set(ids)))
        self.assertTrue(set(created) <= set(ids))
        self.assertEqual(ids, sorted(ids))  # newest last
        small = [t.id for t in self.client.tools.list(limit=7)]
        self.assertEqual(small, ids)
        if len(ids) <= 200:
            self.assertIsNone(self.client.tools.list_page(limit=200).next_cursor)

    def test_call_log_one_page_at_a_time(self) -> None:
        tool = self.client.tools.create(mcp_tool="browser", name="call-log-pages")
        made = [self.client.tools.call(tool.id, "fetch_page", {"url": ENV.target.url + f"/log-page-{i}"}).call_id
                for i in range(5)]
        # The call log is written asynchronously: poll until it has all five.
        self.assertTrue(support.wait_until(lambda: len(self.client.tools.calls(tool=tool)) == 5, timeout=10))
        first = self.client.tools.calls_page(tool=tool, limit=2)
        self.assertIsInstance(first, quiver.Page)
        self.assertEqual(len(first.items), 2)
        self.assertIsInstance(first.items[0], quiver.CallLogEntry)
        self.assertIsNotNone(first.next_cursor)
        seen, page = list(first.items), first
        while page.next_cursor:
            page = self.client.tools.calls_page(tool=tool.id, limit=2, cursor=page.next_cursor)
            self.assertLessEqual(len(page.items), 2)
            seen.extend(page.items)
        self.assertEqual([c.call_id for c in seen], made)  # oldest first, each once
        self.assertTrue(all(c.tool == tool.id and c.outcome == "succeeded" for c in seen), seen)
        self.assertEqual(self.client.tools.calls(tool=tool, limit=2), seen)


class TestIdempotency(Base):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.tool = http_tool_for(cls.client)

    def proxied_client(self, **options: Any) -> Tuple[support.DropProxy, AgentClient]:
        """A fresh connection-dropping proxy in front of the server (closed after the test) and a client using it."""
        proxy = ENV.proxy()
        self.addCleanup(proxy.close)
        options.setdefault("timeout", 30)
        return proxy, AgentClient(api_key=ENV.api_key, base_url=proxy.url, **options)

    def test_two_step_configuration(self) -> None:
        tool = self.client.tools.create(mcp_tool="http-request")
        self.assertFalse(tool.is_configured)
        self.assertEqual(tool.next_configuration_step.index, 1)
        self.assertEqual(tool.next_configuration_step.total, 2)
        tool = self.client.tools.provide_config(tool.id, user_response={"base_url": ENV.target.url})
        self.assertFalse(tool.is_configured)
        self.assertEqual(tool.next_configuration_step.index, 2)
        tool = self.client.tools.provide_config(tool.id, user_response={"auth_type": "none"})
        self.assertTrue(tool.is_configured)
        self.assertIsNone(tool.next_configuration_step)

    def test_retryable_get_needs_no_key(self) -> None:
        result = self.client.tools.call(self.tool.id, action="get", arguments={"path": "/hello"})
        self.assertFalse(result.is_error)
        self.assertEqual(result.result["status"], 200)
        self.assertEqual(result.result["body"]["path"], "/hello")

    def test_post_requires_key(self) -> None:
        with self.assertRaises(quiver.IdempotencyKeyRequiredError) as ctx:
            self.client.tools.call(self.tool.id, action="post", arguments={"path": "/nokey", "body": {"a": 1}})
        self.assertIsInstance(ctx.exception, quiver.BadRequestError)
        self.assertEqual(ctx.exception.status, 400)
        self.assertEqual(ctx.exception.code, "idempotency_key_required")
        self.assertEqual(ENV.target.count("/nokey"), 0)

    def test_replay_runs_once(self) -> None:
        k = key()
        args = {"path": "/replay", "body": {"amount": 12345678901234567890, "to": "acct"}}
        first = self.client.tools.call(self.tool.id, action="post", arguments=args, idempotency_key=k)
        self.assertFalse(first.is_error, first)
        self.assertFalse(first.replayed)
        self.assertEqual(first.result["status"], 200)
        self.assertEqual(first.result["body"]["echo"], {"amount": 12345678901234567890, "to": "acct"})
        second = self.client.tools.call(self.tool.id, action="post", arguments=args, idempotency_key=k)
        self.assertTrue(second.replayed)
        self.assertEqual(second.call_id, first.call_id)
        self.assertEqual(second, first)
        self.assertEqual(ENV.target.count("/replay"), 1)

        with self.assertRaises(quiver.IdempotencyKeyReusedError) as ctx:
            self.client.tools.call(self.tool.id, action="post",
                                   arguments={"path": "/replay", "body": {"amount": 12345678901234567891, "to": "acct"}},
                                   idempotency_key=k)
        self.assertEqual(ctx.exception.status, 409)
        self.assertEqual(ctx.exception.code, "idempotency_key_reused")
        self.assertEqual(ENV.target.count("/replay"), 1)

        state = self.client.idempotency_keys.get(k)
        self.assertEqual(state.key, k)
        self.assertEqual(state.state, "succeeded")
        self.assertEqual(state.call_id, first.call_id)
        with self.assertRaises(quiver.NotFoundError):
            self.client.idempotency_keys.get(key())

        # The call log is written asynchronously: poll for the entry.
        def logged() -> bool:
            log = self.client.tools.calls(tool=self.tool.id)
            return first.call_id in [c.get("call_id") or c.get("id") for c in log]

        self.assertTrue(support.wait_until(logged, timeout=10))

    def test_tool_error_is_a_result_and_replayed(self) -> None:
        k = key()
        first = self.client.tools.call(self.tool.id, action="post", arguments={"path": "/fail"}, idempotency_key=k)
        self.assertTrue(first.is_error)
        self.assertEqual(first.result["status"], 500)
        again = self.client.tools.call(self.tool.id, action="post", arguments={"path": "/fail"}, idempotency_key=k)
        self.assertEqual(again.call_id, first.call_id)
        self.assertEqual(ENV.target.count("/fail"), 1)

    def test_typed_rejection_releases_key(self) -> None:
        k = key()
        with self.assertRaises(quiver.ValidationError):
            self.client.tools.call(self.tool.id, action="post", arguments={"body": {"no": "path"}}, idempotency_key=k)
        ok = self.client.tools.call(self.tool.id, action="post", arguments={"path": "/released"}, idempotency_key=k)
        self.assertFalse(ok.is_error)
        self.assertEqual(ENV.target.count("/released"), 1)

    def test_connection_cut_after_response_is_retried_once(self) -> None:
        proxy, client = self.proxied_client()
        proxy.drop("POST", "/custom-tools/call", when="after_response")
        k = key()
        result = client.tools.call(self.tool.id, action="post", arguments={"path": "/cut-after", "body": {"x": 1}},
                                   idempotency_key=k)
        self.assertFalse(result.is_error)
        self.assertTrue(result.replayed)  # the retry got the stored outcome
        self.assertEqual(proxy.count("POST", "/custom-tools/call"), 2)
        self.assertEqual(ENV.target.count("/cut-after"), 1)

    def test_connection_cut_mid_call_is_retried_until_replay(self) -> None:
        proxy, client = self.proxied_client(max_retries=6)
        proxy.drop("POST", "/custom-tools/call", when="before_response")
        k = key()
        started = time.time()
        result = client.tools.call(self.tool.id, action="post", arguments={"path": "/slow-cut", "body": {"y": 2}},
                                   idempotency_key=k)
        self.assertFalse(result.is_error, result)
        self.assertTrue(result.replayed)
        self.assertGreaterEqual(time.time() - started, ENV.target.slow_seconds)
        self.assertGreaterEqual(proxy.count("POST", "/custom-tools/call"), 2)
        self.assertEqual(ENV.target.count("/slow-cut"), 1)

    def test_timeout_is_retried_with_the_same_key(self) -> None:
        client = AgentClient(api_key=ENV.api_key, base_url=ENV.base_url, timeout=0.7, max_retries=8)
        k = key()
        result = client.tools.call(self.tool.id, action="post", arguments={"path": "/slow-timeout"}, idempotency_key=k)
        self.assertFalse(result.is_error)
        self.assertTrue(result.replayed)
        self.assertEqual(ENV.target.count("/slow-timeout"), 1)

    def test_in_progress_is_typed_without_retries(self) -> None:
        client = AgentClient(api_key=ENV.api_key, base_url=ENV.base_url, timeout=0.5, max_retries=0)
        k = key()
        with self.assertRaises(quiver.APITimeoutError):
            client.tools.call(self.tool.id, action="post", arguments={"path": "/slow-inprogress"}, idempotency_key=k)
        with self.assertRaises(quiver.RequestInProgressError) as ctx:
            client.tools.call(self.tool.id, action="post", arguments={"path": "/slow-inprogress"}, idempotency_key=k)
        self.assertEqual(ctx.exception.status, 409)
        self.assertIsNotNone(ctx.exception.retry_after)
        support.wait_until(lambda: ENV.target.count("/slow-inprogress") == 1)
        time.sleep(ENV.target.slow_seconds + 0.5)
        patient = AgentClient(api_key=ENV.api_key, base_url=ENV.base_url, timeout=30)
        done = patient.tools.call(self.tool.id, action="post", arguments={"path": "/slow-inprogress"}, idempotency_key=k)
        self.assertTrue(done.replayed)
        self.assertEqual(ENV.target.count("/slow-inprogress"), 1)

    def test_call_without_key_is_not_retried(self) -> None:
        proxy, client = self.proxied_client()
        proxy.drop("POST", "/custom-tools/call", when="after_response")
        with self.assertRaises(quiver.APIConnectionError):
            client.tools.call(self.tool.id, action="get", arguments={"path": "/nokey-cut"})
        self.assertEqual(proxy.count("POST", "/custom-tools/call"), 1)
        self.assertEqual(ENV.target.count("/nokey-cut"), 1)

    def test_get_is_retried_and_create_is_not(self) -> None:
        proxy, client = self.proxied_client()
        proxy.drop("GET", "/custom-tools/%d/" % self.tool.id, when="after_response")
        self.assertEqual(client.tools.get(self.tool.id).id, self.tool.id)
        self.assertEqual(proxy.count("GET", "/custom-tools/%d/" % self.tool.id), 2)
        proxy.drop("POST", "/custom-tools/", when="after_response")
        with self.assertRaises(quiver.APIConnectionError):
            client.tools.create(mcp_tool="browser")
        self.assertEqual(proxy.count("POST", "/custom-tools/"), 1)

    def test_delete_whose_answer_was_lost_succeeds(self) -> None:
        proxy, client = self.proxied_client()
        agent = client.agents.create(name="Deleted once", goal="g")
        tool = client.tools.create(mcp_tool="browser")
        for path, delete in (("/agents/%d/" % agent.id, lambda: client.agents.delete(agent.id)),
                             ("/custom-tools/%d/" % tool.id, lambda: client.tools.delete(tool.id))):
            with self.subTest(path=path):
                proxy.drop("DELETE", path, when="after_response")  # the DELETE runs; its answer is lost
                self.assertIsNone(delete())  # the retry's 404 means it is gone
                self.assertEqual(proxy.count("DELETE", path), 2)
                with self.assertRaises(quiver.NotFoundError):
                    delete()  # a 404 on the first attempt is still an error
        with self.assertRaises(quiver.NotFoundError):
            self.client.agents.get(agent.id)
        with self.assertRaises(quiver.NotFoundError):
            self.client.tools.get(tool.id)

    def test_dot_keys_can_be_looked_up(self) -> None:
        for k in (".", ".."):
            with self.subTest(key=k):
                result = self.client.tools.call(self.tool.id, action="post",
                                                arguments={"path": "/dot-key", "body": {"key": k}}, idempotency_key=k)
                state = self.client.idempotency_keys.get(k)
                self.assertEqual(state.key, k)
                self.assertEqual(state.state, "succeeded")
                self.assertEqual(state.call_id, result.call_id)

    def test_non_ascii_arguments_round_trip_and_replay_byte_for_byte(self) -> None:
        text = "na\u00efve caf\u00e9 \u2013 \u4e2d\u6587 \U0001F600 \u05e2\u05d1\u05e8\u05d9\u05ea e\u0301 \u0000 \u2028"
        args = {"path": "/unicode", "body": {"text": text, "\u00e9t\u00e9": ["\u20ac", "\U0001F4A9"]}}
        body = {"tool": self.tool.id, "action": "post", "arguments": args}
        k = key()
        t = self.client._transport
        data, first = t.request("POST", "/api/v1/agents/custom-tools/call/", body=body,
                                headers={"Idempotency-Key": k})
        self.assertFalse(data["is_error"], data)
        self.assertEqual(data["result"]["body"]["echo"], args["body"])  # the tool got the text intact
        self.assertEqual(ENV.target.count("/unicode"), 1)
        replayed = self.client.tools.call(self.tool.id, action="post", arguments=args, idempotency_key=k)
        self.assertTrue(replayed.replayed)
        self.assertEqual(replayed.result["body"]["echo"]["text"], text)
        data2, again = t.request("POST", "/api/v1/agents/custom-tools/call/", body=body,
                                 headers={"Idempotency-Key": k})
        self.assertEqual(again.headers.get("Idempotent-Replayed"), "true")
        self.assertEqual(again.body, first.body)  # byte for byte
        self.assertEqual(ENV.target.count("/unicode"), 1)

    def test_call_by_catalog_name(self) -> None:
        other = AgentClient(api_key=ENV.other_api_key, base_url=ENV.base_url)
        http_tool_for(other)
        result = other.tools.call("http-request", action="get", arguments={"path": "/by-name"})
        self.assertFalse(result.is_error)
        http_tool_for(other)
        with self.assertRaises(quiver.ValidationError):
            other.tools.call("http-request", action="get", arguments={"path": "/by-name"})


if __name__ == "__main__":
    unittest.main()
