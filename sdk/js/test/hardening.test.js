// What the SDK does with answers and arguments it should not trust: redirects, bodies of the wrong shape,
// bad cursors, Retry-After values, arguments that cannot be sent as given, bad options.

import { test, describe, beforeEach, afterEach } from "node:test";
import assert from "node:assert/strict";
import { inspect } from "node:util";

import * as quiver from "quiver-sdk";
import { AgentClient } from "quiver-sdk";
import { scriptedServer } from "../test-support/harness.js";

let fake;
let client;
let delays;

function makeClient(options = {}) {
  const c = new AgentClient({ apiKey: "k-test", baseUrl: fake.url, ...options });
  delays = [];
  c._transport.sleep = async (ms) => {
    delays.push(ms);
  };
  return c;
}

beforeEach(async () => {
  fake = await scriptedServer();
  client = makeClient();
});

afterEach(async () => {
  await fake.close();
});

/** Assert `promise` rejects with exactly an error of class `Cls` (not a subclass's sibling), and return it. */
async function rejection(promise, Cls) {
  const err = await promise.catch((e) => e);
  assert.ok(err instanceof Cls, `expected ${Cls.name}, got ${err?.name}: ${err?.message}`);
  return err;
}

describe("redirects are not followed", () => {
  test("a 3xx is an APIStatusError, not retried, and the key never reaches the other origin", async () => {
    const other = await scriptedServer();
    try {
      const calls = {
        "tools.create": () => client.tools.create({ mcpTool: "tavily" }),
        "tools.call with key": () => client.tools.call(1, { action: "post", arguments: { a: 1 }, idempotencyKey: "k" }),
        "agents.update": () => client.agents.update(1, { name: "n" }),
        "tools.get": () => client.tools.get(1),
        "idempotencyKeys.get('..')": () => client.idempotencyKeys.get(".."),
      };
      for (const [name, send] of Object.entries(calls)) {
        for (const status of [301, 302, 303, 307, 308]) {
          const before = fake.requests.length;
          fake.push(status, { id: 1 }, { Location: other.url + "/api/v1/agents/custom-tools/" });
          const err = await rejection(send(), quiver.APIStatusError);
          assert.equal(err.status, status, name);
          assert.match(err.message, /redirect/i, name);
          assert.equal(fake.requests.length, before + 1, `${name} ${status} was retried`);
        }
      }
      assert.equal(other.requests.length, 0, "a request reached the redirect's target");
      assert.deepEqual(delays, []);
    } finally {
      await other.close();
    }
  });
});

describe("2xx bodies of the wrong shape", () => {
  test("an object is expected", async () => {
    for (const body of [[1, 2], "hello", 5, true, null]) {
      fake.push(200, body === null ? "null" : JSON.stringify(body), { "Content-Type": "application/json" });
      const err = await rejection(client.tools.get(1), quiver.QuiverError);
      assert.ok(!(err instanceof quiver.APIStatusError));
      assert.equal(err.status, 200);
      assert.match(err.message, /shape|expected/i);
    }
    fake.push(200, "true", { "Content-Type": "application/json" });
    await rejection(client.tools.call(1, { action: "s" }), quiver.QuiverError);
  });

  test("a 2xx that is not JSON shows what came", async () => {
    // A baseUrl naming a web app (which answers every path with its index.html) gets a 200 that is not JSON;
    // the error said only that, while a non-2xx that is not JSON shows its first 200 characters.
    fake.push(200, "<!doctype html><html><head><title>Acme Console</title></head>" + "x".repeat(500), { "Content-Type": "text/html" });
    const err = await rejection(client.tools.list(), quiver.QuiverError);
    assert.equal(err.constructor, quiver.QuiverError);
    assert.match(err.message, /Acme Console/);
    assert.match(err.message, /baseUrl/);
    assert.doesNotMatch(err.message, /x{300}/);
  });

  test("a list is expected, of objects", async () => {
    const cases = [
      () => client.tools.list(),
      () => client.tools.listPage(),
      () => client.agents.list(),
    ];
    for (const send of cases) {
      for (const body of [[1, 2], { tools: { a: 1 }, agents: { a: 1 } }, { tools: "abc", agents: "abc" }, { tools: [1, null], agents: [1, null] }, { tools: [[]], agents: [[]] }]) {
        fake.push(200, body);
        const err = await rejection(send(), quiver.QuiverError);
        assert.ok(!(err instanceof TypeError));
        assert.match(err.message, /shape|expected/i);
      }
    }
    for (const body of [{ actions: 5 }, { actions: ["x"] }, [1]]) {
      fake.push(200, body);
      await rejection(client.tools.actions(1), quiver.QuiverError);
    }
  });
});

