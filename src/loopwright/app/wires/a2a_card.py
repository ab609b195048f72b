"""An app's A2A agent card (protocol 1.0): its name and description, its JSON-RPC endpoint, the app key
as a bearer token, and its skills — the app itself (its description), then each of its tools."""

from __future__ import annotations

from typing import Any

from loopwright.app.errors import AppUnavailableError
from loopwright.app.lookup import KeyedApp
from loopwright.app.run.runtime import AppRuntime
from loopwright.app.wires.a2a import PROTOCOL_VERSION
from loopwright.tools.base import Tool

SCHEME = "appKey"
MODES = ["text/plain", "application/json"]


async def agent_card(runtime: AppRuntime, app: KeyedApp, rpc_url: str) -> dict[str, Any]:
    """The card of ``app``, whose JSON-RPC endpoint is ``rpc_url``."""
    version = await runtime.lookup.latest_config(app.id)
    if version is None:
        raise AppUnavailableError(f"app {app.id} has no configuration")
    agent = await runtime.agent(version, app.id)
    description = app.description or f"The loopwright app {app.name!r}."
    skills: list[dict[str, Any]] = [
        {"id": "ask", "name": app.name, "description": description, "tags": ["chat"]},
    ]
    for tool in agent.tools:
        if isinstance(tool, Tool):  # a toolset's tools are known only when it runs
            skills.append(
                {
                    "id": f"tool:{tool.name}",
                    "name": tool.label or tool.name,
                    "description": tool.description,
                    "tags": ["tool"],
                }
            )
    return {
        "name": app.name,
        "description": description,
        "version": version.id,
        "supportedInterfaces": [
            {"url": rpc_url, "protocolBinding": "JSONRPC", "protocolVersion": PROTOCOL_VERSION}
        ],
        "capabilities": {"streaming": True, "pushNotifications": False, "extendedAgentCard": False},
        "securitySchemes": {
            SCHEME: {
                "httpAuthSecurityScheme": {
                    "scheme": "Bearer",
                    "description": "The app's API key (app-…), as for its Service API.",
                }
            }
        },
        "securityRequirements": [{"schemes": {SCHEME: {"list": []}}}],
        "defaultInputModes": MODES,
        "defaultOutputModes": MODES,
        "skills": skills,
    }
