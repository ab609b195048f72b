"""``webscraper``: Dify's web scraper — a page's readable text, fetched through the SSRF guard (the same
fetch and extraction as ``web_fetch``), with the ``user_agent`` a Dify app may preset."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from loopwright._threads import run_sync
from loopwright.tools.base import TextMessage, Tool, ToolContext, ToolOutput, ToolParameter
from loopwright.tools.builtin import web_fetch
from loopwright.tools.net import DEFAULT_POLICY, NetworkPolicy

# Dify's default (its webscraper.yaml)
DEFAULT_USER_AGENT = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/100.0.1000.0 Safari/537.36"
)


def webscraper_tool(policy: NetworkPolicy = DEFAULT_POLICY) -> Tool:
    """The ``webscraper`` tool. ``generate_summary`` (Dify summarises with the app's model) is accepted
    and the page's text returned: the agent's model reads it anyway."""

    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        url = str(args.get("url") or "").strip()
        agent = str(args.get("user_agent") or DEFAULT_USER_AGENT)
        page = await web_fetch.fetch(
            url, policy, max_bytes=web_fetch.MAX_BYTES, timeouts=web_fetch.TIMEOUT, user_agent=agent
        )
        yield TextMessage(await run_sync(web_fetch.render, page, web_fetch.MAX_CHARS))

    return Tool(
        name="webscraper",
        label="Web Scraper",
        description="A tool for scraping webpages. Input should be a URL.",
        parameters=(
            ToolParameter("url", "string", required=True, description="url for scraping"),
            ToolParameter("user_agent", "string", form="form", default=DEFAULT_USER_AGENT),
            ToolParameter("generate_summary", "boolean", form="form", default=False),
        ),
        invoke=invoke,
    )
