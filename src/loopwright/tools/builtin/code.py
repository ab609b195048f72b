"""``simple_code``: Dify's code interpreter — run Python 3 or JavaScript in the sandbox
(:mod:`loopwright.tools.sandbox`: no network, CPU, memory, file-size and time limits) and return what it
printed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from loopwright.tools.base import TextMessage, Tool, ToolContext, ToolInvokeError, ToolOutput, ToolParameter
from loopwright.tools.sandbox import Sandbox, SandboxResult, SandboxUnavailableError


def code_tool(sandbox: Sandbox | None = None) -> Tool:
    """The ``simple_code`` tool, running code in ``sandbox`` (default limits and network isolation)."""
    box = sandbox or Sandbox()

    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        language = str(args.get("language") or "python3").strip().lower()
        language = {"python": "python3", "py": "python3", "js": "javascript", "node": "javascript"}.get(
            language, language
        )
        if language not in ("python3", "javascript"):
            raise ToolInvokeError(f"unsupported language {language!r}; only python3 and javascript")
        try:
            result = await box.run(language, str(args.get("code") or ""))  # type: ignore[arg-type]
        except SandboxUnavailableError as exc:
            raise ToolInvokeError(str(exc)) from None
        yield TextMessage(render(result, box.limits.wall_seconds))

    return Tool(
        name="simple_code",
        label="Code Interpreter",
        description=(
            "A tool for running code and getting the result back. Only native packages are allowed, "
            "network/IO operations are disabled. and you must use print() or console.log() to output the "
            "result or result will be empty."
        ),
        parameters=(
            ToolParameter(
                "language",
                "select",
                required=True,
                description='language of the code, only "python3" and "javascript" are supported',
                options=("python3", "javascript"),
            ),
            ToolParameter(
                "code",
                "string",
                required=True,
                description="code to be executed, only native packages are allowed, network/IO operations "
                "are disabled.",
            ),
        ),
        invoke=invoke,
        timeout=60.0,
    )


def render(result: SandboxResult, wall_seconds: float) -> str:
    """The observation: what the code printed, and how it ended when not cleanly."""
    parts = [result.stdout.rstrip()] if result.stdout.strip() else []
    if result.timed_out:
        parts.append(f"[stopped: the code ran longer than {wall_seconds:g} seconds]")
    elif result.exit_code:
        parts.append(f"[exit status {result.exit_code}]\n{result.stderr.strip()[-2000:]}")
    if result.truncated:
        parts.append("[output truncated]")
    return "\n".join(parts) or "(the code printed nothing; use print() or console.log())"
