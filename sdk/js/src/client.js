// The Quiver client: AgentClient with its tools, agents and idempotencyKeys resources.

import { InvalidRequestError, QuiverError } from "./errors.js";
import { REFUSED_ONLY, SAFE, Transport, validateIdempotencyKey } from "./transport.js";
import {
  Action,
  Agent,
  AvailableTool,
  CallLogEntry,
  CallResult,
  IdempotencyKeyState,
  Page,
  Tool,
} from "./models.js";

export const DEFAULT_BASE_URL = "http://localhost:8080";
const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_RETRIES = 2;
/** list() and the like stop with a QuiverError past this many pages (a server that never ends). */
const MAX_PAGES = 10_000;

const API = "/api/v1";
const TOOLS = API + "/agents/custom-tools/";
const AGENTS = API + "/agents/";
const CATALOG = API + "/agents/tools/available/";

function env(name) {
  if (typeof process === "undefined" || !process.env) return undefined;
  const v = process.env[name];
  return v === "" ? undefined : v;
}

/**
 * TypeError for an integer number beyond Number.MAX_SAFE_INTEGER: it may not be the ID it was meant to be
 * (9007199254740993 is the number 9007199254740992). The SDK reads such IDs as BigInt; pass one of those.
 */
function checkSafe(value, what) {
  if (typeof value === "number" && Number.isInteger(value) && !Number.isSafeInteger(value)) {
    throw new TypeError(
      `${what} ${value} is beyond Number.MAX_SAFE_INTEGER, where a number may not be the integer it was written as: ` +
        "pass it as a BigInt (the SDK reads such IDs from the server as BigInt)",
    );
  }
}

/**
 * `text` percent-encoded for a URL. A lone surrogate (half of a UTF-16 pair) has no UTF-8 encoding, so no URL
 * can carry it: InvalidRequestError, as for one in a request body, where encodeURIComponent throws a URIError.
 */
function segment(text) {
  try {
    return encodeURIComponent(text);
  } catch {
    throw new InvalidRequestError(
      `The request cannot be sent: ${JSON.stringify(text)} has a lone surrogate, which is not Unicode text and has no URL form. Nothing was sent.`,
    );
  }
}

/**
 * The path segment for an ID: a number, a BigInt, a string of its decimal digits, or an object with an `id`.
 * Any other string is refused: it would name another route ("calls" makes GET …/custom-tools/calls/, the
 * call log, which would come back as a Tool).
 */
function idOf(value, what = "id") {
  if (value !== null && typeof value === "object") value = value.id;
  checkSafe(value, what);
  if (typeof value === "number" && Number.isInteger(value)) return String(value);
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "string") {
    const text = segment(value.trim()); // InvalidRequestError for a lone surrogate, as in a name
    if (/^[0-9]+$/.test(text)) return text;
  }
  throw new TypeError(`${what} must be an integer ID, not ${JSON.stringify(value)}`);
}

const toolPath = (toolId, rest = "") => TOOLS + idOf(toolId, "toolId") + "/" + rest;
const agentPath = (agentId) => AGENTS + idOf(agentId, "agentId") + "/";

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const kind = (v) => (Array.isArray(v) ? "an array" : v === null ? "null" : typeof v);

/** The value given, or the default when it was left out (undefined); null counts as given. */
function given(value, fallback) {
  return value === undefined ? fallback : value;
}

/** A method's options argument: an object, or undefined for none; TypeError otherwise (calls(11) is not calls({ tool: 11 })). */
function options(params, usage) {
  if (params === undefined) return {};
  if (!isObject(params)) throw new TypeError(`${usage} takes an options object, not ${kind(params)}`);
  return params;
}

function toolIds(tools) {
  if (!Array.isArray(tools)) throw new TypeError(`tools must be an array of tool IDs, not ${kind(tools)}`);
  return tools.map((t) => {
    const id = t !== null && typeof t === "object" ? t.id : t;
    checkSafe(id, "tool ID");
    return id;
  });
}

/** The error for a 2xx answer whose JSON is not what the API defines. */
function unexpected({ status, headers }, expected) {
  return new QuiverError(`The server answered ${status} with a body that is not the expected shape: ${expected} was expected.`, {
    status,
    headers,
  });
}

/** response.data[field] as a list of Cls; QuiverError unless it is an object whose `field` is a list of objects. */
function itemsOf(response, field, Cls) {
  const items = isObject(response.data) ? response.data[field] : undefined;
  if (!Array.isArray(items) || !items.every(isObject)) throw unexpected(response, `an object whose "${field}" is a list of objects`);
  return items.map((item) => new Cls(item));
}

