"""``SelectedTools``: a toolset offering only some of another toolset's tools, by name."""

from __future__ import annotations

from collections.abc import Sequence

from loopwright.tools.base import Tool, ToolError, ToolLike


class SelectedTools:
    """The tools of ``inner`` named in ``names`` (in the inner order); a name the inner toolset does not
    have is an error when the tools are listed, so a misspelt selection is not silently empty.
    ``aclose`` is passed on (an MCP server's session)."""

    def __init__(self, inner: ToolLike, names: Sequence[str]) -> None:
        self.inner = inner
        self.names = list(names)

    async def get_tools(self) -> list[Tool]:
        tools = [self.inner] if isinstance(self.inner, Tool) else list(await self.inner.get_tools())
        known = {t.name for t in tools}
        missing = [n for n in self.names if n not in known]
        if missing:
            raise ToolError(f"the toolset has no tool {missing[0]!r}; it has: {', '.join(sorted(known))}")
        wanted = set(self.names)
        return [t for t in tools if t.name in wanted]

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()
