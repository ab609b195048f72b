"""Recording a case from a stored conversation: each message becomes a turn (its query, inputs and the
model replies behind it, read back from its agent log), and what happened becomes what is expected —
the answer, the trajectory, or both — to be edited as the author sees fit. Replayed (``--replay``), the
case runs with no model and passes until the app's tools or configuration change what it does."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from loopwright.app.admin.app_logs import conversation_messages
from loopwright.app.lookup import AppLookup
from loopwright.app.run.runtime import Database
from loopwright.evals.replay import replies_of
from loopwright.evals.schema import (
    AnswerExpect,
    Case,
    EvalSet,
    EvalSetError,
    Expect,
    ToolExpect,
    ToolOutputRecord,
    TrajectoryExpect,
    Turn,
    load_eval_set,
)

Expected = Literal["both", "answer", "trajectory"]


async def record_case(
    db: Database,
    app_id: str,
    conversation_id: str,
    *,
    name: str | None = None,
    expect: Expected = "both",
    lookup: AppLookup | None = None,
) -> Case:
    """The case of the app's stored conversation (``NotFoundError`` when it is not the app's)."""
    found = await conversation_messages(db, lookup or AppLookup(db), app_id, conversation_id)
    turns = [_turn(m.query, m.inputs, m.answer, m.status, m.agent_log, expect) for m in found.messages]
    if not turns:
        raise EvalSetError(f"conversation {conversation_id} has no messages to record")
    return Case(name=name or found.conversation.name or conversation_id, turns=turns)


def _turn(
    query: str, inputs: Mapping[str, Any], answer: str, status: str, log: Mapping[str, Any], expect: Expected
) -> Turn:
    calls = [c for it in log.get("iterations", []) for c in it.get("tool_calls", [])]
    wanted = Expect(
        answer=AnswerExpect(equals=answer) if expect in ("both", "answer") and status != "error" else None,
        trajectory=TrajectoryExpect(
            match="exact",
            tools=[ToolExpect(name=c["tool_name"]) for c in calls],
        )
        if expect in ("both", "trajectory")
        else None,
        error=status == "error",
    )
    outputs = [ToolOutputRecord(tool=c["tool_name"], output=str(c.get("tool_output", ""))) for c in calls]
    return Turn(
        query=query, inputs=dict(inputs), replies=replies_of(log, answer), tool_outputs=outputs, expect=wanted
    )


def add_case(path: Path, case: Case, *, replace: bool = False) -> EvalSet:
    """The set at ``path`` (a new one when there is no file) with ``case`` added, written back. A case
    of the same name is an error unless ``replace``. Comments of an existing file are not kept."""
    if path.exists():
        current = load_eval_set(path)
        cases = [c for c in current.cases if c.name != case.name]
        if len(cases) != len(current.cases) and not replace:
            raise EvalSetError(f"{path} already has a case named {case.name!r} (give another --name)")
        updated = current.model_copy(update={"cases": [*cases, case]})
    else:
        updated = EvalSet(name=path.stem, cases=[case])
    path.write_text(updated.to_yaml(), encoding="utf-8")
    return updated
