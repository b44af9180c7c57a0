"""Quiver Python SDK: connect tools, configure them, attach them to agents, and call them safely.

Quickstart::

    from quiver import AgentClient

    client = AgentClient(api_key="...")          # or QUIVER_API_KEY / QUIVER_BASE_URL
    tavily = client.tools.create(mcp_tool="tavily")
    tavily = client.tools.provide_config(tavily.id, user_response={"TAVILY_API_KEY": "tvly-..."})
    result = client.tools.call(tavily.id, action="search", arguments={"query": "..."})
"""

from ._client import DEFAULT_BASE_URL, NOT_GIVEN, AgentClient, AgentsResource, IdempotencyKeysResource, ToolsResource
from ._errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    IdempotencyKeyRequiredError,
    IdempotencyKeyReusedError,
    InternalServerError,
    InvalidIdempotencyKeyError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    QuiverError,
    RateLimitError,
    RequestInProgressError,
    ServiceUnavailableError,
    ToolNotConfiguredError,
    ToolOutcomeUnknownError,
    ToolUnreachableError,
    UpstreamAuthFailedError,
    ValidationError,
)
from ._http import validate_idempotency_key
from ._models import (
    Action,
    Agent,
    AvailableTool,
    CallLogEntry,
    CallResult,
    ConfigurationStep,
    IdempotencyKeyState,
    Page,
    QuiverObject,
    Tool,
)
from ._version import __version__

__all__ = [
    "AgentClient",
    "AgentsResource",
    "ToolsResource",
    "IdempotencyKeysResource",
    "DEFAULT_BASE_URL",
    "NOT_GIVEN",
    "validate_idempotency_key",
    "__version__",
    # models
    "QuiverObject",
    "AvailableTool",
    "ConfigurationStep",
    "Tool",
    "Action",
    "Agent",
    "CallResult",
    "CallLogEntry",
    "IdempotencyKeyState",
    "Page",
    # errors
    "QuiverError",
    "APIConnectionError",
    "APITimeoutError",
    "APIStatusError",
    "BadRequestError",
    "InvalidIdempotencyKeyError",
    "IdempotencyKeyRequiredError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "IdempotencyKeyReusedError",
    "RequestInProgressError",
    "ToolNotConfiguredError",
    "ToolOutcomeUnknownError",
    "PayloadTooLargeError",
    "ValidationError",
    "RateLimitError",
    "InternalServerError",
    "ToolUnreachableError",
    "UpstreamAuthFailedError",
    "ServiceUnavailableError",
]