describe("pagination", () => {
  test("a cursor that is not a string is an error, not an endless loop", async () => {
    for (const cursor of [[1], { a: 1 }, 5, true]) {
      fake.push(200, { tools: [{ id: 1 }], next_cursor: cursor });
      const before = fake.requests.length;
      const err = await rejection(client.tools.list(), quiver.QuiverError);
      assert.match(err.message, /cursor/);
      assert.equal(fake.requests.length, before + 1);
      fake.push(200, { tools: [], next_cursor: cursor });
      await rejection(client.tools.listPage(), quiver.QuiverError);
    }
  });

  test("a next_cursor already given is a QuiverError, not a short list", async () => {
    fake.push(200, { agents: [{ id: 1 }], next_cursor: "same" });
    fake.push(200, { agents: [{ id: 2 }], next_cursor: "same" });
    const err = await rejection(client.agents.list(), quiver.QuiverError);
    assert.equal(err.constructor, quiver.QuiverError);
    assert.match(err.message, /next_cursor it had already given/);
    assert.equal(fake.requests.length, 2);
  });

  test("pages are capped", async () => {
    const t = client._transport;
    // A server that hands out a new cursor forever.
    let n = 0;
    t.request = async () => ({ data: { tools: [], next_cursor: `c${n++}` }, headers: new Headers(), status: 200 });
    const err = await rejection(client.tools.list(), quiver.QuiverError);
    assert.match(err.message, /pages/);
    assert.equal(n, 10_000);
  });
});

describe("Retry-After", () => {
  test("only delta-seconds or an IMF-fixdate", async () => {
    const c = makeClient({ maxRetries: 0 });
    const future = new Date(Date.now() + 30_000).toUTCString();
    const cases = [
      ["3", 3],
      ["0", 0],
      [" 7 ", 7],
      [future, "date"],
      ["garbage 1", null],
      ["1 2", null],
      ["0x10", null],
      ["1, 2", null],
      ["1.5", null],
      ["-1", null],
      ["+5", null],
      ["1e3", null],
      ["Wednesday, 21-Oct-15 07:28:00 GMT", null],
      ["Wed Oct 21 07:28:00 2015", null],
      ["2015-10-21T07:28:00Z", null],
      ["Wed, 21 Oct 2015 07:28:00 +0000", null],
      ["Wed, 32 Oct 2015 07:28:00 GMT", null],
      ["Wed, 21 Oct 2015 07:28:00 GMT", 0],
    ];
    for (const [value, want] of cases) {
      fake.push(429, { error: "rate_limited", message: "slow" }, { "Retry-After": value });
      const err = await rejection(c.tools.get(1), quiver.RateLimitError);
      if (want === "date") assert.ok(err.retryAfter > 28 && err.retryAfter <= 30, `${value}: ${err.retryAfter}`);
      else assert.equal(err.retryAfter, want, JSON.stringify(value));
    }
  });
});

