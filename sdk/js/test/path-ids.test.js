// An ID that goes in a URL path is an integer (or its decimal digits): anything else is refused before
// sending. A string such as "calls" made GET /agents/custom-tools/calls/, the call log, which came back as a
// Tool; and agents.get("custom-tools") answered the tool list as an Agent. Against the scripted fake server.

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { fake, client, useFakeServer } from "../test-support/fake-client.js";

useFakeServer();

describe("IDs in paths", () => {
  const sends = () => [
    ["tools.get", (v) => client.tools.get(v)],
    ["tools.delete", (v) => client.tools.delete(v)],
    ["tools.actions", (v) => client.tools.actions(v)],
    ["tools.resetConfig", (v) => client.tools.resetConfig(v)],
    ["tools.provideConfig", (v) => client.tools.provideConfig(v, { userResponse: {} })],
    ["tools.calls", (v) => client.tools.calls({ tool: v })],
    ["tools.callsPage", (v) => client.tools.callsPage({ tool: v })],
    ["agents.get", (v) => client.agents.get(v)],
    ["agents.update", (v) => client.agents.update(v, { name: "x" })],
    ["agents.delete", (v) => client.agents.delete(v)],
  ];

  test("a string that is not digits is refused", async () => {
    const values = ["calls", "call", "custom-tools", "tools", "available", "1/2", "1?x=2", "-1", "1.0", "1e3", "١٢", "0x10", { id: "calls" }];
    for (const value of values) {
      for (const [name, send] of sends()) {
        await assert.rejects(
          (async () => send(value))(),
          (err) => err instanceof TypeError && /integer ID/.test(err.message),
          `${name}(${JSON.stringify(value)})`,
        );
      }
    }
    assert.deepEqual(fake.requests, []);
  });

  test("digits and integers are sent", async () => {
    fake.push(200, { id: 12 });
    assert.equal((await client.tools.get("12")).id, 12);
    fake.push(200, { id: 12 });
    assert.equal((await client.agents.get(" 12 ")).id, 12);
    fake.push(200, { calls: [], next_cursor: null });
    await client.tools.calls({ tool: "12" });
    fake.push(200, { id: 12 });
    await client.tools.get(12n);
    assert.deepEqual(
      fake.requests.map((r) => r.path),
      ["/api/v1/agents/custom-tools/12/", "/api/v1/agents/12/", "/api/v1/agents/custom-tools/calls/?tool=12", "/api/v1/agents/custom-tools/12/"],
    );
  });
});
