"""``webscraper`` against a real server on 127.0.0.1: the page's text, with the preset user agent."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from loopwright.tools.builtin.webscraper import DEFAULT_USER_AGENT, webscraper_tool
from loopwright.tools.engine import ToolEngine
from loopwright.tools.net import NetworkPolicy
from tests.live_server import serving

LOCAL = NetworkPolicy.from_strings(["127.0.0.1"])
agents: list[str | None] = []


async def page(request: Request) -> Response:
    agents.append(request.headers.get("user-agent"))
    return HTMLResponse(
        "<html><head><title>Tides</title></head><body><p>High tide is at 6:12.</p></body></html>"
    )


APP = Starlette(routes=[Route("/tides", page)])


async def test_the_page_text_with_dify_s_default_user_agent_or_the_preset_one() -> None:
    agents.clear()
    async with serving(APP) as url:
        plain = await ToolEngine([webscraper_tool(LOCAL)]).invoke("webscraper", {"url": f"{url}/tides"})
        preset = webscraper_tool(LOCAL).configure(user_agent="research-desk/1.0", generate_summary=True)
        configured = await ToolEngine([preset]).invoke("webscraper", {"url": f"{url}/tides"})
    assert "High tide is at 6:12." in plain.observation and "Title: Tides" in plain.observation
    assert "High tide is at 6:12." in configured.observation
    assert agents == [DEFAULT_USER_AGENT, "research-desk/1.0"]
    assert webscraper_tool().schema.parameters["required"] == ["url"]  # form parameters are not the model's


async def test_the_ssrf_guard_holds() -> None:
    async with serving(APP) as url:
        result = await ToolEngine([webscraper_tool()]).invoke("webscraper", {"url": f"{url}/tides"})
    assert result.observation.startswith("tool invoke error")
