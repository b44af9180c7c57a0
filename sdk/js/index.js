// Quiver JavaScript SDK. See README.md.
export { AgentClient, ToolsResource, AgentsResource, IdempotencyKeysResource, DEFAULT_BASE_URL } from "./src/client.js";
export { validateIdempotencyKey } from "./src/transport.js";
export {
  QuiverObject,
  AvailableTool,
  ConfigurationStep,
  Tool,
  Action,
  Agent,
  CallResult,
  CallLogEntry,
  IdempotencyKeyState,
  Page,
} from "./src/models.js";
export {
  QuiverError,
  APIConnectionError,
  APITimeoutError,
  APIStatusError,
  BadRequestError,
  InvalidIdempotencyKeyError,
  IdempotencyKeyRequiredError,
  AuthenticationError,
  PermissionDeniedError,
  NotFoundError,
  ConflictError,
  IdempotencyKeyReusedError,
  RequestInProgressError,
  ToolNotConfiguredError,
  ToolOutcomeUnknownError,
  PayloadTooLargeError,
  ValidationError,
  RateLimitError,
  InternalServerError,
  ToolUnreachableError,
  UpstreamAuthFailedError,
  ServiceUnavailableError,
  errorFromResponse,
} from "./src/errors.js";
export const VERSION = "0.1.0";
