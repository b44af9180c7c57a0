// Quiver as the client of MCP servers built on the official TypeScript SDK: a custom-mcp tool configured on
// each, its actions discovered, and its tools called through the real REST API, in each of the SDK's
// streamable-HTTP modes.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";

import { startQuiverEnv } from "../support/quiver.js";
import { startTSServer } from "../support/tsserver.js";

let q;
before(async () => {
  q = await startQuiverEnv();
});
after(async () => {
  await q?.close();
});

const modes = [
  { name: "stateful, SSE", stateful: true, json: false },
  { name: "stateful, JSON responses", stateful: true, json: true },
  { name: "stateless, SSE", stateful: false, json: false },
  { name: "stateless, JSON responses", stateful: false, json: true },
  { name: "stateful, SSE with an event store (priming events)", stateful: true, json: false, resumable: true },
];

for (const mode of modes) {
  describe(`TypeScript MCP server (${mode.name})`, () => {
    let ts;
    let tool;
    before(async () => {
      ts = await startTSServer(mode);
      const { id, configured } = await q.customMCP({ url: ts.url }, `ts-${mode.stateful ? "stateful" : "stateless"}-${mode.json ? "json" : "sse"}${mode.resumable ? "-resumable" : ""}`);
      assert.equal(configured.status, 200, configured.text);
      assert.equal(configured.body.is_configured, true);
      assert.equal(configured.body.next_configuration_step, null);
      tool = id;
    });
    after(async () => {
      await ts?.close();
    });

    test("discovers its tools as actions, annotations deciding retryable", async () => {
      const r = await q.api("GET", `/api/v1/agents/custom-tools/${tool}/actions/`);
      assert.equal(r.status, 200, r.text);
      const by = Object.fromEntries(r.body.actions.map((a) => [a.name, a]));
      assert.deepEqual(Object.keys(by).sort(), ["chatty", "create_order", "explode", "handoff", "lookup", "refuse", "set_flag", "stats"]);
      assert.equal(by.lookup.retryable, true);
      assert.equal(by.lookup.annotations.readOnlyHint, true);
      assert.equal(by.set_flag.retryable, true);
      assert.equal(by.create_order.retryable, false);
      assert.equal(by.lookup.description, "Looks a word up (read-only).");
      assert.equal(by.lookup.input_schema.type, "object");
      assert.deepEqual(by.lookup.input_schema.required, ["word"]);
      assert.equal(by.lookup.input_schema.properties.word.type, "string");
    });

    test("calls a read-only tool, its JSON text parsed into result", async () => {
      const r = await q.call(tool, "lookup", { word: "quiver" });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.is_error, false);
      assert.deepEqual(r.body.result, { word: "quiver", length: 6 });
      assert.equal(r.body.tool, tool);
      assert.equal(r.body.action, "lookup");
    });

    test("a non-retryable tool needs a key, runs once for it, and the retry is replayed", async () => {
      const none = await q.call(tool, "create_order", { item: "arrow" });
      assert.equal(none.status, 400, none.text);
      assert.equal(none.body.error, "idempotency_key_required");
      assert.equal(ts.counts.create_order ?? 0, 0);

      const key = `order-${mode.stateful}-${mode.json}-${mode.resumable}-${Date.now()}`;
      const first = await q.call(tool, "create_order", { item: "arrow", quantity: 3 }, key);
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body.is_error, false);
      assert.deepEqual(first.body.result, { order: 1, item: "arrow", quantity: 3 });
      assert.equal(first.headers.get("idempotent-replayed"), null);

      const second = await q.call(tool, "create_order", { item: "arrow", quantity: 3 }, key);
      assert.equal(second.status, 200, second.text);
      assert.equal(second.headers.get("idempotent-replayed"), "true");
      assert.equal(second.text, first.text);
      assert.equal(ts.counts.create_order, 1);

      const reused = await q.call(tool, "create_order", { item: "bow" }, key);
      assert.equal(reused.status, 409, reused.text);
      assert.equal(reused.body.error, "idempotency_key_reused");
      assert.equal(ts.counts.create_order, 1);
    });

    test("log messages and progress the server sends before its answer are passed over", async () => {
      const r = await q.call(tool, "chatty", { steps: 3 });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.is_error, false);
      assert.deepEqual(r.body.result, { steps: 3 });
      // Paused between steps: the stream comes in pieces, not as one write.
      const slow = await q.call(tool, "chatty", { steps: 3, pauseMs: 60 });
      assert.equal(slow.status, 200, slow.text);
      assert.equal(slow.body.is_error, false);
      assert.deepEqual(slow.body.result, { steps: 3 });
    });

    test("a call whose event stream the server closes before its answer is resumed, and run once", async () => {
      const key = `handoff-${mode.stateful}-${mode.json}-${mode.resumable}-${Date.now()}`;
      const r = await q.call(tool, "handoff", { item: "baton" }, key);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.is_error, false, r.text);
      // Only a stateful server with an event store can close a stream and resume it (GET with Last-Event-ID).
      assert.deepEqual(r.body.result, { item: "baton", n: 1, closed: Boolean(mode.resumable) });
      if (mode.resumable) assert.ok(ts.requests.some((x) => x.method === "GET" && x.lastEventId), "no GET resumed the stream");
      assert.equal(ts.counts.handoff, 1);
    });

    test("an isError result is a 200 with is_error", async () => {
      const r = await q.call(tool, "refuse", { why: "policy" });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.is_error, true);
      assert.match(JSON.stringify(r.body.result), /refused: policy/);
    });

    test("a tool that throws is a tool error, not an outage", async () => {
      const r = await q.call(tool, "explode", {});
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.is_error, true);
      assert.match(JSON.stringify(r.body.result), /kaboom from the TypeScript server/);
    });

    test("arguments the tool's schema refuses are invalid_arguments, nothing sent", async () => {
      const before = ts.counts.create_order ?? 0;
      const r = await q.call(tool, "create_order", { item: 7 }, `bad-args-${Date.now()}`);
      assert.equal(r.status, 422, r.text);
      assert.equal(r.body.error, "invalid_arguments");
      assert.ok(r.body.fields && Object.keys(r.body.fields).length > 0, r.text);
      assert.equal(ts.counts.create_order ?? 0, before);
    });
  });
}

