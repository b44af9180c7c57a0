// Type definitions for quiver-sdk 0.1.0 (hand-written; the package is plain ESM JavaScript).

export const VERSION: string;
export const DEFAULT_BASE_URL: string;

export type JSONValue = string | number | bigint | boolean | null | JSONValue[] | { [key: string]: JSONValue };

/**
 * An integer ID (int64): a number, or a bigint beyond Number.MAX_SAFE_INTEGER. The SDK reads every integer
 * beyond that range as a bigint, and writes a bigint as its exact integer literal.
 */
export type ID = number | bigint;

// ---------------------------------------------------------------------------------------------
// Client

export interface AgentClientOptions {
  /** API key; defaults to the QUIVER_API_KEY environment variable. */
  apiKey?: string;
  /**
   * Server URL; defaults to QUIVER_BASE_URL, then http://localhost:8080. An http(s) URL with a host, no
   * credentials, query or fragment; anything else throws InvalidRequestError.
   */
  baseUrl?: string;
  /**
   * Milliseconds each attempt may take as a whole: connect, send, the whole response (default 60000).
   * Must be > 0 and <= 2^31-1 (RangeError otherwise, null too: there is no "no timeout"). Retries, and a
   * Retry-After of up to 60 s honoured before each, can make a whole call take longer.
   */
  timeout?: number;
  /** How many times a request is retried when retrying is safe: an integer >= 0 (default 2; RangeError otherwise, null too). */
  maxRetries?: number;
  /**
   * Extra headers sent with every request; the SDK's own (X-API-KEY, Idempotency-Key, ...) win, whatever the case.
   * An Idempotency-Key among them is checked as a call's is, at construction (InvalidIdempotencyKeyError).
   */
  defaultHeaders?: Record<string, string>;
  /** A fetch implementation (defaults to the global fetch of Node 18+). */
  fetch?: typeof fetch;
  /** The Python SDK's names of apiKey, baseUrl, maxRetries and defaultHeaders; the camelCase one wins. */
  api_key?: string;
  base_url?: string;
  max_retries?: number;
  default_headers?: Record<string, string>;
}

export class AgentClient {
  constructor(options?: AgentClientOptions);
  readonly apiKey: string | null;
  readonly baseUrl: string;
  readonly timeout: number;
  readonly maxRetries: number;
  readonly tools: ToolsResource;
  readonly agents: AgentsResource;
  readonly idempotencyKeys: IdempotencyKeysResource;
  /** Not part of Quiver (it serves an agent's tools, and does not run agents): reading it throws a TypeError. */
  readonly runs: never;
}

/**
 * A tool reference: its integer ID, an object with an `id` (a Tool), or (for call) a catalog name. A number
 * beyond Number.MAX_SAFE_INTEGER is a TypeError (it may not be the ID meant): pass a bigint.
 */
export type IdLike = ID | string | { id: ID };

export interface CallParams {
  /** The action's name, e.g. "search". */
  action: string;
  /**
   * The action's input: an object (TypeError otherwise); NaN, ±Infinity, a lone surrogate in a string, and a
   * Map, Set, RegExp, typed array or ArrayBuffer (JSON.stringify would send {}) are InvalidRequestError; a
   * bigint is sent exactly.
   */
  arguments?: Record<string, unknown>;
  /**
   * Your key for this logical operation: 1–255 printable ASCII characters, no leading/trailing space.
   * Required by non-retryable actions. Generate it once, before the first send, and reuse it for retries.
   */
  idempotencyKey?: string;
  /** Alias of idempotencyKey. */
  idempotency_key?: string;
  /** Milliseconds each attempt of this call may take as a whole, > 0 (defaults to the client's timeout). */
  timeout?: number;
}