/** The call log's query: the page size, and the tool's ID if one is given. */
function callsQuery(tool, limit) {
  const query = { limit };
  if (tool !== undefined && tool !== null) query.tool = idOf(tool, "tool");
  return query;
}

/** An agent's request body: the given fields, with `tools` reduced to IDs (null kept). */
function agentBody({ tools, ...fields }) {
  const body = { ...fields };
  if (tools !== undefined) body.tools = tools === null ? null : toolIds(tools);
  return body;
}

/** A client of the Quiver API. */
export class AgentClient {
  /**
   * @param {{apiKey?: string, baseUrl?: string, timeout?: number, maxRetries?: number,
   *          defaultHeaders?: Record<string,string>, fetch?: typeof fetch}} [options]
   *   apiKey defaults to QUIVER_API_KEY; baseUrl to QUIVER_BASE_URL, then http://localhost:8080;
   *   timeout is in milliseconds (default 60000); maxRetries defaults to 2. apiKey, baseUrl, maxRetries and
   *   defaultHeaders are read under the Python SDK's names too (api_key, ...); the camelCase one wins.
   */
  constructor(options = {}) {
    // A string would be the Python SDK's positional key: taken for no options, it made a client without one.
    if (!isObject(options)) throw new TypeError(`AgentClient takes an options object ({ apiKey, baseUrl, ... }), not ${kind(options)}`);
    const apiKey = options.apiKey ?? options.api_key ?? env("QUIVER_API_KEY") ?? null;
    const baseUrl = options.baseUrl ?? options.base_url ?? env("QUIVER_BASE_URL") ?? DEFAULT_BASE_URL;
    this._transport = new Transport({
      apiKey,
      baseUrl,
      // Only a missing option takes the default: null is a non-number, refused as one (RangeError), not
      // "no timeout" (there is none) and not the default.
      timeout: given(options.timeout, DEFAULT_TIMEOUT_MS),
      maxRetries: given(options.maxRetries, given(options.max_retries, DEFAULT_MAX_RETRIES)),
      defaultHeaders: options.defaultHeaders ?? options.default_headers,
      fetch: options.fetch,
    });
    // Not enumerable: console.log(client) and JSON.stringify(client) must not show the key (nor the
    // transport's default headers, which may carry a token). client.apiKey still reads it.
    Object.defineProperty(this, "_transport", { value: this._transport, enumerable: false, writable: true });
    Object.defineProperty(this, "apiKey", { value: apiKey, enumerable: false, writable: true });
    this.baseUrl = this._transport.baseUrl;
    this.timeout = this._transport.timeout;
    this.maxRetries = this._transport.maxRetries;
    this.tools = new ToolsResource(this._transport);
    this.agents = new AgentsResource(this._transport);
    this.idempotencyKeys = new IdempotencyKeysResource(this._transport);
  }

  /** Not part of Quiver: reading it throws a TypeError saying so (see the README). */
  get runs() {
    throw new TypeError(NO_RUNS);
  }
}

// What reading AgentClient.runs says: the seed document's complete example ends with client.runs, which
// executes an agent; Quiver serves an agent's tools, and does not run agents.
const NO_RUNS =
  "Quiver does not run agents, so AgentClient has no runs (the seed document's client.runs.create/wait): " +
  "run the agent in your own runtime, and let it reach its tools with client.tools.call(...) or over MCP " +
  "at /api/v1/agents/{id}/mcp. See the SDK README.";

class Resource {
  constructor(transport) {
    Object.defineProperty(this, "_t", { value: transport, enumerable: false });
  }

  /** Send a request and wrap the JSON object it answers with as `Cls` (given the response headers). */
  async _object(method, path, Cls, options) {
    const response = await this._t.request(method, path, options);
    if (!isObject(response.data)) throw unexpected(response, "a JSON object");
    return new Cls(response.data, response.headers);
  }

  async _get(path, Cls, query) {
    return this._object("GET", path, Cls, { query, retry: SAFE });
  }

  async _page(path, field, Cls, query) {
    const response = await this._t.request("GET", path, { query, retry: SAFE });
    const items = itemsOf(response, field, Cls);
    const cursor = response.data.next_cursor ?? null;
    if (cursor !== null && typeof cursor !== "string") throw unexpected(response, "a next_cursor that is a string or null");
    return new Page(items, cursor);
  }

