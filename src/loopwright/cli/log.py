"""``loopwright log MESSAGE_ID``: a stored message's agent log as a tree (the same data as
``GET /v1/messages/{id}/agent-log``, read from the server's database), or as JSON with ``--json``."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from loopwright.cli._common import new_console, reported_errors

if TYPE_CHECKING:
    from rich.tree import Tree

MAX_SHOWN = 300  # characters of a tool's input or output shown in the tree


def log(
    message_id: Annotated[str, typer.Argument(help="The message's id (message_end's message_id).")],
    json_output: Annotated[bool, typer.Option("--json", help="Print the log as one JSON object.")] = False,
) -> None:
    """Show what the agent did for a stored message: each iteration's thought and tool calls."""
    from loopwright.errors import NotFoundError

    with reported_errors(plain=json_output):
        try:
            data = asyncio.run(_load(message_id))
        except NotFoundError as e:
            raise typer.BadParameter(str(e), param_hint="MESSAGE_ID") from None
        if json_output:
            typer.echo(json.dumps(data, ensure_ascii=False))
            return
        new_console().print(render_tree(message_id, data))


async def _load(message_id: str) -> dict[str, Any]:
    from loopwright.app.admin.agent_log import message_log
    from loopwright.app.run.runtime import Database, migrate

    db = Database()
    try:
        await migrate(db)  # a database no server has opened yet has no tables
        return await message_log(db, message_id)
    finally:
        await db.close()


def render_tree(message_id: str, data: dict[str, Any]) -> Tree:
    """The log as a rich tree: the message's meta, then each iteration with its tool calls."""
    from rich.text import Text
    from rich.tree import Tree

    meta = data["meta"]
    head = Text.assemble(
        (f"message {message_id}", "bold"),
        f" · {meta['status']} · {meta['agent_mode']} · {meta['iterations']} iterations"
        f" · {meta['elapsed_time']:.2f} s · {meta['total_tokens']} tokens",
    )
    tree = Tree(head)
    tree.add(Text(f"executor {meta['executor']} · started {meta['start_time']}", style="dim"))
    if meta.get("metrics"):
        tree.add(Text(metrics_line(meta["metrics"]), style="dim"))
    for n, it in enumerate(data["iterations"], 1):
        branch = tree.add(Text(f"iteration {n} · {it['tokens']} tokens", style="bold"))
        if it["thought"]:
            branch.add(Text(_short(it["thought"].strip())))
        for call in it["tool_calls"]:
            ok = call["status"] == "success"
            node = branch.add(
                Text.assemble(
                    (f"{'✓' if ok else '✗'} {call['tool_name']}", "green" if ok else "red"),
                    f" · {float(call['time_cost'] or 0):.3f} s",
                )
            )
            node.add(Text(f"input  {_short(_text(call['tool_input']))}"))
            node.add(Text(f"output {_short(_text(call['tool_output']))}"))
            if not ok:
                node.add(Text(f"error  {call['error']}", style="red"))
    return tree


def metrics_line(m: dict[str, Any]) -> str:
    """The stored run metrics in one line (what ``loopwright run`` prints after an answer)."""
    ttft = m.get("time_to_first_token")
    first = "-" if ttft is None else f"{ttft:.2f} s"
    return (
        f"model {m.get('model_time', 0):.2f} s · first token {first} · "
        f"{_count(m.get('rounds', 0), 'round')} · "
        f"{_count(m.get('tool_calls', 0), 'tool call')} ({m.get('tool_errors', 0)} failed) · "
        f"{m.get('malformed_recovered', 0)} malformed recovered · {m.get('total_price', '0')} "
        f"{m.get('currency', 'USD')}"
    )


def _count(n: int, noun: str) -> str:
    """``1 round``, ``2 rounds``: a count with its noun in the right number."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _short(text: str) -> str:
    return text if len(text) <= MAX_SHOWN else f"{text[:MAX_SHOWN]}… ({len(text)} chars)"
