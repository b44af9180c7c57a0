// Values JSON.stringify turns into something else without a word: a Map or Set becomes {}, a typed array
// an object of its indices, a RegExp {}. Sent as the arguments of a call that is not retryable, the tool
// would run once, on other input than the caller gave. Like NaN (which JSON.stringify makes null), they
// are refused before anything is sent, as the Python SDK refuses a set or bytes. A value with its own
// toJSON (a Date, a Buffer) is sent as that gives it.

import { test } from "node:test";
import assert from "node:assert/strict";

import * as quiver from "quiver-sdk";
import { fake, client, lastBody, useFakeServer } from "../test-support/fake-client.js";

useFakeServer();

test("a Map, Set, typed array, ArrayBuffer or RegExp in a body is refused, nothing sent", async () => {
  const bad = {
    map: new Map([["a", 1]]),
    set: new Set([1, 2]),
    weakMap: new WeakMap(),
    weakSet: new WeakSet(),
    bytes: new Uint8Array([1, 2]),
    floats: new Float64Array([1.5]),
    buffer: new ArrayBuffer(2),
    view: new DataView(new ArrayBuffer(2)),
    regexp: /x/,
  };
  for (const [name, value] of Object.entries(bad)) {
    await assert.rejects(
      client.tools.call(1, { action: "post", arguments: { nested: [{ value }] }, idempotencyKey: "k" }),
      (err) => err instanceof quiver.InvalidRequestError && err.message.includes("JSON cannot carry"),
      name,
    );
    await assert.rejects(client.agents.create({ name: "a", extra: value }), quiver.InvalidRequestError, name);
  }
  assert.equal(fake.requests.length, 0);
});

test("a value with its own toJSON is sent as it gives it", async () => {
  fake.push(200, { call_id: "c" });
  await client.tools.call(1, { action: "a", arguments: { b: Buffer.from([7]), d: new Date(0) } });
  assert.deepEqual(lastBody().arguments, { b: { type: "Buffer", data: [7] }, d: "1970-01-01T00:00:00.000Z" });
});
