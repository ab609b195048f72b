"""``ask_user`` in a terminal: asked on the TTY, a number picks an option, and without a TTY (a pipe)
the call fails with an observation saying so instead of blocking; on the server it requires approval."""

from __future__ import annotations

import io

from loopwright.tools.builtin import ask_user_tool, terminal_asker
from loopwright.tools.builtin.ask_user import NO_TERMINAL, NOBODY_ANSWERED
from loopwright.tools.engine import ToolEngine


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def ask(tool_input: io.StringIO, out: io.StringIO, **args: object) -> str:
    tool = ask_user_tool(terminal_asker(tool_input, out))
    assert not tool.requires_approval
    return (await ToolEngine([tool]).invoke("ask_user", args)).observation


async def test_the_terminal_is_asked_and_a_number_picks_an_option() -> None:
    out = io.StringIO()
    assert await ask(Terminal("Lyon\n"), out, question="Which city?") == "Lyon"
    assert "? Which city?" in out.getvalue()
    out = io.StringIO()
    answer = await ask(Terminal("2\n"), out, question="Units?", options=["metric", "imperial"])
    assert answer == "imperial" and "  1. metric\n  2. imperial\n" in out.getvalue()
    assert await ask(Terminal("neither\n"), io.StringIO(), question="Units?", options=["metric"]) == "neither"


async def test_without_a_terminal_the_call_fails_clearly() -> None:
    out = io.StringIO()
    observation = await ask(io.StringIO("Lyon\n"), out, question="Which city?")
    assert NO_TERMINAL in observation and out.getvalue() == ""  # nothing was asked
    assert NOBODY_ANSWERED in await ask(Terminal(""), io.StringIO(), question="Which city?")  # end of input
    assert "empty" in await ask(Terminal("x\n"), io.StringIO(), question="  ")


async def test_on_the_server_a_call_waits_for_a_person() -> None:
    tool = ask_user_tool()
    assert tool.requires_approval
    # approved without an answer (the approvals endpoint's "approve"): nobody answered
    result = await ToolEngine([tool]).invoke("ask_user", {"question": "Which city?"})
    assert NOBODY_ANSWERED in result.observation