/** A method's options argument must be an object, or left out: anything else is a TypeError (calls(11) is not calls({ tool: 11 })). */
export class ToolsResource {
  /** The catalog: every tool that can be added with create(). */
  available(params?: { category?: string; limit?: number }): Promise<AvailableTool[]>;
  availablePage(params?: { category?: string; limit?: number; cursor?: string | null }): Promise<Page<AvailableTool>>;
  /** One catalog entry with its config_steps and, for fixed-action tools, actions. */
  getAvailable(name: string): Promise<AvailableTool>;
  /** Every connected tool, oldest first, following next_cursor through every page (at most 10,000). */
  list(params?: { limit?: number }): Promise<Tool[]>;
  /** One page of connected tools. */
  listPage(params?: { limit?: number; cursor?: string | null }): Promise<Page<Tool>>;
  get(toolId: IdLike): Promise<Tool>;
  /** Connect a tool from the catalog: create({ mcpTool: "tavily" }) (sent as mcp_tool). */
  create(params: { mcpTool?: string; mcp_tool?: string; name?: string; [extra: string]: unknown } | string): Promise<Tool>;
  /** Answer the tool's current configuration step (422 ValidationError when refused; TypeError without an object). */
  provideConfig(
    toolId: IdLike,
    params: { userResponse: Record<string, unknown> } | { user_response: Record<string, unknown> },
  ): Promise<Tool>;
  /** Put the tool back at its first configuration step. */
  resetConfig(toolId: IdLike): Promise<Tool>;
  /** The actions the tool offers, discovered from its connector. */
  actions(toolId: IdLike): Promise<Action[]>;
  /**
   * Delete a connected tool; it is detached from every agent. A 404 after an attempt whose answer was lost
   * resolves (that attempt deleted it); a 404 on the first attempt is NotFoundError.
   */
  delete(toolId: IdLike): Promise<void>;
  /** Run one action of a connected tool. */
  call(tool: IdLike, params: CallParams): Promise<CallResult>;
  /** The call log, oldest first, through every page. */
  calls(params?: { tool?: IdLike; limit?: number }): Promise<CallLogEntry[]>;
  /** One page of the call log; pass page.nextCursor as cursor for the next. */
  callsPage(params?: { tool?: IdLike; limit?: number; cursor?: string | null }): Promise<Page<CallLogEntry>>;
}

export interface AgentFields {
  name?: string;
  goal?: string;
  /** IDs of connected tools; replaces the whole list on update. Not an array: TypeError. */
  tools?: Array<ID | { id: ID }>;
  status?: "draft" | "active" | "paused" | string;
  [extra: string]: unknown;
}

export class AgentsResource {
  create(params: AgentFields & { name: string }): Promise<Agent>;
  get(agentId: IdLike): Promise<Agent>;
  list(params?: { limit?: number }): Promise<Agent[]>;
  listPage(params?: { limit?: number; cursor?: string | null }): Promise<Page<Agent>>;
  /** update(agentId, { tools }) or update({ agentId, tools }); only the given fields are sent. */
  update(agentId: IdLike, fields: AgentFields): Promise<Agent>;
  update(params: AgentFields & { agentId?: IdLike; agent_id?: IdLike }): Promise<Agent>;
  /** Delete an agent (a 404 after an attempt whose answer was lost resolves, as for tools). */
  delete(agentId: IdLike): Promise<void>;
}

export class IdempotencyKeysResource {
  get(key: string): Promise<IdempotencyKeyState>;
}

/** Throws TypeError (not a string) or InvalidIdempotencyKeyError (bad value); returns the key unchanged. */
export function validateIdempotencyKey(key: unknown): string;

// ---------------------------------------------------------------------------------------------
// Objects: the server's snake_case fields plus camelCase aliases.

export class QuiverObject {
  constructor(data?: Record<string, unknown>);
  [field: string]: any;
  /** The fields as a plain object for JSON.stringify; a bigint in them is given as its decimal string. */
  toJSON(): Record<string, unknown>;
}

export interface FormField {
  name: string;
  label?: string;
  type?: string;
  required?: boolean;
  secret?: boolean;
  pattern?: string;
  options?: string[];
  default?: string;
  /** Used, and required, only when each named enum field of the step has one of the listed values. */
  required_when?: Record<string, string[]>;
  [extra: string]: any;
}

