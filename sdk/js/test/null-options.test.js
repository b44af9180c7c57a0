// `timeout: null` and `maxRetries: null`. The README says there is no "no timeout" value and that a
// non-number timeout, like a bad maxRetries, throws RangeError; but `null` was taken as "not given" and the
// client silently used 60 s and 2 retries. The Python SDK reads `timeout=None` as "no deadline", so a user
// porting that line got a 60-second deadline without a word. null is refused like any other non-number,
// before anything is sent; leaving the option out (or `undefined`) still means the default.

import { test } from "node:test";
import assert from "node:assert/strict";

import { AgentClient } from "quiver-sdk";
import { useFakeServer, fake, client } from "../test-support/fake-client.js";

useFakeServer();

test("timeout: null is a RangeError at construction, as the README says of any non-number", () => {
  assert.throws(() => new AgentClient({ apiKey: "k", baseUrl: fake.url, timeout: null }), RangeError);
});

test("maxRetries: null is a RangeError at construction, as a bad maxRetries is", () => {
  assert.throws(() => new AgentClient({ apiKey: "k", baseUrl: fake.url, maxRetries: null }), RangeError);
  assert.throws(() => new AgentClient({ apiKey: "k", baseUrl: fake.url, max_retries: null }), RangeError);
});

test("tools.call's own timeout: null is a RangeError, and nothing is sent", async () => {
  await assert.rejects(client.tools.call(1, { action: "a", timeout: null }), RangeError);
  assert.equal(fake.requests.length, 0);
});

test("options left out or undefined still take the defaults", async () => {
  const c = new AgentClient({ apiKey: "k", baseUrl: fake.url, timeout: undefined, maxRetries: undefined });
  assert.equal(c.timeout, 60_000);
  assert.equal(c.maxRetries, 2);
  assert.equal(new AgentClient({ apiKey: "k", baseUrl: fake.url, max_retries: 1 }).maxRetries, 1);
  fake.push(200, { call_id: "c", tool: 1, action: "a", is_error: false, result: {}, duration_ms: 1 });
  const result = await client.tools.call(1, { action: "a", timeout: undefined });
  assert.equal(result.call_id, "c");
});
