// The Quiver client: AgentClient with its tools, agents and idempotencyKeys resources.

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

const API = "/api/v1";
const TOOLS = API + "/agents/custom-tools/";
const AGENTS = API + "/agents/";
const CATALOG = API + "/agents/tools/available/";

function env(name) {
  if (typeof process === "undefined" || !process.env) return undefined;
  const v = process.env[name];
  return v === "" ? undefined : v;
}

/** The path segment for an ID: a number, a numeric string, or an object with an `id`. */
function idOf(value, what = "id") {
  if (value !== null && typeof value === "object") value = value.id;
  if (typeof value === "number" && Number.isInteger(value)) return String(value);
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "string" && value.trim() !== "") return encodeURIComponent(value.trim());
  throw new TypeError(`${what} must be an integer ID, not ${JSON.stringify(value)}`);
}

const toolPath = (toolId, rest = "") => TOOLS + idOf(toolId, "toolId") + "/" + rest;
const agentPath = (agentId) => AGENTS + idOf(agentId, "agentId") + "/";

function toolIds(tools) {
  return Array.from(tools, (t) => (t !== null && typeof t === "object" ? t.id : t));
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
   *   timeout is in milliseconds (default 60000); maxRetries defaults to 2.
   */
  constructor(options = {}) {
    const apiKey = options.apiKey ?? options.api_key ?? env("QUIVER_API_KEY") ?? null;
    const baseUrl = (options.baseUrl ?? options.base_url ?? env("QUIVER_BASE_URL") ?? DEFAULT_BASE_URL).replace(
      /\/+$/,
      "",
    );
    this.apiKey = apiKey;
    this.baseUrl = baseUrl;
    this.timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
    this.maxRetries = options.maxRetries ?? options.max_retries ?? DEFAULT_MAX_RETRIES;
    this._transport = new Transport({
      apiKey,
      baseUrl,
      timeout: this.timeout,
      maxRetries: this.maxRetries,
      defaultHeaders: options.defaultHeaders,
      fetch: options.fetch,
    });
    this.tools = new ToolsResource(this._transport);
    this.agents = new AgentsResource(this._transport);
    this.idempotencyKeys = new IdempotencyKeysResource(this._transport);
  }
}

class Resource {
  constructor(transport) {
    Object.defineProperty(this, "_t", { value: transport, enumerable: false });
  }

  /** Send a request and wrap the JSON object it answers with as `Cls` (given the response headers). */
  async _object(method, path, Cls, options) {
    const { data, headers } = await this._t.request(method, path, options);
    return new Cls(data ?? {}, headers);
  }

  _get(path, Cls, query) {
    return this._object("GET", path, Cls, { query, retry: SAFE });
  }

  async _page(path, field, Cls, query) {
    const { data } = await this._t.request("GET", path, { query, retry: SAFE });
    const items = (data?.[field] ?? []).map((item) => new Cls(item));
    return new Page(items, data?.next_cursor ?? null);
  }

  async _all(path, field, Cls, query) {
    const out = [];
    const q = { ...query };
    const seen = new Set();
    for (;;) {
      const page = await this._page(path, field, Cls, q);
      out.push(...page.items);
      const cursor = page.nextCursor;
      if (!cursor || seen.has(cursor)) return out;
      seen.add(cursor);
      q.cursor = cursor;
    }
  }
}

/** The catalog, the account's connected tools, their configuration, and calling them. */
export class ToolsResource extends Resource {
  /** The catalog: every tool that can be added with create(). */
  available({ category } = {}) {
    return this._all(CATALOG, "tools", AvailableTool, { category });
  }

  /** One catalog entry with its config_steps and, for fixed-action tools, actions. */
  getAvailable(name) {
    return this._get(CATALOG + encodeURIComponent(name) + "/", AvailableTool);
  }

  /** Every connected tool, oldest first, following next_cursor through every page. */
  list({ limit } = {}) {
    return this._all(TOOLS, "tools", Tool, { limit });
  }

  /** One page of connected tools. */
  listPage({ limit, cursor } = {}) {
    return this._page(TOOLS, "tools", Tool, { limit, cursor });
  }

