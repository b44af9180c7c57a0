"""Quiver Python SDK: connect tools, configure them, attach them to agents, and call them safely.

Quickstart::

    from quiver import AgentClient

    client = AgentClient(api_key="...")          # or QUIVER_API_KEY / QUIVER_BASE_URL
    tavily = client.tools.create(mcp_tool="tavily")
    tavily = client.tools.provide_config(tavily.id, user_response={"TAVILY_API_KEY": "tvly-..."})
    result = client.tools.call(tavily.id, action="search", arguments={"query": "..."})
"""

# The public names are each submodule's ``__all__``, re-exported here (not listed twice).
from . import _client, _errors, _models
from ._client import *  # noqa: F401,F403
from ._errors import *  # noqa: F401,F403
from ._http import validate_idempotency_key
from ._models import *  # noqa: F401,F403
from ._version import __version__

__all__ = ["validate_idempotency_key", "__version__"]
__all__ += _client.__all__
__all__ += _models.__all__
__all__ += _errors.__all__