for (const mode of [
  { name: "stateful, SSE", stateful: true, json: false },
  { name: "stateless, JSON responses", stateful: false, json: true },
]) {
  describe(`a TypeScript MCP server checking the Host header (${mode.name})`, () => {
    let ts;
    after(async () => {
      await ts?.close();
    });

    test("configures and calls: every request names the server's own host and port", async () => {
      ts = await startTSServer({ ...mode, checkHost: true });
      const { id, configured } = await q.customMCP({ url: ts.url });
      assert.equal(configured.status, 200, configured.text);
      const read = await q.call(id, "lookup", { word: "host" });
      assert.equal(read.status, 200, read.text);
      assert.equal(read.body.is_error, false, read.text);
      const order = await q.call(id, "create_order", { item: "host" }, `host-${mode.stateful}-${Date.now()}`);
      assert.equal(order.status, 200, order.text);
      assert.equal(order.body.is_error, false, order.text);
      assert.equal(ts.counts.create_order, 1);
    });
  });
}

describe("a TypeScript MCP server behind a bearer token", () => {
  let ts;
  before(async () => {
    ts = await startTSServer({ stateful: true, token: "s3cret-token" });
  });
  after(async () => {
    await ts?.close();
  });

  test("a wrong token is 422 on configure, naming bearer_token; the right one configures", async () => {
    const bad = await q.customMCP({ url: ts.url, bearer_token: "wrong-token" });
    assert.equal(bad.configured.status, 422, bad.configured.text);
    assert.equal(bad.configured.body.error, "validation_error");
    assert.ok(bad.configured.body.fields.bearer_token, bad.configured.text);
    assert.ok(!bad.configured.text.includes("wrong-token"), "the secret is echoed");
    const still = await q.api("GET", `/api/v1/agents/custom-tools/${bad.id}/`);
    assert.equal(still.body.is_configured, false);

    const none = await q.customMCP({ url: ts.url });
    assert.equal(none.configured.status, 422, none.configured.text);

    const good = await q.customMCP({ url: ts.url, bearer_token: "s3cret-token" });
    assert.equal(good.configured.status, 200, good.configured.text);
    const r = await q.call(good.id, "lookup", { word: "auth" });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.result, { word: "auth", length: 4 });
  });

  test("a token the server stops taking is 502 upstream_auth_failed on a call, the key released", async () => {
    const { id, configured } = await q.customMCP({ url: ts.url, bearer_token: "s3cret-token" });
    assert.equal(configured.status, 200, configured.text);
    ts.setToken("rotated-token");
    try {
      const key = `rotated-${Date.now()}`;
      const refused = await q.call(id, "create_order", { item: "rotated" }, key);
      assert.equal(refused.status, 502, refused.text);
      assert.equal(refused.body.error, "upstream_auth_failed");
      assert.equal(ts.counts.create_order ?? 0, 0);
      ts.setToken("s3cret-token");
      const again = await q.call(id, "create_order", { item: "rotated" }, key);
      assert.equal(again.status, 200, again.text);
      assert.equal(again.headers.get("idempotent-replayed"), null);
      assert.equal(ts.counts.create_order, 1);
    } finally {
      ts.setToken("s3cret-token");
    }
  });
});

// The TypeScript SDK answers a call of a tool it does not have (gone since Quiver listed it: a redeploy) with
// an isError result, not a JSON-RPC error: for Quiver that is the tool's outcome, a tool error kept and
// replayed like any other, never an unknown outcome.
describe("a TypeScript MCP server that no longer has a listed tool", () => {
  let ts;
  after(async () => {
    await ts?.close();
  });

  test("a call of it is a tool error, kept and replayed", async () => {
    ts = await startTSServer({ stateful: false, json: true });
    const { id, configured } = await q.customMCP({ url: ts.url });
    assert.equal(configured.status, 200, configured.text);
    // Listed (and so cached) before it goes; a list read after would not have it (404 not_found, nothing sent).
    const listed = await q.api("GET", `/api/v1/agents/custom-tools/${id}/actions/`);
    assert.ok(listed.body.actions.some((a) => a.name === "create_order"), listed.text);
    ts.gone.add("create_order");
    const key = `gone-${Date.now()}`;
    const first = await q.call(id, "create_order", { item: "gone" }, key);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.is_error, true);
    assert.match(JSON.stringify(first.body.result), /create_order not found/);
    const again = await q.call(id, "create_order", { item: "gone" }, key);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.equal(ts.counts.create_order ?? 0, 0);
    const log = await q.api("GET", `/api/v1/agents/custom-tools/calls/?tool=${id}`);
    assert.deepEqual(log.body.calls.map((c) => [c.action, c.outcome]), [["create_order", "tool_error"]]);
  });
});