describe("arguments are checked before anything is sent", () => {
  test("tools must be an array", async () => {
    for (const tools of [1, "12", { id: 1 }, true]) {
      await assert.rejects(client.agents.update(1, { tools }), TypeError);
      await assert.rejects(client.agents.create({ name: "a", goal: "g", tools }), TypeError);
    }
    assert.equal(fake.requests.length, 0);
  });

  test("provideConfig needs a userResponse object", async () => {
    for (const params of [undefined, {}, { userResponse: null }, { user_response: null }, { userResponse: [1] }, { userResponse: "x" }]) {
      await assert.rejects(client.tools.provideConfig(1, params), TypeError, JSON.stringify(params));
    }
    assert.equal(fake.requests.length, 0);
  });

  test("an options argument that is not an object is a TypeError, not ignored", async () => {
    const sends = [
      () => client.tools.calls(11),
      () => client.tools.available("search"),
      () => client.tools.availablePage("search"),
      () => client.tools.list(50),
      () => client.tools.listPage("c1"),
      () => client.agents.list(null),
      () => client.agents.listPage([10]),
      () => client.tools.create(5),
      () => client.tools.provideConfig(1, "x"),
      () => client.tools.call(1, "search"),
      () => client.agents.create("Research Assistant"),
      () => client.agents.update(1, "x"),
    ];
    for (const send of sends) {
      await assert.rejects(async () => send(), (err) => err instanceof TypeError && /options object/.test(err.message), String(send));
    }
    assert.equal(fake.requests.length, 0);
    fake.push(200, { calls: [], next_cursor: null });
    await client.tools.calls({ tool: 11 });
    assert.equal(fake.requests[0].path, "/api/v1/agents/custom-tools/calls/?tool=11");
    fake.push(200, { tools: [], next_cursor: null });
    await client.tools.available(); // no options: fine
    fake.push(201, { id: 1 });
    await client.tools.create("tavily"); // a catalog name: fine
    assert.equal(JSON.parse(fake.requests[2].body).mcp_tool, "tavily");
  });

  test("every method that returns a promise rejects it for a bad argument, and never throws synchronously", async () => {
    // client.tools.get(id).catch(handle) must see the error: a synchronous throw would escape the .catch.
    const sends = {
      "tools.available": () => client.tools.available("search"),
      "tools.availablePage": () => client.tools.availablePage("search"),
      "tools.getAvailable": () => client.tools.getAvailable(undefined),
      "tools.list": () => client.tools.list(50),
      "tools.listPage": () => client.tools.listPage("c1"),
      "tools.get": () => client.tools.get(null),
      "tools.calls": () => client.tools.calls(11),
      "tools.actions": () => client.tools.actions({}),
      "tools.delete": () => client.tools.delete(true),
      "tools.call": () => client.tools.call(1, { action: "a", idempotencyKey: " k" }),
      "agents.get": () => client.agents.get(null),
      "agents.list": () => client.agents.list(null),
      "agents.listPage": () => client.agents.listPage([10]),
      "idempotencyKeys.get": () => client.idempotencyKeys.get(" k"),
    };
    for (const [name, send] of Object.entries(sends)) {
      let promise;
      assert.doesNotThrow(() => {
        promise = send();
      }, name);
      assert.ok(promise instanceof Promise, name);
      await assert.rejects(promise, (err) => err instanceof TypeError || err instanceof quiver.InvalidIdempotencyKeyError, name);
    }
    assert.equal(fake.requests.length, 0);
  });

  test("a lone surrogate in a body is refused before anything is sent, as in the Python SDK", async () => {
    const err = await rejection(client.tools.call(1, { action: "a", arguments: { q: "x\ud800y" }, idempotencyKey: "k" }), quiver.InvalidRequestError);
    assert.match(err.message, /U\+D800/);
    assert.equal(err.status, null);
    assert.match((await rejection(client.agents.create({ name: "\udfff" }), quiver.InvalidRequestError)).message, /U\+DFFF/);
    await rejection(client.tools.provideConfig(1, { userResponse: { ["k\udc00"]: "v" } }), quiver.InvalidRequestError);
    assert.equal(fake.requests.length, 0);
    // A whole pair is text: sent as UTF-8.
    fake.push(200, { call_id: "c" });
    await client.tools.call(1, { action: "a", arguments: { q: "caf\u00e9 \ud83d\ude00" } });
    assert.ok(Buffer.from(fake.requests[0].body).includes(Buffer.from("caf\u00e9 \u{1F600}")));
  });

  test("a lone surrogate in a path segment or query is InvalidRequestError, not a URIError or U+FFFD", async () => {
    for (const [name, promise] of [
      ["tools.getAvailable", client.tools.getAvailable("a\ud800")],
      ["tools.get", client.tools.get("a\udc00")],
      ["tools.calls", client.tools.calls({ tool: "x\ud800" })],
      ["tools.listPage", client.tools.listPage({ cursor: "c\ud800" })],
      ["agents.listPage", client.agents.listPage({ cursor: "\udc00c" })],
      ["tools.callsPage", client.tools.callsPage({ cursor: "c\udfff" })],
    ]) {
      const err = await rejection(promise, quiver.InvalidRequestError);
      assert.match(err.message, /lone surrogate/, name);
    }
    assert.equal(fake.requests.length, 0);
  });

  test("call arguments must be an object", async () => {
    for (const args of [[1, 2], "x", 5, true]) {
      await assert.rejects(client.tools.call(1, { action: "a", arguments: args }), TypeError);
    }
    assert.equal(fake.requests.length, 0);
  });

  test("NaN, Infinity and values JSON cannot carry are refused", async () => {
    const circular = {};
    circular.self = circular;
    const bad = [
      { x: NaN },
      { x: Infinity },
      { x: -Infinity },
      { nested: { list: [1, NaN] } },
      circular,
      { f: () => 1 },
      { s: Symbol("s") },
      { list: [undefined] },
    ];
    for (const args of bad) {
      const err = await rejection(client.tools.call(1, { action: "a", arguments: args, idempotencyKey: "k" }), quiver.InvalidRequestError);
      assert.equal(err.status, null);
    }
    await rejection(client.agents.create({ name: "a", goal: "g", extra: NaN }), quiver.InvalidRequestError);
    await rejection(client.tools.provideConfig(1, { userResponse: { n: Infinity } }), quiver.InvalidRequestError);
    assert.equal(fake.requests.length, 0);
    // undefined members are left out, as JSON.stringify does; a Date is its ISO string.
    fake.push(200, { call_id: "c" });
    await client.tools.call(1, { action: "a", arguments: { a: undefined, d: new Date(0) } });
    assert.deepEqual(JSON.parse(fake.requests[0].body).arguments, { d: "1970-01-01T00:00:00.000Z" });
    // A BigInt is its exact integer literal (JSON.stringify alone would throw).
    fake.push(200, { call_id: "c" });
    await client.tools.call(1, { action: "a", arguments: { big: 2n ** 64n, list: [-1n] } });
    assert.match(fake.requests[1].body, /"arguments":\{"big":18446744073709551616,"list":\[-1\]\}/);
  });
});

