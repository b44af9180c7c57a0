"""Objects returned by the SDK.

Every object is a ``dict`` of the server's JSON (so ``obj["id"]``, ``json.dumps(obj)`` and
``dict(obj)`` work) that also reads its fields as attributes (``obj.id``). Nested objects are
wrapped the same way, except opaque payloads that belong to the tool or the user
(``result``, ``structured_content``, ``config``, ``input_schema``, ``output_schema``, ``arguments``,
``headers``, ``user_response``), which stay plain JSON values.
"""

from __future__ import annotations

from typing import Any, Dict, Generic, Iterator, List, Mapping, Optional, Type, TypeVar

__all__ = [
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
]

_OPAQUE = frozenset({"result", "structured_content", "config", "input_schema", "output_schema", "arguments",
                     "headers", "user_response"})

T = TypeVar("T", bound="QuiverObject")


class QuiverObject(Dict[str, Any]):
    """A JSON object from the server with attribute access: ``obj.name`` is ``obj["name"]``."""

    __slots__ = ("_response_headers",)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            self[name] = value

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.items())
        return f"{type(self).__name__}({inner})"

    __str__ = __repr__

    def to_dict(self) -> Dict[str, Any]:
        """A deep copy as plain ``dict``/``list`` JSON values."""
        return _plain(self)

    @classmethod
    def _from_json(cls: Type[T], data: Mapping[str, Any], headers: Optional[Mapping[str, str]] = None) -> T:
        obj = cls()
        for key, value in data.items():
            if key in _OPAQUE:
                dict.__setitem__(obj, key, value)
            else:
                dict.__setitem__(obj, key, _wrap(value, _NESTED.get(key, QuiverObject)))
        object.__setattr__(obj, "_response_headers", headers)
        return obj


def _wrap(value: Any, cls: Type[QuiverObject]) -> Any:
    if isinstance(value, dict):
        return cls._from_json(value)
    if isinstance(value, list):
        return [_wrap(v, cls) for v in value]
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class ConfigurationStep(QuiverObject):
    """One configuration step of a tool: a ``form`` with ``fields``, or ``oauth`` with ``authorization_url``.

    An ``oauth`` step of a catalog provider names it in ``provider``. ``error`` is set when the step cannot
    be completed now: ``"oauth_provider_not_configured"`` (an operator must set
    ``QUIVER_OAUTH_<PROVIDER>_CLIENT_ID`` and ``_CLIENT_SECRET``), ``"oauth_unavailable"``, or
    ``"read_only_key"`` (read with a read-only API key); the step then has no ``authorization_url``. Both
    are absent otherwise: read them with ``step.get("error")``.
    """

    __slots__ = ()
    step: str
    index: int
    total: int
    type: str
    title: str
    description: str
    fields: List[QuiverObject]
    authorization_url: str


class AvailableTool(QuiverObject):
    """A catalog entry: what can be added with ``tools.create(mcp_tool=name)``."""

    __slots__ = ()
    name: str
    type: str
    title: str
    description: str
    categories: List[str]
    auth: str
    config_steps: List[ConfigurationStep]
    actions: List["Action"]


class Tool(QuiverObject):
    """A tool connected to the account."""

    __slots__ = ()
    id: int
    mcp_tool: str
    name: str
    type: str
    is_configured: bool
    next_configuration_step: Optional[ConfigurationStep]
    config: Dict[str, Any]
    created_at: str
    updated_at: str


class Action(QuiverObject):
    """An action a tool can run; ``retryable`` actions may be called without an idempotency key.

    ``output_schema`` (the JSON Schema of the action's structured result) is present only when the tool
    declares one: read it with ``action.get("output_schema")``. So is ``title``, a name for people (an MCP
    tool's title): ``action.get("title")``.
    """

    __slots__ = ()
    name: str
    description: str
    input_schema: Dict[str, Any]
    retryable: bool
    annotations: QuiverObject


class Agent(QuiverObject):
    """An agent and the IDs of the tools attached to it."""

    __slots__ = ()
    id: int
    name: str
    goal: str
    status: str
    tools: List[int]
    created_at: str
    updated_at: str


class CallResult(QuiverObject):
    """The outcome of ``tools.call``. ``is_error`` is true when the tool ran and reported an error.

    ``result_type`` is ``"mcp_content"`` when ``result`` is the MCP content array the tool answered with
    (text that is not JSON, images) rather than JSON it produced; it is absent otherwise, so read it with
    ``res.get("result_type")``. ``structured_content`` is the MCP tool's structured content when it is other
    JSON than ``result`` (text ``8``, structured ``{"result": 8}``); absent otherwise.
    """

    __slots__ = ()
    call_id: str
    tool: int
    action: str
    is_error: bool
    result: Any
    duration_ms: int

    @property
    def replayed(self) -> bool:
        """True when the server replayed a stored outcome for the idempotency key (the tool did not run again)."""
        # Unset on a CallResult made from a dict rather than from a response: then it was not replayed.
        headers = getattr(self, "_response_headers", None)
        if not headers:
            return False
        return str(headers.get("Idempotent-Replayed", "")).lower() == "true"


class CallLogEntry(QuiverObject):
    """One dispatched call in the call log (its arguments and result are not in the log).

    ``outcome`` is ``succeeded``, ``tool_error``, ``outcome_unknown`` or ``rejected``.
    """

    __slots__ = ()
    call_id: str
    tool: int
    action: str
    outcome: str
    duration_ms: int
    idempotency_key: Optional[str]
    created_at: str


class IdempotencyKeyState(QuiverObject):
    """The state of an idempotency key: ``in_progress``, ``succeeded`` or ``outcome_unknown``."""

    __slots__ = ()
    key: str
    state: str
    tool: int
    action: str
    call_id: Optional[str]
    created_at: str
    expires_at: str


class Page(Generic[T]):
    """One page of a list endpoint: ``items`` and ``next_cursor`` (``None`` on the last page).

    Iterating a page iterates its items.
    """

    __slots__ = ("items", "next_cursor")

    def __init__(self, items: List[T], next_cursor: Optional[str]) -> None:
        self.items = items
        self.next_cursor = next_cursor

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> T:
        return self.items[index]

    def __repr__(self) -> str:
        return f"Page(items={self.items!r}, next_cursor={self.next_cursor!r})"


_NESTED: Dict[str, Type[QuiverObject]] = {
    "next_configuration_step": ConfigurationStep,
    "config_steps": ConfigurationStep,
    "actions": Action,
}