export class ConfigurationStep extends QuiverObject {
  step: string;
  index: number;
  total: number;
  type: "form" | "oauth" | string;
  title: string;
  description: string;
  fields?: FormField[];
  authorization_url?: string;
  readonly authorizationUrl?: string;
  /** For an oauth step: the OAuth provider ("github"). */
  provider?: string;
  /**
   * Set when the step cannot be completed now: "oauth_provider_not_configured" (an operator must set
   * QUIVER_OAUTH_<PROVIDER>_CLIENT_ID and _CLIENT_SECRET), "oauth_unavailable", or "read_only_key" (read with
   * a read-only API key, which is given no authorization_url). The step then has no authorization_url.
   */
  error?: "oauth_provider_not_configured" | "oauth_unavailable" | "read_only_key" | string;
}

export class AvailableTool extends QuiverObject {
  name: string;
  type: "builtin" | "mcp" | "custom_mcp" | string;
  title: string;
  description: string;
  categories: string[];
  auth: "none" | "api_key" | "oauth" | string;
  config_steps?: ConfigurationStep[];
  readonly configSteps?: ConfigurationStep[];
  actions?: Action[];
}

export class Tool extends QuiverObject {
  id: ID;
  mcp_tool: string;
  readonly mcpTool: string;
  name: string;
  /** How the tool is reached, as in the catalog. */
  type: "builtin" | "mcp" | "custom_mcp" | string;
  is_configured: boolean;
  readonly isConfigured: boolean;
  next_configuration_step: ConfigurationStep | null;
  readonly nextConfigurationStep: ConfigurationStep | null;
  config: Record<string, unknown>;
  created_at: string;
  readonly createdAt: string;
  updated_at: string;
  readonly updatedAt: string;
}

export class Action extends QuiverObject {
  name: string;
  /** A name for people (an MCP tool's title); present only when the tool gives one. */
  title?: string;
  description: string;
  input_schema: Record<string, unknown>;
  readonly inputSchema: Record<string, unknown>;
  /** The JSON Schema of the action's structured result; present only when the tool declares one. */
  output_schema?: Record<string, unknown>;
  readonly outputSchema?: Record<string, unknown>;
  retryable: boolean;
  /** The MCP tool annotations that decide `retryable`; always present, `{}` where the server declared none. */
  annotations: { readOnlyHint?: boolean; idempotentHint?: boolean; destructiveHint?: boolean; [k: string]: any };
}

export class Agent extends QuiverObject {
  id: ID;
  name: string;
  goal: string;
  status: string;
  tools: ID[];
  created_at: string;
  readonly createdAt: string;
  updated_at: string;
  readonly updatedAt: string;
}

export class CallResult extends QuiverObject {
  call_id: string;
  readonly callId: string;
  tool: ID;
  action: string;
  is_error: boolean;
  readonly isError: boolean;
  /** The tool's output as JSON. */
  result: any;
  /** "mcp_content" when `result` is the MCP content array the tool answered with (text that is not JSON, images); absent otherwise. */
  result_type?: "mcp_content";
  readonly resultType?: "mcp_content";
  /** The MCP tool's structured content when it is other JSON than `result` (text `8`, structured `{"result": 8}`); absent otherwise. */
  structured_content?: any;
  readonly structuredContent?: any;
  duration_ms: number;
  readonly durationMs: number;
  /** True when the server replayed a stored outcome for the idempotency key (the tool did not run again). */
  readonly replayed: boolean;
}

/** One dispatched call in the call log (its arguments and result are not in the log). */
export class CallLogEntry extends QuiverObject {
  call_id: string;
  readonly callId: string;
  tool: ID;
  action: string;
  outcome: "succeeded" | "tool_error" | "outcome_unknown" | "rejected" | string;
  duration_ms: number;
  readonly durationMs: number;
  idempotency_key: string | null;
  readonly idempotencyKey: string | null;
  created_at: string;
  readonly createdAt: string;
}

export class IdempotencyKeyState extends QuiverObject {
  key: string;
  state: "in_progress" | "succeeded" | "outcome_unknown" | string;
  tool: ID;
  action: string;
  call_id: string | null;
  readonly callId: string | null;
  created_at: string;
  readonly createdAt: string;
  expires_at: string;
  readonly expiresAt: string;
}

export class Page<T> implements Iterable<T> {
  constructor(items: T[], nextCursor: string | null);
  items: T[];
  nextCursor: string | null;
  readonly next_cursor: string | null;
  [Symbol.iterator](): Iterator<T>;
}