describe("client options", () => {
  test("an invalid baseUrl is refused at construction", () => {
    for (const baseUrl of ["not a url", "http://[::1", "http://127.0.0.1:99999", "http://exa mple.com", "localhost:8080", "ftp://x", "http://127.0.0.1:0", "http://u:p@127.0.0.1", "http://127.0.0.1/?x=1", "http://127.0.0.1/#f", "http://"]) {
      assert.throws(() => new AgentClient({ apiKey: "k", baseUrl }), quiver.InvalidRequestError, baseUrl);
    }
    // "" is not "unset": it is refused too (QUIVER_BASE_URL="" is unset).
    assert.throws(() => new AgentClient({ apiKey: "k", baseUrl: "" }), quiver.InvalidRequestError);
    for (const baseUrl of ["http://u:s3cret@127.0.0.1:8080", "http://u:s3cret@127.0.0.1:99999", "http://u:s3cret@h x", "ftp://u:s3cret@h"]) {
      assert.throws(
        () => new AgentClient({ apiKey: "k", baseUrl }),
        (err) => err instanceof quiver.InvalidRequestError && !err.message.includes("s3cret"),
        baseUrl,
      );
    }
    for (const baseUrl of ["http://127.0.0.1:8080", "https://api.example.com/prefix/", "http://[::1]:8080"]) {
      assert.equal(new AgentClient({ apiKey: "k", baseUrl }).baseUrl, baseUrl.replace(/\/+$/, ""));
    }
  });

  test("logging or serialising a client never shows its API key or default headers", async () => {
    // The Python client's repr shows only its base_url; console.log(client) printed the key twice.
    const c = makeClient({ apiKey: "qv_s3cret-key", defaultHeaders: { Authorization: "Bearer s3cret-token" } });
    for (const shown of [inspect(c, { depth: 10 }), JSON.stringify(c), inspect(c.tools, { depth: 10 })]) {
      assert.ok(!shown.includes("s3cret"), shown);
    }
    assert.match(inspect(c), /baseUrl/);
    assert.equal(c.apiKey, "qv_s3cret-key"); // still readable
    fake.push(200, { tools: [], next_cursor: null });
    await c.tools.list();
    assert.equal(fake.requests[0].headers["x-api-key"], "qv_s3cret-key");
    assert.equal(fake.requests[0].headers.authorization, "Bearer s3cret-token");
  });

  test("timeout must be a positive number of milliseconds", async () => {
    for (const timeout of [0, -1, NaN, Infinity, "1000", 2 ** 31]) {
      assert.throws(() => new AgentClient({ apiKey: "k", baseUrl: fake.url, timeout }), RangeError, String(timeout));
    }
    await assert.rejects(client.tools.call(1, { action: "a", timeout: 0 }), RangeError);
    assert.equal(fake.requests.length, 0);
  });

  test("headers differing only in case are merged, the SDK's explicit values winning", async () => {
    const c = makeClient({
      apiKey: "k-real",
      defaultHeaders: { "x-api-key": "k-default", "idempotency-key": "kd", "content-type": "text/plain", "user-agent": "mine", "X-Extra": "1" },
    });
    fake.push(200, { call_id: "c" });
    await c.tools.call(1, { action: "a", idempotencyKey: "kc" });
    const { headers } = fake.requests[0];
    assert.equal(headers["x-api-key"], "k-real");
    assert.equal(headers["idempotency-key"], "kc");
    assert.match(headers["content-type"], /^application\/json/);
    assert.equal(headers["user-agent"], "mine"); // not set explicitly by the caller: the default header wins
    assert.equal(headers["x-extra"], "1");
    // Without an apiKey, a default X-API-KEY is sent.
    const d = makeClient({ apiKey: null, defaultHeaders: { "x-api-key": "k-default" } });
    fake.push(200, { id: 1 });
    await d.tools.get(1);
    assert.equal(fake.requests[1].headers["x-api-key"], "k-default");
  });
});

