// The client's options under the Python SDK's names. AgentClient read api_key, base_url and max_retries, but
// not default_headers: a user porting `AgentClient(api_key=..., base_url=..., default_headers={...})` got a
// client that worked and silently sent none of the headers (a tracing header, a gateway's token).

import { test } from "node:test";
import assert from "node:assert/strict";

import { AgentClient } from "quiver-sdk";
import { useFakeServer, fake } from "../test-support/fake-client.js";

useFakeServer();

test("every option is read under its Python name too, default_headers included", async () => {
  const c = new AgentClient({ api_key: "k-py", base_url: fake.url, max_retries: 0, default_headers: { "X-Trace": "t-1" } });
  assert.deepEqual([c.apiKey, c.baseUrl, c.maxRetries], ["k-py", fake.url, 0]);
  fake.push(200, { tools: [], next_cursor: null });
  await c.tools.list();
  assert.equal(fake.requests[0].headers["x-api-key"], "k-py");
  assert.equal(fake.requests[0].headers["x-trace"], "t-1");
});

test("the camelCase name wins when both are given, as for the other options", async () => {
  const c = new AgentClient({ apiKey: "k", baseUrl: fake.url, defaultHeaders: { "X-Trace": "camel" }, default_headers: { "X-Trace": "snake" } });
  fake.push(200, { tools: [], next_cursor: null });
  await c.tools.list();
  assert.equal(fake.requests[0].headers["x-trace"], "camel");
});

test("a bad default Idempotency-Key under the Python name is refused at construction too", () => {
  assert.throws(() => new AgentClient({ apiKey: "k", baseUrl: fake.url, default_headers: { "Idempotency-Key": "abc " } }), {
    name: "InvalidIdempotencyKeyError",
  });
});
