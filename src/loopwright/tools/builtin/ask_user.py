"""``ask_user``: the model asks the user a question and the answer is the call's result.

Who answers depends on where the run is. In a terminal (``loopwright run``/``chat``) the tool is built
with an asker (:func:`terminal_asker`) and asks on the terminal; without a terminal (stdin not a TTY)
the call fails with an observation saying so, instead of blocking on a pipe. On the server it is built
without one: it requires approval, so a call pauses the run durably exactly as a tool approval does,
and the answer comes back as the decision on it (docs/approvals.md: the Human Input form's ``answer``,
or ``"action": "answer"`` on the approvals endpoint); the answer is then the observation and the tool
itself never runs. Approved without an answer, it tells the model nobody answered.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from loopwright.tools.base import Tool, ToolInvokeError
from loopwright.tools.function import function_tool

__all__ = ["ASK_USER", "NOBODY_ANSWERED", "Asker", "ask_user_tool", "terminal_asker"]

ASK_USER = "ask_user"
# the observation of a question nobody answered (the pause timed out, or approved with no answer)
NOBODY_ANSWERED = "Nobody answered the question in time. Carry on without the answer, or say what you need."
NO_TERMINAL = (
    "Cannot ask the user: there is no terminal to ask on (stdin is not a TTY). "
    "Carry on without the answer, or say what you need."
)
# a person at a terminal may take their time; the engine's default timeout is for machines
TERMINAL_TIMEOUT = 3600.0

# A blocking function that asks ``question`` (offering ``options`` when there are any) and returns the
# answer; it runs in a worker thread, never on the event loop.
Asker = Callable[[str, Sequence[str]], str]


def terminal_asker(stdin: TextIO | None = None, stdout: TextIO | None = None) -> Asker:
    """An asker on the terminal (``sys.stdin``/``sys.stderr`` unless given); when stdin is not a TTY
    a call fails with :data:`NO_TERMINAL`. With options, a number picks one; any other text is the
    answer as typed."""

    def ask(question: str, options: Sequence[str]) -> str:
        inp = stdin or sys.stdin
        out = stdout or sys.stderr
        if not inp.isatty():
            raise ToolInvokeError(NO_TERMINAL)
        out.write(f"\n? {question}\n")
        for i, option in enumerate(options, 1):
            out.write(f"  {i}. {option}\n")
        out.write("> ")
        out.flush()
        line = inp.readline()
        if not line:  # end of input: nobody is there to answer
            raise ToolInvokeError(NOBODY_ANSWERED)
        answer = line.strip()
        if answer.isdigit() and 1 <= int(answer) <= len(options):
            return options[int(answer) - 1]
        return answer

    return ask


def ask_user_tool(ask: Asker | None = None) -> Tool:
    """The ``ask_user`` tool; ``ask`` answers it where it runs (a terminal), or None: a call pauses
    the run until a person answers (see the module's docstring)."""

    def ask_user(question: str, options: list[str] | None = None) -> str:
        """Ask the user a question and wait for the answer. Use it only when you cannot go on
        without something only the user knows (a choice, a missing detail).

        Args:
            question: The question, as the user will read it.
            options: The answers to choose from, when the user should pick one.
        """
        question = question.strip()
        if not question:
            raise ToolInvokeError("the question is empty: say what you want to ask the user")
        if ask is None:  # approved on the server without an answer
            raise ToolInvokeError(NOBODY_ANSWERED)
        return ask(question, [str(o) for o in options or []])

    return function_tool(
        ask_user,
        name=ASK_USER,
        requires_approval=ask is None,
        timeout=TERMINAL_TIMEOUT if ask is not None else None,
        idempotent=False,
    )
