"""The seed document's Python examples, copied verbatim, run against a real server.

The import line is the seed's, `from flymyai import AgentClient`: the SDK answers to that name too
(the `flymyai` package, which is `quiver`). Only the client's construction differs from the seed (its
`AgentClient(api_key="fly-***")` became `AgentClient(api_key=API_KEY, base_url=BASE_URL)`), and the
seed's `client.runs` lines are left out: runs are not part of this API.
"""

from __future__ import annotations

import contextlib
import io
import textwrap
import unittest

import support

ENV: "support.Env"


def setUpModule() -> None:
    global ENV
    ENV = support.env()


# -- "Tool Catalog" ---------------------------------------------------------------------------
CATALOG = '''
from flymyai import AgentClient

client = AgentClient(api_key=API_KEY, base_url=BASE_URL)

catalog = client.tools.available()

for tool in catalog:
    print(f"{tool.name} ({tool.type})")
    print(f"  {tool.title}: {tool.description}")
    print(f"  Categories: {tool.categories}")
'''

# -- "Your Connected Tools" -------------------------------------------------------------------
CONNECTED = '''
for tool in client.tools.list():
    print(tool.id, tool.mcp_tool, "configured" if tool.is_configured else "needs setup")
# 2652 sentry     configured
# 101  github-mcp configured
# 11   tavily     configured
'''

# -- "Adding a Tool" --------------------------------------------------------------------------
ADDING = '''
tool = client.tools.create(mcp_tool="tavily")

print(f"Tool ID: {tool.id}")            # integer ID
print(f"MCP Tool: {tool.mcp_tool}")     # "tavily"
print(f"Configured: {tool.is_configured}")
'''

# -- "Configuring a Tool" ---------------------------------------------------------------------
CONFIGURING = '''
tool = client.tools.create(mcp_tool="tavily")

# Check what configuration is needed
if not tool.is_configured:
    print(f"Next step: {tool.next_configuration_step}")

    # Provide the required configuration
    tool = client.tools.provide_config(
        tool.id,
        user_response={"TAVILY_API_KEY": "tvly-***"}
    )

    print(f"Now configured: {tool.is_configured}")
'''

# -- "Attaching Tools to Agents" --------------------------------------------------------------
ATTACHING = '''
# Create tools
tavily = client.tools.create(mcp_tool="tavily")
tavily = client.tools.provide_config(tavily.id, user_response={"TAVILY_API_KEY": "tvly-***"})

browser = client.tools.create(mcp_tool="browser")

# Create agent with tools attached
agent = client.agents.create(
    name="Research Assistant",
    goal="Research the given topic and produce a detailed summary with sources.",
    tools=[tavily.id, browser.id]
)

# Or update an existing agent's tools
client.agents.update(
    agent_id=agent.id,
    tools=[tavily.id, browser.id]
)
'''

# -- "Calling Tools Directly" -----------------------------------------------------------------
CALLING = '''
result = client.tools.call(
    tool.id,
    action="search",
    arguments={"query": "latest AI research papers"}
)

print(result)
'''

# -- "Complete Example" (without the seed's step 5, `client.runs`) ----------------------------
COMPLETE = '''
from flymyai import AgentClient

client = AgentClient(api_key=API_KEY, base_url=BASE_URL)

# 1. Browse the catalog
catalog = client.tools.available()
for t in catalog:
    print(f"  {t.name}: {t.description}")

# 2. Add tools
tavily = client.tools.create(mcp_tool="tavily")
browser = client.tools.create(mcp_tool="browser")

# 3. Configure tools that need it
tavily = client.tools.provide_config(
    tavily.id,
    user_response={"TAVILY_API_KEY": "tvly-***"}
)

# 4. Create an agent with tools attached
agent = client.agents.create(
    name="Market Researcher",
    goal="Research current market trends and produce a structured analysis.",
    tools=[tavily.id, browser.id],
    status="active"
)
'''


class TestSeedExamples(unittest.TestCase):
    def run_snippets(self, namespace: dict, *snippets: str) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            for snippet in snippets:
                exec(compile(textwrap.dedent(snippet), "<seed example>", "exec"), namespace)
        return out.getvalue()

    def fresh_namespace(self) -> dict:
        return {"__name__": "seed_example", "API_KEY": ENV.api_key, "BASE_URL": ENV.base_url}

    def test_tools_page_examples_in_order(self) -> None:
        ns = self.fresh_namespace()
        before = ENV.tavily.count
        out = self.run_snippets(ns, CATALOG, CONNECTED, ADDING, CONFIGURING, ATTACHING, CALLING)

        self.assertIn("tavily (builtin)", out)
        self.assertIn("  Tavily Search: ", out)
        self.assertIn("  Categories: [", out)
        self.assertIn("MCP Tool: tavily", out)
        self.assertIn("Configured: False", out)
        self.assertIn("Next step: ", out)
        self.assertIn("TAVILY_API_KEY", out)
        self.assertIn("Now configured: True", out)
        self.assertIn("CallResult(", out)
        self.assertIn("latest AI research papers", out)

        client = ns["client"]
        self.assertTrue(ns["tool"].is_configured)
        self.assertFalse(ns["result"].is_error)
        self.assertEqual(ENV.tavily.count, before + 1)
        self.assertEqual(ENV.tavily.requests[-1]["auth"], "Bearer tvly-***")
        agent = client.agents.get(ns["agent"].id)
        self.assertEqual(agent.name, "Research Assistant")
        self.assertEqual(sorted(agent.tools), sorted([ns["tavily"].id, ns["browser"].id]))
        # the listing example prints one line per connected tool, with its configuration state
        configured_id = ns["tool"].id
        listed = self.run_snippets(ns, CONNECTED)
        self.assertIn(f"{configured_id} tavily configured", listed)
        self.assertIn("needs setup", listed)  # the tool from "Adding a Tool" was never configured

    def test_complete_example(self) -> None:
        ns = self.fresh_namespace()
        out = self.run_snippets(ns, COMPLETE)
        self.assertIn("  tavily: ", out)
        agent = ns["agent"]
        self.assertEqual(agent.name, "Market Researcher")
        self.assertEqual(agent.status, "active")
        self.assertEqual(sorted(agent.tools), sorted([ns["tavily"].id, ns["browser"].id]))
        self.assertTrue(ns["tavily"].is_configured)


if __name__ == "__main__":
    unittest.main()