  async _all(path, field, Cls, query) {
    const out = [];
    const q = { ...query };
    const seen = new Set();
    for (let pages = 1; ; pages++) {
      const page = await this._page(path, field, Cls, q);
      for (const item of page.items) out.push(item);
      const cursor = page.nextCursor;
      if (!cursor) return out;
      if (seen.has(cursor)) throw new QuiverError("The server answered a next_cursor it had already given: the list would never end.");
      if (pages >= MAX_PAGES) throw new QuiverError(`Stopped after ${MAX_PAGES} pages: the server still answers with a next_cursor.`);
      seen.add(cursor);
      q.cursor = cursor;
    }
  }
}

/** The catalog, the account's connected tools, their configuration, and calling them. */
export class ToolsResource extends Resource {
  /** The catalog: every tool that can be added with create(), following next_cursor through every page. */
  async available(params) {
    const { category, limit } = options(params, "tools.available({ category, limit })");
    return this._all(CATALOG, "tools", AvailableTool, { category, limit });
  }

  /** One page of the catalog; pass page.nextCursor as cursor for the next. */
  async availablePage(params) {
    const { category, limit, cursor } = options(params, "tools.availablePage({ category, limit, cursor })");
    return this._page(CATALOG, "tools", AvailableTool, { category, limit, cursor });
  }

  /** One catalog entry with its config_steps and, for fixed-action tools, actions. */
  async getAvailable(name) {
    if (typeof name !== "string") throw new TypeError(`name must be a catalog name (a string), not ${kind(name)}`);
    return this._get(CATALOG + segment(name) + "/", AvailableTool);
  }

  /** Every connected tool, oldest first, following next_cursor through every page. */
  async list(params) {
    const { limit } = options(params, "tools.list({ limit })");
    return this._all(TOOLS, "tools", Tool, { limit });
  }

  /** One page of connected tools. */
  async listPage(params) {
    const { limit, cursor } = options(params, "tools.listPage({ limit, cursor })");
    return this._page(TOOLS, "tools", Tool, { limit, cursor });
  }

  /** One connected tool by ID. */
  async get(toolId) {
    return this._get(toolPath(toolId), Tool);
  }

  /**
   * Connect a tool from the catalog: create({ mcpTool: "tavily" }). Not retried on a connection error.
   */
  async create(params) {
    const { mcpTool, mcp_tool, name, ...extra } =
      typeof params === "string" ? { mcpTool: params } : options(params, "tools.create({ mcpTool, name })");
    const body = { mcp_tool: mcpTool ?? mcp_tool };
    if (name !== undefined) body.name = name;
    Object.assign(body, extra);
    return this._object("POST", TOOLS, Tool, { body, retry: REFUSED_ONLY });
  }

  /** Answer the tool's current configuration step: provideConfig(id, { userResponse: {...} }). */
  async provideConfig(toolId, params) {
    const { userResponse: camel, user_response } = options(params, "tools.provideConfig(toolId, { userResponse })");
    const userResponse = camel ?? user_response;
    if (!isObject(userResponse)) {
      throw new TypeError(`userResponse must be an object answering the tool's configuration step, not ${kind(userResponse)}`);
    }
    return this._object("POST", toolPath(toolId, "provide-config/"), Tool, {
      body: { user_response: userResponse },
      retry: REFUSED_ONLY,
    });
  }

  /** Put the tool back at its first configuration step. */
  async resetConfig(toolId) {
    return this._object("POST", toolPath(toolId, "reset-config/"), Tool, { retry: REFUSED_ONLY });
  }

  /** The actions the tool offers, discovered from its connector. */
  async actions(toolId) {
    return itemsOf(await this._t.request("GET", toolPath(toolId, "actions/"), { retry: SAFE }), "actions", Action);
  }

  /**
   * Delete a connected tool; it is detached from every agent. Retried when safe: a 404 after an attempt
   * whose answer was lost means that attempt deleted it, so it resolves; a 404 on the first attempt throws.
   */
  async delete(toolId) {
    await this._t.request("DELETE", toolPath(toolId), { retry: SAFE });
  }

