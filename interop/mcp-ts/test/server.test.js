// The official TypeScript SDK's Client against an agent's MCP endpoint, /api/v1/agents/{id}/mcp: the agent's
// tool is a custom-mcp tool on a TypeScript-SDK server, so both ends of Quiver speak to the TypeScript SDK.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { startQuiverEnv } from "../support/quiver.js";
import { startTSServer } from "../support/tsserver.js";

let q;
let ts;
let agent;
let toolID;
const TOOL = "orders";

before(async () => {
  q = await startQuiverEnv();
  ts = await startTSServer({ stateful: true });
  const { id, configured } = await q.customMCP({ url: ts.url }, TOOL);
  assert.equal(configured.status, 200, configured.text);
  toolID = id;
  const a = await q.api("POST", "/api/v1/agents/", { name: "ts-agent", goal: "interop", tools: [id], status: "active" });
  assert.equal(a.status, 201, a.text);
  agent = a.body.id;
});
after(async () => {
  await ts?.close();
  await q?.close();
});

async function connect(apiKey = q.apiKey, headers = { "X-API-KEY": apiKey }) {
  const transport = new StreamableHTTPClientTransport(new URL(`${q.baseUrl}/api/v1/agents/${agent}/mcp`), {
    requestInit: { headers },
  });
  const client = new Client({ name: "interop-ts-client", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

// textJSON is the JSON in a result's first text content.
const textJSON = (r) => JSON.parse(r.content.find((c) => c.type === "text").text);

describe("the TypeScript SDK's Client on /api/v1/agents/{id}/mcp", () => {
  let client;
  before(async () => {
    client = await connect();
  });
  after(async () => {
    await client?.close();
  });

  test("initializes", () => {
    assert.ok(client.getServerVersion()?.name, "no serverInfo");
    assert.ok(client.getServerCapabilities()?.tools, "no tools capability");
  });

  test("lists {tool}__{action}, non-retryable ones with a required idempotency_key", async () => {
    const { tools } = await client.listTools();
    const by = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const action of ["lookup", "set_flag", "create_order", "stats", "refuse", "explode"]) {
      assert.ok(by[`${TOOL}__${action}`], `${TOOL}__${action} not listed: ${Object.keys(by)}`);
    }
    const order = by[`${TOOL}__create_order`].inputSchema;
    assert.equal(order.type, "object");
    assert.equal(order.properties.idempotency_key.type, "string");
    assert.ok(order.required.includes("idempotency_key"), JSON.stringify(order));
    assert.ok(order.required.includes("item"), JSON.stringify(order));
    const lookup = by[`${TOOL}__lookup`].inputSchema;
    assert.equal(lookup.properties.idempotency_key, undefined);
    assert.deepEqual(lookup.required, ["word"]);
    assert.equal(by[`${TOOL}__lookup`].annotations?.readOnlyHint, true);
  });

  test("calls a retryable action", async () => {
    const r = await client.callTool({ name: `${TOOL}__lookup`, arguments: { word: "agent" } });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    assert.deepEqual(textJSON(r), { word: "agent", length: 5 });
  });

  test("calls an action with an output schema, its structured content checked by the SDK", async () => {
    await client.listTools(); // the Client validates structuredContent against the listed outputSchema
    const r = await client.callTool({ name: `${TOOL}__stats`, arguments: {} });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    assert.equal(typeof r.structuredContent.lookups, "number");
    assert.equal(typeof r.structuredContent.orders, "number");
  });

  test("a non-retryable action with idempotency_key runs once; the retry is replayed", async () => {
    const before = ts.counts.create_order ?? 0;
    const key = `mcp-order-${Date.now()}`;
    const args = { item: "quiver", quantity: 2, idempotency_key: key };
    const first = await client.callTool({ name: `${TOOL}__create_order`, arguments: args });
    assert.notEqual(first.isError, true, JSON.stringify(first));
    assert.deepEqual(textJSON(first), { order: before + 1, item: "quiver", quantity: 2 });
    assert.notEqual(first._meta?.["quiver/replayed"], true);

    const second = await client.callTool({ name: `${TOOL}__create_order`, arguments: args });
    assert.notEqual(second.isError, true, JSON.stringify(second));
    assert.deepEqual(textJSON(second), textJSON(first));
    assert.equal(second._meta?.["quiver/replayed"], true);
    assert.equal(second._meta?.["quiver/call_id"], first._meta?.["quiver/call_id"]);
    assert.equal(ts.counts.create_order, before + 1);

    // The same key over REST, with the same arguments, is the same request: replayed too.
    const rest = await q.call(toolID, "create_order", { item: "quiver", quantity: 2 }, key);
    assert.equal(rest.status, 200, rest.text);
    assert.equal(rest.headers.get("idempotent-replayed"), "true");
    assert.equal(ts.counts.create_order, before + 1);
  });

  test("a key reused with other arguments is a tool error with the API's code, nothing run", async () => {
    const key = `mcp-reused-${Date.now()}`;
    const first = await client.callTool({ name: `${TOOL}__create_order`, arguments: { item: "one", idempotency_key: key } });
    assert.notEqual(first.isError, true, JSON.stringify(first));
    const count = ts.counts.create_order;
    const other = await client.callTool({ name: `${TOOL}__create_order`, arguments: { item: "two", idempotency_key: key } });
    assert.equal(other.isError, true, JSON.stringify(other));
    assert.equal(textJSON(other).error, "idempotency_key_reused");
    assert.equal(ts.counts.create_order, count);
  });

  test("a refused call of an action with an output schema is an error the SDK accepts", async () => {
    await client.listTools();
    const r = await client.callTool({ name: `${TOOL}__lookup`, arguments: { word: 12 } });
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.equal(textJSON(r).error, "invalid_arguments");
    const typed = await client.callTool({ name: `${TOOL}__stats`, arguments: { surplus: "x" } });
    assert.ok(typed.isError || typeof typed.structuredContent?.lookups === "number", JSON.stringify(typed));
  });

  test("a non-retryable action without idempotency_key is a tool error with the API's code", async () => {
    const before = ts.counts.create_order ?? 0;
    const r = await client.callTool({ name: `${TOOL}__create_order`, arguments: { item: "nokey" } });
    assert.equal(r.isError, true, JSON.stringify(r));
    const env = textJSON(r);
    assert.equal(env.error, "idempotency_key_required", JSON.stringify(env));
    assert.equal(typeof env.message, "string");
    assert.equal(ts.counts.create_order ?? 0, before);
  });

  test("the tool's own isError and a throwing tool come back as tool errors", async () => {
    const refused = await client.callTool({ name: `${TOOL}__refuse`, arguments: { why: "policy" } });
    assert.equal(refused.isError, true, JSON.stringify(refused));
    assert.match(JSON.stringify(refused.content), /refused: policy/);
    const thrown = await client.callTool({ name: `${TOOL}__explode`, arguments: {} });
    assert.equal(thrown.isError, true, JSON.stringify(thrown));
    assert.match(JSON.stringify(thrown.content), /kaboom from the TypeScript server/);
  });
});

test("a bad API key is refused with 401", async () => {
  await assert.rejects(connect("not-a-key"), (err) => {
    assert.ok(err instanceof StreamableHTTPError, String(err));
    assert.equal(err.code, 401, String(err));
    return true;
  });
});

test("the key as Authorization: Bearer works too", async () => {
  const client = await connect(undefined, { Authorization: `Bearer ${q.apiKey}` });
  try {
    const r = await client.callTool({ name: `${TOOL}__lookup`, arguments: { word: "bearer" } });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    assert.deepEqual(textJSON(r), { word: "bearer", length: 6 });
  } finally {
    await client.close();
  }
  await assert.rejects(connect(undefined, { Authorization: "Bearer not-a-key" }), (err) => err instanceof StreamableHTTPError && err.code === 401);
});
