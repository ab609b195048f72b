"""``ToolCallRecord``: one tool call of a round and its outcome (events carry it; a run's state keeps
it). A record is filled in while its round runs and not changed after an event that carries it was
yielded: a resumed run works on a copy of the paused state (RunState.detached)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from loopwright.tools.base import ToolOutput
from loopwright.tools.engine import ToolInvokeMeta


@dataclass(slots=True)
class ToolCallRecord:
    """One tool call of a round with its outcome (``observation`` is None until it finished)."""

    id: str
    name: str
    arguments: dict[str, Any] | str
    observation: str | None = None
    files: list[ToolOutput] = field(default_factory=list)
    meta: ToolInvokeMeta | None = None
    outputs: list[ToolOutput] = field(default_factory=list)  # everything the tool yielded
    raw_arguments: str | None = None  # the arguments as the model wrote them, when it wrote JSON text

    def arguments_json(self) -> str:
        if self.raw_arguments is not None:
            return self.raw_arguments
        args = self.arguments
        return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
