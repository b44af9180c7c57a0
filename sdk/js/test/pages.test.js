// The catalog one page at a time, against a real `quiver serve`: it is a list endpoint like the others
// (API.md: ?limit= and ?cursor=, with next_cursor), so it has a page helper like them.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import * as quiver from "quiver-sdk";
import { AgentClient } from "quiver-sdk";
import { startEnv } from "../test-support/harness.js";

let ENV;
let client;

before(async () => {
  ENV = await startEnv();
  client = new AgentClient({ apiKey: ENV.apiKey, baseUrl: ENV.baseUrl, timeout: 30_000 });
}, { timeout: 20 * 60_000 });

after(async () => {
  await ENV?.close();
});

const names = (entries) => [...entries].map((t) => t.name);

test("availablePage() gives the catalog one page at a time; available({ limit }) follows them all", async () => {
  const everything = names(await client.tools.available());
  const first = await client.tools.availablePage({ limit: 2 });
  assert.ok(first instanceof quiver.Page);
  assert.ok(first.items[0] instanceof quiver.AvailableTool);
  assert.equal(first.items.length, 2);
  assert.notEqual(first.nextCursor, null);
  const seen = names(first);
  for (let page = first; page.nextCursor; ) {
    page = await client.tools.availablePage({ limit: 2, cursor: page.nextCursor });
    assert.ok(page.items.length <= 2);
    seen.push(...names(page));
  }
  assert.deepEqual(seen, everything); // each entry once, in the server's order
  assert.deepEqual(names(await client.tools.available({ limit: 2 })), everything);
});

test("a category, one page at a time", async () => {
  const developer = names(await client.tools.available({ category: "developer" }));
  assert.ok(developer.length > 2, String(developer));
  assert.deepEqual(names(await client.tools.available({ category: "developer", limit: 1 })), developer);
  const one = await client.tools.availablePage({ category: "developer", limit: 1 });
  assert.deepEqual(names(one), developer.slice(0, 1));
  assert.notEqual(one.nextCursor, null);
});
