"""Admin API: a stored conversation as an eval case (what the console's "add to eval set" calls). The
case comes back as JSON and as the YAML of a one-case set, to be edited and added to a set file; the
server keeps no eval sets. The work is :mod:`loopwright.evals.record`'s, as ``loopwright eval record``'s."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pydantic
from fastapi import APIRouter, Depends

from loopwright.app.admin import apps as admin
from loopwright.app.run.runtime import AppRuntime
from loopwright.evals.record import record_case
from loopwright.evals.schema import EvalSet
from loopwright.server.console.auth import require_admin
from loopwright.server.state import get_state

router = APIRouter(prefix="/console/api", dependencies=[Depends(require_admin)])
State = Annotated[AppRuntime, Depends(get_state)]


class EvalCaseBody(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    conversation_id: str
    name: str | None = pydantic.Field(None, min_length=1, max_length=200)
    expect: Literal["both", "answer", "trajectory"] = "both"


@router.post("/apps/{app_id}/eval-cases")
async def eval_case(app_id: str, body: EvalCaseBody, state: State) -> dict[str, Any]:
    """``{case, yaml}``: the conversation's turns, the model replies behind them and what happened as
    the expectation (docs/evals.md); 404 for a conversation that is not the app's."""
    await admin.check_app(app_id, db=state.db)
    case = await record_case(
        state.db, app_id, body.conversation_id, name=body.name, expect=body.expect, lookup=state.lookup
    )
    one = EvalSet(cases=[case])
    return {"case": case.model_dump(mode="json", exclude_defaults=True, by_alias=True), "yaml": one.to_yaml()}