describe("response objects", () => {
  test("keys named like inherited properties", async () => {
    fake.push(200, '{"id":1,"toString":{"a":1},"valueOf":{"b":2},"constructor":{"c":3},"hasOwnProperty":[{"d":4}],"__proto__":{"is_configured":true}}', {
      "Content-Type": "application/json",
    });
    const tool = await client.tools.get(1);
    assert.ok(tool instanceof quiver.Tool);
    assert.equal(tool.id, 1);
    assert.equal(tool.toString.a, 1);
    assert.equal(tool.valueOf.b, 2);
    assert.equal(tool.constructor.c, 3);
    assert.equal(tool.hasOwnProperty[0].d, 4);
    assert.equal(Object.getPrototypeOf(tool), quiver.Tool.prototype);
    assert.ok(Object.hasOwn(tool, "__proto__"));
    assert.equal(tool.is_configured, undefined);
    assert.equal({}.is_configured, undefined);
    assert.equal(JSON.parse(JSON.stringify(tool))["__proto__"].is_configured, true);
    assert.ok(Object.hasOwn(tool.toJSON(), "__proto__"));
  });
});

describe("errors", () => {
  test("requestId falls back to the body's request_id", async () => {
    const c = makeClient({ maxRetries: 0 });
    fake.push(500, { error: "internal", message: "bug", request_id: "rid-body" });
    let err = await rejection(c.tools.get(1), quiver.InternalServerError);
    assert.equal(err.requestId, "rid-body");
    assert.equal(err.request_id, "rid-body");
    fake.push(500, { error: "internal", message: "bug", request_id: "rid-body" }, { "X-Request-Id": "rid-header" });
    err = await rejection(c.tools.get(1), quiver.InternalServerError);
    assert.equal(err.requestId, "rid-header");
    fake.push(500, { error: "internal", message: "bug", request_id: 5 });
    err = await rejection(c.tools.get(1), quiver.InternalServerError);
    assert.equal(err.requestId, null);
  });
});
