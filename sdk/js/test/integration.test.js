// The SDK against a real `quiver serve` (embedded database), a fake Tavily and a local target server,
// plus the seed documentation's JavaScript examples run unchanged but for the import line and the key/URL.

import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { execFile } from "node:child_process";
import { mkdtempSync, mkdirSync, symlinkSync, writeFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

import * as quiver from "quiver-sdk";
import { AgentClient } from "quiver-sdk";
import { startEnv, sleep, freePort, SDK_ROOT } from "../test-support/harness.js";

const execFileP = promisify(execFile);

let ENV;
let client;
let httpTool;

const key = () => `sdk-${randomUUID()}`;

/** An http-request tool configured against baseUrl (default: the target server), auth none. */
async function httpToolFor(c, baseUrl = ENV.target.url) {
  let tool = await c.tools.create({ mcpTool: "http-request" });
  tool = await c.tools.provideConfig(tool.id, { userResponse: { base_url: baseUrl } });
  tool = await c.tools.provideConfig(tool.id, { userResponse: { auth_type: "none" } });
  assert.equal(tool.isConfigured, true, JSON.stringify(tool));
  return tool;
}

before(async () => {
  ENV = await startEnv();
  client = new AgentClient({ apiKey: ENV.apiKey, baseUrl: ENV.baseUrl, timeout: 30_000 });
  httpTool = await httpToolFor(client);
}, { timeout: 20 * 60_000 });

after(async () => {
  await ENV?.close();
});

describe("catalog", () => {
  test("available()", async () => {
    const catalog = await client.tools.available();
    const names = new Set(catalog.map((t) => t.name));
    for (const n of ["tavily", "browser", "http-request", "custom-mcp"]) assert.ok(names.has(n), n);
    const tavily = catalog.find((t) => t.name === "tavily");
    assert.ok(tavily instanceof quiver.AvailableTool);
    assert.equal(tavily.type, "builtin");
    assert.equal(tavily.auth, "api_key");
    assert.ok(tavily.categories.includes("search"));
  });

  test("available({category})", async () => {
    const search = await client.tools.available({ category: "search" });
    assert.ok(search.some((t) => t.name === "tavily"));
    for (const t of search) assert.ok(t.categories.includes("search"));
  });

  test("getAvailable(name)", async () => {
    const entry = await client.tools.getAvailable("tavily");
    assert.equal(entry.configSteps[0].fields[0].name, "TAVILY_API_KEY");
    assert.equal(entry.actions.find((a) => a.name === "search").retryable, true);
    await assert.rejects(client.tools.getAvailable("no-such-tool"), quiver.NotFoundError);
  });
});

describe("tavily lifecycle", () => {
  test("create, bad config, configure, actions, call, reset, delete", async () => {
    let tool = await client.tools.create({ mcpTool: "tavily" });
    assert.equal(typeof tool.id, "number");
    assert.equal(tool.mcp_tool, "tavily");
    assert.equal(tool.mcpTool, "tavily");
    assert.equal(tool.isConfigured, false);
    const step = tool.nextConfigurationStep;
    assert.equal(step.type, "form");
    assert.equal(step.fields[0].name, "TAVILY_API_KEY");

    const bad = await client.tools.provideConfig(tool.id, { userResponse: { TAVILY_API_KEY: "nope" } }).catch((e) => e);
    assert.ok(bad instanceof quiver.ValidationError, String(bad));
    assert.equal(bad.status, 422);
    assert.equal(bad.code, "validation_error");
    assert.ok("TAVILY_API_KEY" in bad.fields);
    const still = await client.tools.get(tool.id);
    assert.equal(still.isConfigured, false);
    assert.equal(still.nextConfigurationStep.step, step.step);

    const nc = await client.tools.call(tool.id, { action: "search", arguments: { query: "x" } }).catch((e) => e);
    assert.ok(nc instanceof quiver.ToolNotConfiguredError, String(nc));
    assert.equal(nc.status, 409);
    assert.equal(nc.nextConfigurationStep.step, step.step);

    const secret = "tvly-secret-" + randomUUID();
    tool = await client.tools.provideConfig(tool.id, { userResponse: { TAVILY_API_KEY: secret } });
    assert.equal(tool.isConfigured, true);
    assert.equal(tool.nextConfigurationStep, null);
    assert.ok(!JSON.stringify(tool.config).includes(secret));

    const actions = await client.tools.actions(tool.id);
    const search = actions.find((a) => a.name === "search");
    assert.equal(search.retryable, true);
    assert.equal(typeof search.inputSchema, "object");

    const before = ENV.tavily.count;
    const result = await client.tools.call(tool.id, { action: "search", arguments: { query: "latest AI research papers" } });
    assert.ok(result instanceof quiver.CallResult);
    assert.equal(result.isError, false);
    assert.equal(result.tool, tool.id);
    assert.ok(result.callId);
    assert.equal(result.result.query, "latest AI research papers");
    assert.equal(result.result.results.length, 2);
    assert.equal(ENV.tavily.count, before + 1);
    assert.equal(ENV.tavily.requests.at(-1).auth, "Bearer " + secret);

    const badArgs = await client.tools.call(tool.id, { action: "search", arguments: { max_results: "many" } }).catch((e) => e);
    assert.ok(badArgs instanceof quiver.ValidationError, String(badArgs));
    assert.equal(badArgs.code, "invalid_arguments");
    assert.ok(badArgs instanceof quiver.InvalidArgumentsError, String(badArgs));
    assert.ok("max_results" in badArgs.fields, JSON.stringify(badArgs.fields));
    await assert.rejects(client.tools.call(tool.id, { action: "no_such_action", arguments: {} }), quiver.NotFoundError);

    tool = await client.tools.resetConfig(tool.id);
    assert.equal(tool.isConfigured, false);
    assert.equal(tool.nextConfigurationStep.index, 1);

    await client.tools.delete(tool.id);
    await assert.rejects(client.tools.get(tool.id), quiver.NotFoundError);
    await assert.rejects(client.tools.delete(tool.id), quiver.NotFoundError);
  });

  test("browser is configured on creation", async () => {
    const b = await client.tools.create({ mcpTool: "browser", name: "my browser" });
    assert.equal(b.isConfigured, true);
    assert.equal(b.nextConfigurationStep, null);
    assert.equal(b.name, "my browser");
  });

  test("http-request has two steps", async () => {
    let tool = await client.tools.create({ mcpTool: "http-request" });
    assert.equal(tool.nextConfigurationStep.index, 1);
    assert.equal(tool.nextConfigurationStep.total, 2);
    tool = await client.tools.provideConfig(tool.id, { userResponse: { base_url: ENV.target.url } });
    assert.equal(tool.isConfigured, false);
    assert.equal(tool.nextConfigurationStep.index, 2);
    tool = await client.tools.provideConfig(tool.id, { userResponse: { auth_type: "none" } });
    assert.equal(tool.isConfigured, true);
  });
});

describe("errors", () => {
  test("bad key is 401", async () => {
    const bad = new AgentClient({ apiKey: "qk_not_a_real_key", baseUrl: ENV.baseUrl });
    for (const fn of [() => bad.tools.list(), () => bad.tools.available(), () => bad.agents.list(),
      () => bad.tools.call(1, { action: "search", arguments: {} }), () => bad.tools.get(999999)]) {
      const err = await fn().catch((e) => e);
      assert.ok(err instanceof quiver.AuthenticationError, String(err));
      assert.equal(err.status, 401);
      assert.equal(err.code, "unauthorized");
      assert.ok(err.requestId);
    }
  });

  test("unknown ids are 404", async () => {
    const id = 987654321;
    for (const fn of [() => client.tools.get(id), () => client.tools.provideConfig(id, { userResponse: {} }),
      () => client.tools.resetConfig(id), () => client.tools.actions(id), () => client.tools.delete(id),
      () => client.tools.call(id, { action: "search", arguments: { query: "x" } }), () => client.agents.get(id),
      () => client.agents.update(id, { name: "x" }), () => client.agents.delete(id)]) {
      const err = await fn().catch((e) => e);
      assert.ok(err instanceof quiver.NotFoundError, String(err));
      assert.equal(err.status, 404);
      assert.equal(err.code, "not_found");
    }
  });

  test("another account's tool is 404 / 422", async () => {
    const other = new AgentClient({ apiKey: ENV.otherApiKey, baseUrl: ENV.baseUrl });
    const theirs = await other.tools.create({ mcpTool: "browser" });
    await assert.rejects(client.tools.get(theirs.id), quiver.NotFoundError);
    const err = await client.agents.create({ name: "a", goal: "g", tools: [theirs.id] }).catch((e) => e);
    assert.ok(err instanceof quiver.ValidationError, String(err));
    assert.ok("tools" in err.fields);
  });
});

describe("unreachable tool", () => {
  test("closed port is 502 tool_unreachable", async () => {
    const tool = await httpToolFor(client, `http://127.0.0.1:${await freePort()}`);
    const err = await client.tools.call(tool.id, { action: "get", arguments: { path: "/x" } }).catch((e) => e);
    assert.ok(err instanceof quiver.ToolUnreachableError, String(err));
    assert.equal(err.status, 502);
    assert.equal(err.code, "tool_unreachable");
    const k = key();
    for (let i = 0; i < 2; i++) {
      await assert.rejects(client.tools.call(tool.id, { action: "post", arguments: { path: "/x" }, idempotencyKey: k }), quiver.ToolUnreachableError);
    }
  });
});

describe("agents", () => {
  test("lifecycle", async () => {
    const t1 = await client.tools.create({ mcpTool: "browser" });
    const t2 = await client.tools.create({ mcpTool: "tavily" });
    const agent = await client.agents.create({ name: "Research Assistant", goal: "Research things.", tools: [t1.id, t2.id], status: "draft" });
    assert.ok(agent instanceof quiver.Agent);
    assert.equal(agent.status, "draft");
    assert.deepEqual([...agent.tools].sort((a, b) => a - b), [t1.id, t2.id].sort((a, b) => a - b));
    assert.ok(agent.createdAt && agent.updatedAt);
    assert.equal((await client.agents.get(agent.id)).id, agent.id);
    assert.ok((await client.agents.list()).some((a) => a.id === agent.id));
    let updated = await client.agents.update(agent.id, { tools: [t1.id] });
    assert.deepEqual(updated.tools, [t1.id]);
    updated = await client.agents.update({ agentId: agent.id, name: "Renamed", status: "active" });
    assert.equal(updated.name, "Renamed");
    assert.equal(updated.status, "active");
    assert.deepEqual(updated.tools, [t1.id]);
    await client.tools.delete(t1.id);
    assert.deepEqual((await client.agents.get(agent.id)).tools, []);
    await client.agents.delete(agent.id);
    await assert.rejects(client.agents.get(agent.id), quiver.NotFoundError);
  });

  test("unknown tool id is 422 and refused whole", async () => {
    const t = await client.tools.create({ mcpTool: "browser" });
    const err = await client.agents.create({ name: "x", goal: "y", tools: [t.id, 987654321] }).catch((e) => e);
    assert.ok(err instanceof quiver.ValidationError, String(err));
    assert.equal(err.status, 422);
    assert.match(JSON.stringify(err.fields.tools), /987654321/);
    const agent = await client.agents.create({ name: "x", goal: "y", tools: [t.id] });
    await assert.rejects(client.agents.update(agent.id, { tools: [987654321] }), quiver.ValidationError);
    assert.deepEqual((await client.agents.get(agent.id)).tools, [t.id]);
  });
});

describe("pagination", () => {
  test("list() follows every page", async () => {
    const created = [];
    for (let i = 0; i < 53; i++) created.push((await client.tools.create({ mcpTool: "browser", name: `page-${i}` })).id);
    const page = await client.tools.listPage();
    assert.equal(page.items.length, 50);
    assert.ok(page.nextCursor);
    const ids = (await client.tools.list()).map((t) => t.id);
    assert.ok(ids.length > 50);
    assert.equal(new Set(ids).size, ids.length);
    for (const id of created) assert.ok(ids.includes(id));
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
    assert.deepEqual((await client.tools.list({ limit: 7 })).map((t) => t.id), ids);
    const agentIds = [];
    for (let i = 0; i < 3; i++) agentIds.push((await client.agents.create({ name: `p${i}`, goal: "g" })).id);
    const apage = await client.agents.listPage({ limit: 2 });
    assert.equal(apage.items.length, 2);
    assert.ok(apage.nextCursor);
    const all = (await client.agents.list({ limit: 2 })).map((a) => a.id);
    for (const id of agentIds) assert.ok(all.includes(id));
  });

  test("callsPage() gives the call log one page at a time", async () => {
    const tool = await client.tools.create({ mcpTool: "browser", name: "call-log-pages" });
    const made = [];
    for (let i = 0; i < 5; i++) {
      made.push((await client.tools.call(tool, { action: "fetch_page", arguments: { url: `${ENV.target.url}/log-page-${i}` } })).callId);
    }
    // The call log is written asynchronously: poll until it has all five.
    for (let deadline = Date.now() + 10_000; (await client.tools.calls({ tool })).length < 5; ) {
      assert.ok(Date.now() < deadline, "the call log never had the five calls");
      await sleep(50);
    }
    const first = await client.tools.callsPage({ tool, limit: 2 });
    assert.ok(first instanceof quiver.Page);
    assert.equal(first.items.length, 2);
    assert.ok(first.items[0] instanceof quiver.CallLogEntry);
    assert.ok(first.nextCursor);
    const seen = [...first.items];
    for (let page = first; page.nextCursor; ) {
      page = await client.tools.callsPage({ tool: tool.id, limit: 2, cursor: page.nextCursor });
      assert.ok(page.items.length <= 2);
      seen.push(...page.items);
    }
    assert.deepEqual(seen.map((c) => c.callId), made); // oldest first, each once
    for (const c of seen) assert.ok(c.tool === tool.id && c.outcome === "succeeded", JSON.stringify(c));
    assert.deepEqual((await client.tools.calls({ tool, limit: 2 })).map((c) => c.callId), made);
  });
});

/** Runs fn(proxy, client) with a fresh connection-dropping proxy in front of the server, closed afterwards. */
async function withProxy(clientOptions, fn) {
  const proxy = await ENV.proxy();
  try {
    await fn(proxy, new AgentClient({ apiKey: ENV.apiKey, baseUrl: proxy.url, timeout: 30_000, ...clientOptions }));
  } finally {
    await proxy.close();
  }
}

describe("idempotency", () => {
  test("retryable get needs no key", async () => {
    const r = await client.tools.call(httpTool.id, { action: "get", arguments: { path: "/hello" } });
    assert.equal(r.isError, false);
    assert.equal(r.result.status, 200);
    assert.equal(r.result.body.path, "/hello");
  });

  test("post without key is 400 idempotency_key_required", async () => {
    const err = await client.tools.call(httpTool.id, { action: "post", arguments: { path: "/nokey", body: { a: 1 } } }).catch((e) => e);
    assert.ok(err instanceof quiver.IdempotencyKeyRequiredError, String(err));
    assert.ok(err instanceof quiver.BadRequestError);
    assert.equal(err.status, 400);
    assert.equal(err.code, "idempotency_key_required");
    assert.equal(ENV.target.count("/nokey"), 0);
  });

  test("replay with the same key runs once; different body is 409", async () => {
    const k = key();
    const args = { path: "/replay", body: { amount: 100, to: "acct" } };
    const first = await client.tools.call(httpTool.id, { action: "post", arguments: args, idempotencyKey: k });
    assert.equal(first.isError, false);
    assert.equal(first.replayed, false);
    assert.deepEqual(first.result.body.echo, { amount: 100, to: "acct" });
    const second = await client.tools.call(httpTool.id, { action: "post", arguments: args, idempotencyKey: k });
    assert.equal(second.replayed, true);
    assert.equal(second.callId, first.callId);
    assert.deepEqual(JSON.parse(JSON.stringify(second)), JSON.parse(JSON.stringify(first)));
    assert.equal(ENV.target.count("/replay"), 1);
    const err = await client.tools.call(httpTool.id, { action: "post", arguments: { path: "/replay", body: { amount: 101, to: "acct" } }, idempotencyKey: k }).catch((e) => e);
    assert.ok(err instanceof quiver.IdempotencyKeyReusedError, String(err));
    assert.equal(err.status, 409);
    assert.equal(ENV.target.count("/replay"), 1);
    const state = await client.idempotencyKeys.get(k);
    assert.equal(state.key, k);
    assert.equal(state.state, "succeeded");
    assert.equal(state.callId, first.callId);
    await assert.rejects(client.idempotencyKeys.get(key()), quiver.NotFoundError);
    // The call log is written asynchronously: poll for the entry.
    let logged = false;
    for (let i = 0; i < 100 && !logged; i++) {
      const log = await client.tools.calls({ tool: httpTool.id });
      logged = log.some((c) => (c.call_id ?? c.id) === first.callId);
      if (!logged) await sleep(100);
    }
    assert.ok(logged, "call not in the call log");
  });

  test("tool error is a result, kept and replayed", async () => {
    const k = key();
    const first = await client.tools.call(httpTool.id, { action: "post", arguments: { path: "/fail-js" }, idempotencyKey: k });
    assert.equal(first.isError, true);
    assert.equal(first.result.status, 500);
    const again = await client.tools.call(httpTool.id, { action: "post", arguments: { path: "/fail-js" }, idempotencyKey: k });
    assert.equal(again.callId, first.callId);
    assert.equal(ENV.target.count("/fail-js"), 1);
  });

  test("connection cut after the response: retried once, tool ran once", async () => {
    await withProxy({}, async (proxy, c) => {
      proxy.drop("POST", "/custom-tools/call", "after_response");
      const r = await c.tools.call(httpTool.id, { action: "post", arguments: { path: "/cut-after-js", body: { x: 1 } }, idempotencyKey: key() });
      assert.equal(r.isError, false);
      assert.equal(r.replayed, true);
      assert.equal(proxy.count("POST", "/custom-tools/call"), 2);
      assert.equal(ENV.target.count("/cut-after-js"), 1);
    });
  });

  test("connection cut mid-call: retried until the replay, tool ran once", async () => {
    await withProxy({ maxRetries: 6 }, async (proxy, c) => {
      proxy.drop("POST", "/custom-tools/call", "before_response");
      const started = Date.now();
      const r = await c.tools.call(httpTool.id, { action: "post", arguments: { path: "/slow-cut-js", body: { y: 2 } }, idempotencyKey: key() });
      assert.equal(r.isError, false);
      assert.equal(r.replayed, true);
      assert.ok(Date.now() - started >= ENV.target.slowMs);
      assert.ok(proxy.count("POST", "/custom-tools/call") >= 2);
      assert.equal(ENV.target.count("/slow-cut-js"), 1);
    });
  });

  test("timeout is retried with the same key", async () => {
    const c = new AgentClient({ apiKey: ENV.apiKey, baseUrl: ENV.baseUrl, timeout: 700, maxRetries: 8 });
    const r = await c.tools.call(httpTool.id, { action: "post", arguments: { path: "/slow-timeout-js" }, idempotencyKey: key() });
    assert.equal(r.isError, false);
    assert.equal(r.replayed, true);
    assert.equal(ENV.target.count("/slow-timeout-js"), 1);
  });

  test("request_in_progress is typed when retries are off", async () => {
    const c = new AgentClient({ apiKey: ENV.apiKey, baseUrl: ENV.baseUrl, timeout: 500, maxRetries: 0 });
    const k = key();
    const args = { path: "/slow-inprogress-js" };
    await assert.rejects(c.tools.call(httpTool.id, { action: "post", arguments: args, idempotencyKey: k }), quiver.APITimeoutError);
    const err = await c.tools.call(httpTool.id, { action: "post", arguments: args, idempotencyKey: k }).catch((e) => e);
    assert.ok(err instanceof quiver.RequestInProgressError, String(err));
    assert.equal(err.status, 409);
    assert.notEqual(err.retryAfter, null);
    await sleep(ENV.target.slowMs + 500);
    const done = await client.tools.call(httpTool.id, { action: "post", arguments: args, idempotencyKey: k });
    assert.equal(done.replayed, true);
    assert.equal(ENV.target.count("/slow-inprogress-js"), 1);
  });

  test("call without key is not retried on a cut", async () => {
    await withProxy({}, async (proxy, c) => {
      proxy.drop("POST", "/custom-tools/call", "after_response");
      await assert.rejects(c.tools.call(httpTool.id, { action: "get", arguments: { path: "/nokey-cut-js" } }), quiver.APIConnectionError);
      assert.equal(proxy.count("POST", "/custom-tools/call"), 1);
      assert.equal(ENV.target.count("/nokey-cut-js"), 1);
    });
  });

  test("GET is retried on a cut, create is not", async () => {
    await withProxy({}, async (proxy, c) => {
      const p = `/custom-tools/${httpTool.id}/`;
      proxy.drop("GET", p, "after_response");
      assert.equal((await c.tools.get(httpTool.id)).id, httpTool.id);
      assert.equal(proxy.count("GET", p), 2);
      proxy.drop("POST", "/custom-tools/", "after_response");
      await assert.rejects(c.tools.create({ mcpTool: "browser" }), quiver.APIConnectionError);
      assert.equal(proxy.count("POST", "/custom-tools/"), 1);
    });
  });

  test("a DELETE whose answer was lost succeeds; a 404 on the first attempt is still NotFoundError", async () => {
    await withProxy({}, async (proxy, c) => {
      const agent = await c.agents.create({ name: "Deleted once", goal: "g" });
      const tool = await c.tools.create({ mcpTool: "browser" });
      for (const [p, del] of [
        [`/agents/${agent.id}/`, () => c.agents.delete(agent.id)],
        [`/custom-tools/${tool.id}/`, () => c.tools.delete(tool.id)],
      ]) {
        proxy.drop("DELETE", p, "after_response"); // the DELETE runs; its answer is lost
        assert.equal(await del(), undefined); // the retry's 404 means it is gone
        assert.equal(proxy.count("DELETE", p), 2);
        await assert.rejects(del(), quiver.NotFoundError);
      }
      await assert.rejects(client.agents.get(agent.id), quiver.NotFoundError);
      await assert.rejects(client.tools.get(tool.id), quiver.NotFoundError);
    });
  });

  test("call by catalog name", async () => {
    const other = new AgentClient({ apiKey: ENV.otherApiKey, baseUrl: ENV.baseUrl });
    await httpToolFor(other);
    const r = await other.tools.call("http-request", { action: "get", arguments: { path: "/by-name-js" } });
    assert.equal(r.isError, false);
    await httpToolFor(other);
    await assert.rejects(other.tools.call("http-request", { action: "get", arguments: { path: "/by-name-js" } }), quiver.ValidationError);
  });

  test("the keys . and .. can be looked up", async () => {
    for (const k of [".", ".."]) {
      const r = await client.tools.call(httpTool.id, { action: "post", arguments: { path: "/dot-key-js", body: { key: k } }, idempotencyKey: k });
      const state = await client.idempotencyKeys.get(k);
      assert.equal(state.key, k);
      assert.equal(state.state, "succeeded");
      assert.equal(state.callId, r.callId);
    }
  });

  test("non-ASCII arguments round-trip, and the replay is byte for byte", async () => {
    const text = "na\u00efve caf\u00e9 \u2013 \u4e2d\u6587 \u{1F600} \u05e2\u05d1\u05e8\u05d9\u05ea e\u0301 \u0000 \u2028";
    const args = { path: "/unicode-js", body: { text, "\u00e9t\u00e9": ["\u20ac", "\u{1F4A9}"] } };
    const k = key();
    const raw = () =>
      fetch(`${ENV.baseUrl}/api/v1/agents/custom-tools/call/`, {
        method: "POST",
        headers: { "X-API-KEY": ENV.apiKey, "Idempotency-Key": k, "Content-Type": "application/json; charset=utf-8" },
        body: JSON.stringify({ tool: httpTool.id, action: "post", arguments: args }),
      });
    const first = await raw();
    assert.equal(first.status, 200);
    const firstBytes = Buffer.from(await first.arrayBuffer());
    const data = JSON.parse(firstBytes.toString("utf8"));
    assert.equal(data.is_error, false, JSON.stringify(data));
    assert.deepEqual(data.result.body.echo, args.body); // the tool got the text intact
    const replayed = await client.tools.call(httpTool.id, { action: "post", arguments: args, idempotencyKey: k });
    assert.equal(replayed.replayed, true);
    assert.equal(replayed.result.body.echo.text, text);
    const again = await raw();
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.ok(Buffer.from(await again.arrayBuffer()).equals(firstBytes), "the replay is byte for byte");
    assert.equal(ENV.target.count("/unicode-js"), 1);
  });
});

// ---------------------------------------------------------------------------------------------
// The seed's JavaScript examples, verbatim (the import line names "flymyai-js-client", the package
// installed under that name, as the README says) except that the client gets its key and URL from
// the test (`new AgentClient({ apiKey: process.env.QUIVER_API_KEY, baseUrl: process.env.QUIVER_BASE_URL })`
// instead of `new AgentClient({ apiKey: "fly-***" })`). Two examples that share a variable run as one
// module, and SEED_ATTACHING ends with one added line that prints the agent for the test to check.
// Each runs as its own ES module that imports the package by name.

const HEADER = `import { AgentClient } from "flymyai-js-client";

const client = new AgentClient({ apiKey: process.env.QUIVER_API_KEY, baseUrl: process.env.QUIVER_BASE_URL });
`;

const SEED_CATALOG = `${HEADER}
const catalog = await client.tools.available();

catalog.forEach(tool => {
    console.log(\`\${tool.name} (\${tool.type})\`);
    console.log(\`  \${tool.title}: \${tool.description}\`);
    console.log(\`  Categories: \${tool.categories}\`);
});
`;

const SEED_CONNECTED = `${HEADER}
for (const tool of await client.tools.list()) {
    console.log(tool.id, tool.mcp_tool, tool.isConfigured ? "configured" : "needs setup");
}
`;

const SEED_ADDING = `${HEADER}
const tool = await client.tools.create({ mcpTool: "tavily" });

console.log(\`Tool ID: \${tool.id}\`);
console.log(\`MCP Tool: \${tool.mcp_tool}\`);
console.log(\`Configured: \${tool.isConfigured}\`);
`;

// "Configuring a Tool" followed by "Calling Tools Directly" (which calls the configured `tool`).
const SEED_CONFIGURING_AND_CALLING = `${HEADER}
let tool = await client.tools.create({ mcpTool: "tavily" });

if (!tool.isConfigured) {
    console.log("Next step:", tool.nextConfigurationStep);

    tool = await client.tools.provideConfig(tool.id, {
        userResponse: { TAVILY_API_KEY: "tvly-***" }
    });

    console.log(\`Now configured: \${tool.isConfigured}\`);
}

const result = await client.tools.call(tool.id, {
    action: "search",
    arguments: { query: "latest AI research papers" }
});

console.log(result);
`;

const SEED_ATTACHING = `${HEADER}
// Create tools
let tavily = await client.tools.create({ mcpTool: "tavily" });
tavily = await client.tools.provideConfig(tavily.id, {
    userResponse: { TAVILY_API_KEY: "tvly-***" }
});

const browser = await client.tools.create({ mcpTool: "browser" });

// Create agent with tools attached
const agent = await client.agents.create({
    name: "Research Assistant",
    goal: "Research the given topic and produce a detailed summary with sources.",
    tools: [tavily.id, browser.id]
});
console.log("AGENT", JSON.stringify(agent), tavily.id, browser.id);
`;

describe("seed JavaScript examples", () => {
  let dir;

  before(() => {
    // A scratch project with this package installed under the seed's name, as
    // `npm install flymyai-js-client@file:…` does (a link in node_modules), so the seed's import resolves.
    dir = mkdtempSync(path.join(os.tmpdir(), "quiver-seed-js-"));
    mkdirSync(path.join(dir, "node_modules"));
    symlinkSync(SDK_ROOT, path.join(dir, "node_modules", "flymyai-js-client"), "dir");
    writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module", private: true }));
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function run(name, source) {
    const file = path.join(dir, `${name}.mjs`);
    writeFileSync(file, source);
    const { stdout } = await execFileP(process.execPath, [file], {
      cwd: dir,
      env: { ...process.env, QUIVER_API_KEY: ENV.apiKey, QUIVER_BASE_URL: ENV.baseUrl },
      timeout: 60_000,
    });
    return stdout;
  }

  test("catalog", async () => {
    const out = await run("catalog", SEED_CATALOG);
    assert.match(out, /^tavily \(builtin\)$/m);
    assert.match(out, /^ {2}Tavily Search: /m);
    assert.match(out, /^ {2}Categories: .*search/m);
  });

  test("adding, configuring, calling, connected tools", async () => {
    const added = await run("adding", SEED_ADDING);
    assert.match(added, /^Tool ID: \d+$/m);
    assert.match(added, /^MCP Tool: tavily$/m);
    assert.match(added, /^Configured: false$/m);

    const before = ENV.tavily.count;
    const out = await run("configuring", SEED_CONFIGURING_AND_CALLING);
    assert.match(out, /Next step: ConfigurationStep \{/);
    assert.match(out, /TAVILY_API_KEY/);
    assert.match(out, /^Now configured: true$/m);
    assert.match(out, /CallResult \{/);
    assert.match(out, /call_id: 'c/);
    assert.match(out, /is_error: false/);
    assert.equal(ENV.tavily.count, before + 1);
    assert.equal(ENV.tavily.requests.at(-1).auth, "Bearer tvly-***");

    const listed = await run("connected", SEED_CONNECTED);
    assert.match(listed, /^\d+ tavily configured$/m);
    assert.match(listed, /^\d+ tavily needs setup$/m);
  });

  test("attaching tools to an agent", async () => {
    const out = await run("attaching", SEED_ATTACHING);
    const m = out.match(/^AGENT (\{.*\}) (\d+) (\d+)$/m);
    assert.ok(m, out);
    const agent = JSON.parse(m[1]);
    assert.equal(agent.name, "Research Assistant");
    assert.deepEqual([...agent.tools].sort((a, b) => a - b), [Number(m[2]), Number(m[3])].sort((a, b) => a - b));
    const fetched = await client.agents.get(agent.id);
    assert.deepEqual(fetched.tools.sort((a, b) => a - b), agent.tools.sort((a, b) => a - b));
  });
});