  /** One connected tool by ID. */
  get(toolId) {
    return this._get(toolPath(toolId), Tool);
  }

  /**
   * Connect a tool from the catalog: create({ mcpTool: "tavily" }). Not retried on a connection error.
   */
  async create(params = {}) {
    const { mcpTool, mcp_tool, name, ...extra } = typeof params === "string" ? { mcpTool: params } : params;
    const body = { mcp_tool: mcpTool ?? mcp_tool };
    if (name !== undefined) body.name = name;
    Object.assign(body, extra);
    return this._object("POST", TOOLS, Tool, { body, retry: REFUSED_ONLY });
  }

  /** Answer the tool's current configuration step: provideConfig(id, { userResponse: {...} }). */
  async provideConfig(toolId, params = {}) {
    const userResponse = params.userResponse ?? params.user_response ?? {};
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
    const { data } = await this._t.request("GET", toolPath(toolId, "actions/"), { retry: SAFE });
    return (data?.actions ?? []).map((a) => new Action(a));
  }

  /** Delete a connected tool; it is detached from every agent. */
  async delete(toolId) {
    await this._t.request("DELETE", toolPath(toolId), { retry: SAFE });
  }

  /**
   * Run one action of a connected tool:
   * call(tool.id, { action: "search", arguments: {...}, idempotencyKey }).
   * With an idempotencyKey the SDK retries lost connections, timeouts and transient errors with the same
   * key; without one it retries only Quiver's 429 rate_limited and 503 unavailable (the server did
   * nothing), never a proxy's answer without Quiver's error code. The SDK never generates a key.
   */
  async call(tool, params = {}) {
    if (tool !== null && typeof tool === "object") tool = tool.id;
    if (!(typeof tool === "string" || (typeof tool === "number" && Number.isInteger(tool)))) {
      throw new TypeError("tool must be an integer ID or a catalog name");
    }
    const { action, arguments: args, timeout } = params;
    const idempotencyKey = params.idempotencyKey ?? params.idempotency_key;
    if (typeof action !== "string" || action === "") throw new TypeError("action must be a non-empty string");
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

  /** The call log: every dispatched call (optionally of one tool), through every page. */
  calls({ tool, limit } = {}) {
    const query = { limit };
    if (tool !== undefined && tool !== null) query.tool = idOf(tool, "tool");
    return this._all(TOOLS + "calls/", "calls", CallLogEntry, query);
  }
}

/** Agents and the tools attached to them. */
export class AgentsResource extends Resource {
  /** create({ name, goal, tools: [id, ...], status }). */
  async create(params = {}) {
    return this._object("POST", AGENTS, Agent, { body: agentBody(params), retry: REFUSED_ONLY });
  }

  /** One agent by ID. */
  get(agentId) {
    return this._get(agentPath(agentId), Agent);
  }

  /** Every agent, following next_cursor through every page. */
  list({ limit } = {}) {
    return this._all(AGENTS, "agents", Agent, { limit });
  }

  /** One page of agents. */
  listPage({ limit, cursor } = {}) {
    return this._page(AGENTS, "agents", Agent, { limit, cursor });
  }

  /**
   * Change an agent; only the fields given are sent, `tools` replaces the whole list.
   * update(agentId, { tools }) or update({ agentId, tools }).
   */
  async update(agentIdOrParams, fields = {}) {
    let agentId = agentIdOrParams;
    let params = fields;
    if (
      agentIdOrParams !== null &&
      typeof agentIdOrParams === "object" &&
      ("agentId" in agentIdOrParams || "agent_id" in agentIdOrParams)
    ) {
      const { agentId: a, agent_id: b, ...rest } = agentIdOrParams;
      agentId = a ?? b;
      params = { ...rest, ...fields };
    }
    const body = agentBody(params);
    return this._object("PATCH", agentPath(agentId), Agent, { body, retry: REFUSED_ONLY });
  }

  /** Delete an agent. */
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
  get(key) {
    validateIdempotencyKey(key);
    return this._get(API + "/idempotency-keys/" + encodeURIComponent(key), IdempotencyKeyState);
  }
}