  /**
   * Run one action of a connected tool:
   * call(tool.id, { action: "search", arguments: {...}, idempotencyKey }).
   * With an idempotencyKey the SDK retries lost connections, timeouts and transient errors with the same
   * key; without one it retries only a refused connection (nothing was sent) and Quiver's 429 rate_limited
   * and 503 unavailable (the server did nothing), never a proxy's answer without Quiver's error code. The
   * SDK never generates a key.
   */
  async call(tool, params) {
    if (tool !== null && typeof tool === "object") tool = tool.id;
    if (!(typeof tool === "string" || typeof tool === "bigint" || (typeof tool === "number" && Number.isInteger(tool)))) {
      throw new TypeError("tool must be an integer ID or a catalog name");
    }
    checkSafe(tool, "tool");
    const { action, arguments: args, timeout, idempotencyKey: key, idempotency_key } = options(
      params,
      "tools.call(tool, { action, arguments, idempotencyKey })",
    );
    const idempotencyKey = key ?? idempotency_key;
    if (typeof action !== "string" || action === "") throw new TypeError("action must be a non-empty string");
    if (args != null && !isObject(args)) throw new TypeError(`arguments must be an object (the action's input), not ${kind(args)}`);
    const headers = {};
    if (idempotencyKey !== undefined && idempotencyKey !== null) {
      headers["Idempotency-Key"] = validateIdempotencyKey(idempotencyKey);
    }
    return this._object("POST", TOOLS + "call/", CallResult, {
      body: { tool, action, arguments: args ?? {} },
      headers,
      retry: headers["Idempotency-Key"] !== undefined ? SAFE : REFUSED_ONLY,
      timeout,
    });
  }

  /** The call log: every dispatched call (optionally of one tool), oldest first, through every page. */
  async calls(params) {
    const { tool, limit } = options(params, "tools.calls({ tool, limit })");
    return this._all(TOOLS + "calls/", "calls", CallLogEntry, callsQuery(tool, limit));
  }

  /** One page of the call log; pass page.nextCursor as cursor for the next. */
  async callsPage(params) {
    const { tool, limit, cursor } = options(params, "tools.callsPage({ tool, limit, cursor })");
    return this._page(TOOLS + "calls/", "calls", CallLogEntry, { ...callsQuery(tool, limit), cursor });
  }
}

/** Agents and the tools attached to them. */
export class AgentsResource extends Resource {
  /** create({ name, goal, tools: [id, ...], status }). */
  async create(params) {
    const body = agentBody(options(params, "agents.create({ name, goal, tools, status })"));
    return this._object("POST", AGENTS, Agent, { body, retry: REFUSED_ONLY });
  }

  /** One agent by ID. */
  async get(agentId) {
    return this._get(agentPath(agentId), Agent);
  }

  /** Every agent, following next_cursor through every page. */
  async list(params) {
    const { limit } = options(params, "agents.list({ limit })");
    return this._all(AGENTS, "agents", Agent, { limit });
  }

  /** One page of agents. */
  async listPage(params) {
    const { limit, cursor } = options(params, "agents.listPage({ limit, cursor })");
    return this._page(AGENTS, "agents", Agent, { limit, cursor });
  }

  /**
   * Change an agent; only the fields given are sent, `tools` replaces the whole list.
   * update(agentId, { tools }) or update({ agentId, tools }).
   */
  async update(agentIdOrParams, fields) {
    let agentId = agentIdOrParams;
    let params = options(fields, "agents.update(agentId, { name, goal, tools, status })");
    if (
      agentIdOrParams !== null &&
      typeof agentIdOrParams === "object" &&
      ("agentId" in agentIdOrParams || "agent_id" in agentIdOrParams)
    ) {
      const { agentId: a, agent_id: b, ...rest } = agentIdOrParams;
      agentId = a ?? b;
      params = { ...rest, ...params };
    }
    const body = agentBody(params);
    return this._object("PATCH", agentPath(agentId), Agent, { body, retry: REFUSED_ONLY });
  }

  /** Delete an agent (a 404 after an attempt whose answer was lost resolves, as for tools). */
  async delete(agentId) {
    await this._t.request("DELETE", agentPath(agentId), { retry: SAFE });
  }
}

/** The state of idempotency keys of the account. */
export class IdempotencyKeysResource extends Resource {
  /**
   * The state of a key: in_progress, succeeded or outcome_unknown (NotFoundError if unknown).
   * The keys "." and ".." are sent with node:http rather than fetch, whose URL parser would drop them.
   */
  async get(key) {
    validateIdempotencyKey(key);
    return this._get(API + "/idempotency-keys/" + encodeURIComponent(key), IdempotencyKeyState);
  }
}
