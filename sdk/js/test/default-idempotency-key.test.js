// An Idempotency-Key among defaultHeaders is checked as a call's key is. API.md: HTTP strips leading and
// trailing whitespace from header values, so "abc " arrives as "abc": the SDKs refuse such keys client-side.
// tools.call({ idempotencyKey }) did, but the same header given in defaultHeaders was sent unchecked: "abc "
// went out and the server saw (and stored) "abc", a key the caller never gave. It is now refused when the
// client is made, whatever the header name's case.

import { test } from "node:test";
import assert from "node:assert/strict";

import { AgentClient, InvalidIdempotencyKeyError } from "quiver-sdk";
import { useFakeServer, fake, makeClient } from "../test-support/fake-client.js";

useFakeServer();

test("a bad default Idempotency-Key is refused when the client is made", () => {
  for (const name of ["Idempotency-Key", "idempotency-key", "IDEMPOTENCY-KEY"]) {
    for (const bad of ["abc ", " abc", "", "a".repeat(256), "cl\u00e9", "a\tb"]) {
      assert.throws(
        () => new AgentClient({ apiKey: "k", baseUrl: fake.url, defaultHeaders: { [name]: bad } }),
        InvalidIdempotencyKeyError,
        `${name}: ${JSON.stringify(bad)}`,
      );
    }
  }
  assert.throws(() => new AgentClient({ apiKey: "k", baseUrl: fake.url, defaultHeaders: { "Idempotency-Key": 5 } }), TypeError);
  assert.equal(fake.requests.length, 0);
});

test("a good default Idempotency-Key is sent, and a call's own key wins over it", async () => {
  const c = makeClient({ defaultHeaders: { "idempotency-key": "kd 1" } });
  fake.push(200, { call_id: "c", tool: 1, action: "a", is_error: false, result: {}, duration_ms: 1 });
  fake.push(200, { call_id: "c", tool: 1, action: "a", is_error: false, result: {}, duration_ms: 1 });
  await c.tools.call(1, { action: "a" });
  await c.tools.call(1, { action: "a", idempotencyKey: "kc" });
  assert.equal(fake.requests[0].headers["idempotency-key"], "kd 1");
  assert.equal(fake.requests[1].headers["idempotency-key"], "kc");
});
