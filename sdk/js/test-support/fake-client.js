// The fake-server suites' shared setup: before each test a scripted fake server and a client of it whose
// retry sleeps are recorded instead of slept. Its bindings are live: `fake`, `client` and `delays` are the
// current test's. (Kept outside test/ so `node --test test/` does not run it as a test.)

import { beforeEach, afterEach } from "node:test";

import { AgentClient } from "quiver-sdk";
import { scriptedServer } from "./harness.js";

export let fake;
export let client;
export let delays;

// makeClient returns a client of the fake server with options; its sleeps are recorded in a fresh `delays`.
export function makeClient(options = {}) {
  const c = new AgentClient({ apiKey: "k-test", baseUrl: fake.url + "/", ...options });
  delays = [];
  c._transport.sleep = async (ms) => {
    delays.push(ms);
  };
  return c;
}

// lastBody is the JSON body of the last request the fake server got.
export const lastBody = () => JSON.parse(fake.requests.at(-1).body);

// useFakeServer registers the setup with the calling test file.
export function useFakeServer() {
  beforeEach(async () => {
    fake = await scriptedServer();
    client = makeClient();
  });
  afterEach(async () => {
    await fake.close();
  });
}
