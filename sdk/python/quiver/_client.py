"""The Quiver client: ``AgentClient`` with its ``tools``, ``agents`` and ``idempotency_keys`` resources."""

from __future__ import annotations

import os
import re
import urllib.parse
from typing import Any, Dict, Iterable, List, Mapping, NoReturn, Optional, Type, TypeVar, Union

from ._errors import InvalidRequestError, QuiverError
from ._http import REFUSED_ONLY, SAFE, Response, Transport, validate_idempotency_key
from ._models import (
    Action,
    Agent,
    AvailableTool,
    CallLogEntry,
    CallResult,
    IdempotencyKeyState,
    Page,
    QuiverObject,
    Tool,
)

__all__ = [
    "AgentClient",
    "AgentsResource",
    "ToolsResource",
    "IdempotencyKeysResource",
    "DEFAULT_BASE_URL",
    "NOT_GIVEN",
]

DEFAULT_BASE_URL = "http://localhost:8080"
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 2
# The most pages list(), calls() and available() follow before raising QuiverError: a guard against a
# server whose cursors never end (10,000 pages is 500,000 items at the server's default page size).
MAX_PAGES = 10_000

_API = "/api/v1"
_TOOLS = _API + "/agents/custom-tools/"
_AGENTS = _API + "/agents/"
_CATALOG = _API + "/agents/tools/available/"

T = TypeVar("T", bound=QuiverObject)
ToolRef = Union[int, str, Mapping[str, Any]]


class _NotGiven:
    def __repr__(self) -> str:
        return "NOT_GIVEN"

    def __bool__(self) -> bool:
        return False


NOT_GIVEN: Any = _NotGiven()


def _segment(text: str) -> str:
    """``text`` percent-encoded for a URL path. A lone surrogate ("\\ud800") has no UTF-8 encoding, so no URL
    can carry it: InvalidRequestError, as for one in a request body (quote raises UnicodeEncodeError)."""
    try:
        return urllib.parse.quote(text, safe="")
    except UnicodeEncodeError:
        raise InvalidRequestError(
            f"The request cannot be sent: {text!r} has a lone surrogate, which is not Unicode text and has no URL"
            " form. Nothing was sent."
        ) from None


_DIGITS = re.compile(r"[0-9]+")