// ---------------------------------------------------------------------------------------------
// Errors: chosen by the server's `error` code first, then the HTTP status (4xx only: any 5xx without a
// Quiver code, e.g. a proxy's HTML 502/503/504, is an InternalServerError with code null).

export interface QuiverErrorOptions {
  code?: string | null;
  status?: number | null;
  body?: Record<string, any> | null;
  headers?: Headers | null;
  cause?: unknown;
}

export class QuiverError extends Error {
  constructor(message: string, options?: QuiverErrorOptions);
  /** The server's `error` code, or null. */
  code: string | null;
  /** The HTTP status, or null when no response was received. */
  status: number | null;
  readonly statusCode: number | null;
  /** The whole decoded error body. */
  body: Record<string, any>;
  headers: Headers | null;
  /** The X-Request-Id header, else the body's request_id, or null. */
  requestId: string | null;
  readonly request_id: string | null;
  /** Seconds from the Retry-After header (delta-seconds or IMF-fixdate only), or null. */
  retryAfter: number | null;
  readonly retry_after: number | null;
  /**
   * Whether the request provably did nothing, on none of its attempts, so sending it again (same key or a
   * new one) cannot do anything twice: an error thrown before sending, a refused connection, or Quiver's
   * own answer saying so (see the README); false for a cut connection, a timeout, 500, tool_outcome_unknown,
   * idempotency_key_reused, request_in_progress and any answer without Quiver's code.
   */
  readonly didNothing: boolean;
  readonly did_nothing: boolean;
  /** Extra fields of the error body (snake_case and camelCase). */
  [extra: string]: any;
}
/**
 * The request cannot be sent as given (a header HTTP cannot carry, an invalid baseUrl, a body JSON cannot
 * carry such as NaN); thrown before anything is sent, never retried.
 */
export class InvalidRequestError extends QuiverError {}
export class APIConnectionError extends QuiverError {}
export class APITimeoutError extends APIConnectionError {}
/** A non-2xx answer; a 3xx (redirects are not followed) is a plain APIStatusError. */
export class APIStatusError extends QuiverError {}
export class BadRequestError extends APIStatusError {}
export class InvalidJSONError extends BadRequestError {}
export class InvalidIdempotencyKeyError extends BadRequestError {}
export class IdempotencyKeyRequiredError extends BadRequestError {}
export class AuthenticationError extends APIStatusError {}
export class PermissionDeniedError extends APIStatusError {}
export class NotFoundError extends APIStatusError {}
/** 409; `instanceof ConflictError` holds for every 409, the ToolOutcomeUnknownConflictError too. */
export class ConflictError extends APIStatusError {}
export class IdempotencyKeyReusedError extends ConflictError {}
export class RequestInProgressError extends ConflictError {}
export class ToolNotConfiguredError extends ConflictError {
  /** The step to answer, a ConfigurationStep like a tool's (with its camelCase aliases), or null. */
  next_configuration_step?: ConfigurationStep | null;
  nextConfigurationStep?: ConfigurationStep | null;
}
/** 504 or 409 tool_outcome_unknown: terminal for the key. */
export class ToolOutcomeUnknownError extends APIStatusError {}
/** 409 tool_outcome_unknown: instanceof ToolOutcomeUnknownError and instanceof ConflictError. */
export class ToolOutcomeUnknownConflictError extends ToolOutcomeUnknownError {}
export class PayloadTooLargeError extends APIStatusError {}
export class ValidationError extends APIStatusError {
  /** Each bad field and why. */
  fields: Record<string, any>;
}
export class InvalidArgumentsError extends ValidationError {}
export class RateLimitError extends APIStatusError {}
/** 500 internal, and any 5xx without a Quiver code (code null, the real status). */
export class InternalServerError extends APIStatusError {}
export class ToolUnreachableError extends APIStatusError {}
export class UpstreamAuthFailedError extends APIStatusError {}
export class UpstreamRefusedError extends APIStatusError {}
export class ServiceUnavailableError extends APIStatusError {}

export function errorFromResponse(status: number, headers: Headers, text: string): APIStatusError;
