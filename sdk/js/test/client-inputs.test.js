// A client's own inputs of the wrong kind are refused clearly, before anything is sent. new AgentClient(null)
// failed with "Cannot read properties of null"; new AgentClient("qv_...") (the Python SDK's positional key)
// made a client without a key, whose requests then got 401; an apiKey that is not a string went out as
// String(value); a header whose value is null or undefined went out as "null" or "undefined".

import { test } from "node:test";
import assert from "node:assert/strict";

import * as quiver from "quiver-sdk";
import { AgentClient } from "quiver-sdk";
import { useFakeServer, fake } from "../test-support/fake-client.js";

useFakeServer();

test("the options argument must be an object", () => {
  for (const value of [null, "qv_key", 5, ["qv_key"]]) {
    assert.throws(
      () => new AgentClient(value),
      (err) => err instanceof TypeError && /options object/.test(err.message) && !err.message.includes("qv_key"),
      JSON.stringify(value),
    );
  }
});

test("apiKey must be a string", () => {
  for (const value of [5, ["qv_key"], { key: "qv_key" }]) {
    assert.throws(
      () => new AgentClient({ apiKey: value, baseUrl: fake.url }),
      (err) => err instanceof quiver.InvalidRequestError && /apiKey must be a string/.test(err.message) && !err.message.includes("qv_key"),
      JSON.stringify(value),
    );
  }
});

test("a header without a value is refused", async () => {
  for (const value of [null, undefined]) {
    const c = new AgentClient({ apiKey: "k", baseUrl: fake.url, defaultHeaders: { "X-Trace": value } });
    await assert.rejects(c.tools.list(), (err) => err instanceof quiver.InvalidRequestError && /X-Trace.*no value/.test(err.message));
  }
  assert.deepEqual(fake.requests, []);
});
