"""How a run is shown: live with rich (:class:`LiveRenderer`), or as JSON lines (:func:`event_to_json`)."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import fields, is_dataclass
from decimal import Decimal
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live

    from loopwright.agent import AgentEvent, AgentResult

PREVIEW_CHARS = 200


def _preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _arguments_text(arguments: dict[str, Any] | str) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


class LiveRenderer:
    """Renders one run's events with rich. On a terminal the text of the round in progress streams in
    a live area (with a spinner while the model or a tool works) and is written out for good when a
    tool call starts or the round ends; elsewhere the same lines are printed as they become final."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.thought = ""
        self.answer = ""
        self.running: dict[str, str] = {}
        self._live: Live | None = None
        self._started = time.perf_counter()

    def __enter__(self) -> LiveRenderer:
        self._started = time.perf_counter()
        if self.console.is_terminal:
            from rich.live import Live

            self._live = Live(
                self._view(), console=self.console, transient=True, refresh_per_second=12, auto_refresh=True
            )
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _view(self) -> RenderableType:
        from rich.console import Group
        from rich.spinner import Spinner
        from rich.text import Text

        parts: list[RenderableType] = []
        if self.thought:
            parts.append(Text(self.thought, style="dim"))
        if self.answer:
            parts.append(Text(self.answer, style="bold"))
        if self.running:
            parts.append(Spinner("dots", text=Text(f"running {', '.join(self.running.values())}…", "dim")))
        elif not self.thought and not self.answer:
            parts.append(Spinner("dots", text=Text("thinking…", "dim")))
        return Group(*parts)

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._view())

    def _commit_thought(self) -> None:
        from rich.text import Text

        if self.thought.strip():
            self.console.print(Text(self.thought.strip(), style="dim"))
        self.thought = ""

    def handle(self, event: AgentEvent) -> None:
        from rich.text import Text

        if event.type == "round_started":
            self.thought = self.answer = ""
        elif event.type == "text_delta":
            if event.channel == "answer":
                self.answer += event.text
            else:
                self.thought += event.text
        elif event.type == "tool_call_started":
            self._commit_thought()
            self.running[event.id] = event.name
            self.console.print(
                Text.assemble(
                    ("→ ", "cyan"),
                    (event.name, "bold cyan"),
                    " ",
                    (_preview(_arguments_text(event.arguments)), ""),
                )
            )
        elif event.type == "tool_call_finished":
            self.running.pop(event.id, None)
            style = "red" if event.meta.error else "green"
            cached = ", cached" if event.meta.cached else ""
            self.console.print(
                Text.assemble(
                    ("  ← ", style),
                    (_preview(event.observation), style),
                    (f"  ({event.meta.time_cost * 1000:.1f} ms{cached})", "dim"),
                )
            )
        elif event.type == "round_finished":
            if event.answer is None or (
                self.thought.strip() and self.thought.strip() != event.answer.strip()
            ):
                self._commit_thought()  # the model's reasoning, not its answer again
            self.thought = self.answer = ""
        elif event.type == "finished":
            self._finished(event.result)
        self._refresh()

    def _finished(self, result: AgentResult) -> None:
        from rich.panel import Panel
        from rich.text import Text

        if self._live is not None:
            self._live.stop()
            self._live = None
        self.console.print(
            Panel(
                Text(result.text.strip() or "(empty answer)", style="bold"),
                title="answer",
                title_align="left",
            )
        )
        elapsed = time.perf_counter() - self._started
        self.console.print(Text(usage_line(result, elapsed), style="dim"))


def usage_line(result: AgentResult, elapsed: float) -> str:
    """The one-line summary after an answer: the run's metrics when it has them."""
    if result.metrics is not None:
        return result.metrics.summary()
    u = result.usage
    rounds = f"{result.rounds} round" + ("" if result.rounds == 1 else "s")
    return f"{rounds} · {u.prompt_tokens} prompt + {u.completion_tokens} completion tokens · {elapsed:.2f} s"


# --- JSON lines ------------------------------------------------------------------------------------
# Not pydantic.TypeAdapter(AgentEvent).dump_python(mode="json"): it would write a tool's image or blob
# bytes as UTF-8 text (and fail on binary data) where this writes {"length": n}, and put the whole
# message history into the "finished" event.


def to_jsonable(value: Any) -> Any:
    """Events and what they hold as JSON values: dataclasses as dicts, ``Usage`` and ``ToolInvokeMeta``
    by their ``to_dict()`` (plus ``cached``), bytes as ``{"length": n}``."""
    from loopwright.model.entities import Usage
    from loopwright.tools.engine import ToolInvokeMeta

    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Usage):
        return value.to_dict()
    if isinstance(value, ToolInvokeMeta):
        return {**to_jsonable(value.to_dict()), "cached": value.cached}
    if isinstance(value, bytes | bytearray | memoryview):
        return {"length": len(value)}
    if isinstance(value, Enum):
        return to_jsonable(value.value)
    if isinstance(value, Decimal):
        return str(value)
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    return str(value)


def event_to_json(event: AgentEvent) -> dict[str, Any]:
    """One event as a JSON object: ``type`` first, then its fields; ``finished`` carries the result's
    text, usage, rounds, finish_reason and files, never the message history."""
    if event.type == "finished":
        r = event.result
        return {
            "type": "finished",
            "result": {
                "text": r.text,
                "usage": r.usage.to_dict(),
                "rounds": r.rounds,
                "finish_reason": r.finish_reason,
                "files": to_jsonable(r.files),
                "metrics": r.metrics.to_dict() if r.metrics is not None else None,
            },
        }
    out: dict[str, Any] = {"type": event.type}
    for f in fields(event):
        if f.name != "type":
            out[f.name] = to_jsonable(getattr(event, f.name))
    return out


def write_json(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()