def _id(value: Any, what: str = "id") -> str:
    """The path segment for an ID: an int, a string of its decimal digits, or an object with an ``id``.

    Any other string is refused: it would name another route ("calls" makes GET …/custom-tools/calls/,
    the call log, which would come back as a Tool).
    """
    if isinstance(value, Mapping):
        value = value.get("id")
    if isinstance(value, bool) or value is None:
        raise TypeError(f"{what} must be an integer ID, not {value!r}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        text = _segment(value.strip())  # InvalidRequestError for a lone surrogate, as in a name
        if _DIGITS.fullmatch(text):
            return text
    raise TypeError(f"{what} must be an integer ID, not {value!r}")


def _tool_path(tool_id: Any, rest: str = "") -> str:
    return _TOOLS + _id(tool_id, "tool_id") + "/" + rest


def _agent_path(agent_id: Any) -> str:
    return _AGENTS + _id(agent_id, "agent_id") + "/"


# What reading AgentClient.runs says: the seed document's complete example ends with client.runs, which
# executes an agent; Quiver serves an agent's tools, and does not run agents.
NO_RUNS = (
    "Quiver does not run agents, so AgentClient has no runs (the seed document's client.runs.create/wait): "
    "run the agent in your own runtime, and let it reach its tools with client.tools.call(...) or over MCP "
    "at /api/v1/agents/{id}/mcp. See the SDK README."
)


class AgentClient:
    """A client of the Quiver API.

    Args:
        api_key: the API key; defaults to the ``QUIVER_API_KEY`` environment variable.
        base_url: the server's http(s) URL; defaults to ``QUIVER_BASE_URL``, then ``http://localhost:8080``.
        timeout: seconds (> 0) each attempt may take as a whole: connecting, sending, and receiving the
            whole response (a tool call may take as long as the tool); ``None`` for no deadline. A retry
            gets a fresh timeout, after waiting the server's ``Retry-After`` (up to 60 s).
        max_retries: how many times a request is retried when retrying is safe (default 2).
        default_headers: extra headers sent with every request.

    An invalid ``base_url``, ``timeout`` or ``max_retries`` raises :class:`~quiver.InvalidRequestError`
    (a ``ValueError``) here, before any request.

    Example::

        client = AgentClient(api_key="...")
        for entry in client.tools.available():
            print(entry.name, entry.title)
    """

    tools: "ToolsResource"
    agents: "AgentsResource"
    idempotency_keys: "IdempotencyKeysResource"

    def __init__(
        self,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        if api_key is None:
            api_key = os.environ.get("QUIVER_API_KEY") or None
        if base_url is None:
            base_url = os.environ.get("QUIVER_BASE_URL") or DEFAULT_BASE_URL
        self._transport = Transport(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
        )
        self.api_key = api_key
        self.base_url = self._transport.base_url
        self.timeout = self._transport.timeout
        self.max_retries = max_retries
        self.tools = ToolsResource(self._transport)
        self.agents = AgentsResource(self._transport)
        self.idempotency_keys = IdempotencyKeysResource(self._transport)

    @property
    def runs(self) -> NoReturn:
        """Not part of Quiver: reading it raises AttributeError saying so (see the README)."""
        raise AttributeError(NO_RUNS)

    def __repr__(self) -> str:
        return f"AgentClient(base_url={self.base_url!r})"

    def close(self) -> None:
        """Release resources (none are held between requests; provided for symmetry)."""

    def __enter__(self) -> "AgentClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Resource:
    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def _object(self, method: str, path: str, cls: Type[T], **request: Any) -> T:
        """Send a request and wrap the JSON object it answers with as ``cls``."""
        data, response = self._t.request(method, path, **request)
        if not isinstance(data, dict):
            raise _unexpected_shape(response, "a JSON object")
        return cls._from_json(data, response.headers)

    def _get(self, path: str, cls: Type[T], params: Optional[Mapping[str, Any]] = None) -> T:
        return self._object("GET", path, cls, params=params, retry=SAFE)

    def _list(self, path: str, field: str, cls: Type[T], params: Optional[Mapping[str, Any]] = None) -> Page[T]:
        """GET an object with a list of objects in ``field`` (and maybe ``next_cursor``), as one page."""
        data, response = self._t.request("GET", path, params=params, retry=SAFE)
        items = data.get(field) if isinstance(data, dict) else None
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise _unexpected_shape(response, f'an object with "{field}", a list of objects')
        cursor = data.get("next_cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise _unexpected_shape(response, '"next_cursor" must be a string or null')
        return Page([cls._from_json(item) for item in items], cursor)

    def _all(self, path: str, field: str, cls: Type[T], params: Mapping[str, Any]) -> List[T]:
        out: List[T] = []
        params = dict(params)
        seen = set()
        for _ in range(MAX_PAGES):
            page = self._list(path, field, cls, params)
            out.extend(page.items)
            cursor = page.next_cursor
            if not cursor:
                return out
            if cursor in seen:
                raise QuiverError("The server answered a next_cursor it had already given: the list would never end.")
            seen.add(cursor)
            params["cursor"] = cursor
        raise QuiverError(f"Stopped after {MAX_PAGES} pages: the list did not end (a larger limit takes fewer pages).")


class ToolsResource(_Resource):
    """The catalog, the account's connected tools, their configuration, and calling them."""

    # -- catalog ----------------------------------------------------------------------------

    def available(self, category: Optional[str] = None, *, limit: Optional[int] = None) -> List[AvailableTool]:
        """List the catalog: every tool that can be added with :meth:`create`, following ``next_cursor``.

        Args:
            category: only tools of this category (e.g. ``"search"``).
            limit: page size asked of the server (1–200; the server's default is 50).
        """
        return self._all(_CATALOG, "tools", AvailableTool, {"category": category, "limit": limit})

    def available_page(
        self, category: Optional[str] = None, *, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> Page[AvailableTool]:
        """One page of the catalog; pass ``page.next_cursor`` as ``cursor`` for the next."""
        return self._list(_CATALOG, "tools", AvailableTool, {"category": category, "limit": limit, "cursor": cursor})

    def get_available(self, name: str) -> AvailableTool:
        """One catalog entry with its ``config_steps`` and, for fixed-action tools, ``actions``."""
        if not isinstance(name, str):
            raise TypeError(f"name must be a catalog name (a str), not {type(name).__name__}")
        return self._get(_CATALOG + _segment(name) + "/", AvailableTool)

    # -- connected tools --------------------------------------------------------------------

    def list(self, *, limit: Optional[int] = None) -> List[Tool]:
        """Every tool connected to the account, oldest first, following ``next_cursor`` through every page.

        Args:
            limit: page size asked of the server (1–200; the server's default is 50).
        """
        return self._all(_TOOLS, "tools", Tool, {"limit": limit})

    def list_page(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> Page[Tool]:
        """One page of connected tools; pass ``page.next_cursor`` as ``cursor`` for the next."""
        return self._list(_TOOLS, "tools", Tool, {"limit": limit, "cursor": cursor})

    def get(self, tool_id: Union[int, Mapping[str, Any]]) -> Tool:
        """One connected tool by its ID."""
        return self._get(_tool_path(tool_id), Tool)

    def create(self, mcp_tool: str, *, name: Optional[str] = None, **extra: Any) -> Tool:
        """Connect a tool from the catalog (by its catalog ``name``, e.g. ``"tavily"``).

        The returned tool may still need configuration: see ``is_configured`` and
        ``next_configuration_step``, then :meth:`provide_config`. Not retried on a connection
        error (a retry could connect the tool twice).
        """
        body: Dict[str, Any] = {"mcp_tool": mcp_tool}
        if name is not None:
            body["name"] = name
        body.update(extra)
        return self._object("POST", _TOOLS, Tool, body=body, retry=REFUSED_ONLY)

    def provide_config(self, tool_id: Union[int, Mapping[str, Any]], user_response: Mapping[str, Any]) -> Tool:
        """Answer the tool's current configuration step; returns the tool, advanced.

        Raises :class:`~quiver.ValidationError` (with ``fields``) when a value is refused; the tool
        then stays at the same step, and ``TypeError`` when ``user_response`` is not a mapping.
        """
        if not isinstance(user_response, Mapping):
            raise TypeError(
                "user_response must be a mapping (a dict) answering the tool's configuration step, "
                f"not {type(user_response).__name__}"
            )
        return self._object(
            "POST",
            _tool_path(tool_id, "provide-config/"),
            Tool,
            body={"user_response": dict(user_response)},
            retry=REFUSED_ONLY,
        )

    def reset_config(self, tool_id: Union[int, Mapping[str, Any]]) -> Tool:
        """Put the tool back at its first configuration step."""
        return self._object("POST", _tool_path(tool_id, "reset-config/"), Tool, retry=REFUSED_ONLY)

    def actions(self, tool_id: Union[int, Mapping[str, Any]]) -> List[Action]:
        """The actions the tool offers, discovered from its connector."""
        return self._list(_tool_path(tool_id, "actions/"), "actions", Action).items

    def delete(self, tool_id: Union[int, Mapping[str, Any]]) -> None:
        """Delete a connected tool; it is detached from every agent.

        Retried when safe; a 404 after an attempt whose answer was lost means that attempt deleted it,
        so it returns. A 404 on the first attempt raises :class:`~quiver.NotFoundError`.
        """
        self._t.request("DELETE", _tool_path(tool_id), retry=SAFE)

    # -- calling ----------------------------------------------------------------------------

    def call(
        self,
        tool: ToolRef,
        action: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        idempotency_key: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> CallResult:
        """Run one action of a connected tool.

        Args:
            tool: the tool's integer ID (or a :class:`Tool`), or a catalog name (``"tavily"``) naming
                the account's one connected tool of that name.
            action: the action's name (``"search"``).
            arguments: the action's input, a mapping (``TypeError`` otherwise); ``None`` sends ``{}``.
            idempotency_key: your key for this logical operation (1–255 printable ASCII, no leading or
                trailing space). Required by non-retryable actions. Generate it once, before the first
                send, and reuse it for every retry: the server then runs the tool at most once and
                replays the stored result. Never generated by the SDK.
            timeout: seconds each attempt of this call may take as a whole (defaults to the client's timeout).

        With a key, the SDK retries lost connections, timeouts and transient errors with the same
        key. Without one it retries only a refused connection (nothing was sent) and Quiver's ``429
        rate_limited`` and ``503 unavailable`` (the server did nothing), never a proxy's answer without
        Quiver's ``error`` code.
        A tool that ran and reported an error is a result with ``is_error`` true, not an exception.
        """
        if isinstance(tool, bool):
            raise TypeError("tool must be an integer ID or a catalog name")
        if isinstance(tool, Mapping):
            tool = tool.get("id")  # type: ignore[assignment]
        if not isinstance(tool, (int, str)):
            raise TypeError("tool must be an integer ID or a catalog name")
        if not isinstance(action, str) or not action:
            raise TypeError("action must be a non-empty string")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise TypeError(f"arguments must be a mapping (a dict, the action's input), not {type(arguments).__name__}")
        headers = {}
        if idempotency_key is not None:
            headers["Idempotency-Key"] = validate_idempotency_key(idempotency_key)
        body = {"tool": tool, "action": action, "arguments": dict(arguments) if arguments is not None else {}}
        return self._object(
            "POST",
            _TOOLS + "call/",
            CallResult,
            body=body,
            headers=headers,
            retry=SAFE if idempotency_key is not None else REFUSED_ONLY,
            timeout=timeout,
        )

    def calls(self, *, tool: Optional[Union[int, Mapping[str, Any]]] = None, limit: Optional[int] = None) -> List[CallLogEntry]:
        """The call log: every dispatched call (optionally of one tool), oldest first, through every page.

        Args:
            tool: only the calls of this tool (its ID, or a :class:`Tool`).
            limit: page size asked of the server (1–200; the server's default is 50).
        """
        return self._all(_TOOLS + "calls/", "calls", CallLogEntry, _calls_params(tool, limit))

    def calls_page(
        self,
        *,
        tool: Optional[Union[int, Mapping[str, Any]]] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Page[CallLogEntry]:
        """One page of the call log; pass ``page.next_cursor`` as ``cursor`` for the next."""
        params = _calls_params(tool, limit)
        params["cursor"] = cursor
        return self._list(_TOOLS + "calls/", "calls", CallLogEntry, params)


class AgentsResource(_Resource):
    """Agents and the tools attached to them."""

    def create(
        self,
        *,
        name: str,
        goal: Optional[str] = None,
        tools: Optional[Iterable[Union[int, Mapping[str, Any]]]] = None,
        status: Optional[str] = None,
        **extra: Any,
    ) -> Agent:
        """Create an agent.

        Args:
            name: the agent's name.
            goal: what it is for.
            tools: IDs of connected tools to attach (unknown IDs refuse the whole request with ``422``).
            status: ``"draft"``, ``"active"`` or ``"paused"``.
        """
        body: Dict[str, Any] = {"name": name}
        if goal is not None:
            body["goal"] = goal
        if tools is not None:
            body["tools"] = _tool_ids(tools)
        if status is not None:
            body["status"] = status
        body.update(extra)
        return self._object("POST", _AGENTS, Agent, body=body, retry=REFUSED_ONLY)

    def get(self, agent_id: Union[int, Mapping[str, Any]]) -> Agent:
        """One agent by its ID."""
        return self._get(_agent_path(agent_id), Agent)

    def list(self, *, limit: Optional[int] = None) -> List[Agent]:
        """Every agent of the account, following ``next_cursor`` through every page."""
        return self._all(_AGENTS, "agents", Agent, {"limit": limit})

    def list_page(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> Page[Agent]:
        """One page of agents."""
        return self._list(_AGENTS, "agents", Agent, {"limit": limit, "cursor": cursor})

    def update(
        self,
        agent_id: Union[int, Mapping[str, Any]],
        *,
        name: Any = NOT_GIVEN,
        goal: Any = NOT_GIVEN,
        tools: Any = NOT_GIVEN,
        status: Any = NOT_GIVEN,
        **extra: Any,
    ) -> Agent:
        """Change an agent: only the fields given are sent. ``tools`` replaces the whole list."""
        body: Dict[str, Any] = {}
        if name is not NOT_GIVEN:
            body["name"] = name
        if goal is not NOT_GIVEN:
            body["goal"] = goal
        if tools is not NOT_GIVEN:
            body["tools"] = _tool_ids(tools) if tools is not None else None
        if status is not NOT_GIVEN:
            body["status"] = status
        body.update(extra)
        return self._object("PATCH", _agent_path(agent_id), Agent, body=body, retry=REFUSED_ONLY)

    def delete(self, agent_id: Union[int, Mapping[str, Any]]) -> None:
        """Delete an agent (a 404 after an attempt whose answer was lost is success, as for tools)."""
        self._t.request("DELETE", _agent_path(agent_id), retry=SAFE)


class IdempotencyKeysResource(_Resource):
    """The state of idempotency keys of the account."""

    def get(self, key: str) -> IdempotencyKeyState:
        """The state of a key: ``in_progress``, ``succeeded`` or ``outcome_unknown`` (``404`` if unknown)."""
        validate_idempotency_key(key)
        return self._get(_API + "/idempotency-keys/" + urllib.parse.quote(key, safe=""), IdempotencyKeyState)


def _unexpected_shape(response: Response, expected: str) -> QuiverError:
    return QuiverError(
        f"The server answered {response.status} with a body that is not the expected shape: {expected}.",
        status=response.status,
        headers=response.headers,
    )


def _calls_params(tool: Any, limit: Optional[int]) -> Dict[str, Any]:
    params: Dict[str, Any] = {"limit": limit}
    if tool is not None:
        params["tool"] = _id(tool, "tool")
    return params


def _tool_ids(tools: Iterable[Any]) -> List[Any]:
    # A string or a single tool is iterable too, and would go out as its
    # characters or its keys; and a bare ID would raise a TypeError about
    # iteration that does not say what was wrong.
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Iterable):
        raise TypeError(f"tools must be a list of tool IDs, not {type(tools).__name__}")
    out = []
    for t in tools:
        if isinstance(t, Mapping):
            t = t.get("id")
        out.append(t)
    return out
