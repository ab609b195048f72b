"""Thought rows as production writes them (``repositories.new_thought`` + ``thought_values``): Dify's
initial values and encodings, read back from the database.

Dify's incremental ``save_agent_thought`` merge rules (append the thought, overwrite only when truthy)
are not here: loopwright keeps each round whole in memory and writes all its columns each time."""

from __future__ import annotations

import json
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.model.entities import Usage
from loopwright.store import models as m
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from tests.store import rows


async def _message(s: AsyncSession) -> m.Message:
    app, _ = await repo.create_app(s, "demo", {})
    user = await repo.get_or_create_end_user(s, app.id, "u")
    conv = await rows.create_conversation(s, app.id, user.id)
    return await rows.create_message(s, conv, "q")


async def test_a_new_thought_has_difys_initial_values(db: Database) -> None:
    async with db.transaction() as s:
        msg = await _message(s)
        t = await rows.add_thought(s, msg.id, 1, created_by="user-1")
    async with db.session() as s:
        row = await s.get(m.MessageAgentThought, t.id)
        assert row is not None
        assert (row.thought, row.answer, row.observation, row.tool) == ("", "", "", "")
        assert (row.tool_labels_str, row.tool_meta_str, row.message_files) == ("{}", "{}", "[]")
        assert (row.message_token, row.answer_token, row.tokens, row.latency) == (0, 0, 0, 0.0)
        assert row.total_price == 0 and row.message_unit_price == 0 and row.answer_unit_price == 0
        assert row.message_price_unit == Decimal("0.001") == row.answer_price_unit
        assert (row.position, row.currency, row.created_by_role, row.created_by) == (
            1,
            "USD",
            "account",
            "user-1",
        )
        assert row.message_chain_id is None and row.tool_process_data is None


async def test_a_rounds_columns_in_difys_encodings(db: Database) -> None:
    async with db.transaction() as s:
        msg = await _message(s)
        t = await rows.add_thought(
            s,
            msg.id,
            1,
            thought="I will search.\x00",
            tools=["search", "calc"],
            inputs=[{"q": "天气"}, {"e": "1+1"}],
            observations=["sunny", "2"],
            metas=[{"time_cost": 0.1}, {}],
            file_ids=["f1", "f2"],
            labels={"calc": {"en_US": "Calculator", "zh_Hans": "计算器"}},
        )
    async with db.session() as s:
        row = await s.get(m.MessageAgentThought, t.id)
        assert row is not None
        assert row.thought == "I will search." and row.tool == "search;calc"  # NUL stripped
        assert "天气" in row.tool_input  # JSON keeps non-ASCII text
        assert json.loads(row.tool_input) == {"search": {"q": "天气"}, "calc": {"e": "1+1"}}
        assert json.loads(row.observation) == {"search": "sunny", "calc": "2"}
        assert json.loads(row.tool_meta_str) == {"search": {"time_cost": 0.1}, "calc": {}}
        assert json.loads(row.tool_labels_str) == {
            "search": {"en_US": "search", "zh_Hans": "search"},
            "calc": {"en_US": "Calculator", "zh_Hans": "计算器"},
        }
        assert json.loads(row.message_files) == ["f1", "f2"]


async def test_duplicate_tools_keep_every_call(db: Database) -> None:
    async with db.transaction() as s:
        msg = await _message(s)
        t = await rows.add_thought(
            s,
            msg.id,
            1,
            tools=["search", "search"],
            inputs=[{"q": "a"}, {"q": "b"}],
            observations=["ra", "rb"],
        )
        assert t.tool == "search;search"
        assert json.loads(t.tool_input) == {"search": {"q": "a"}, "search_1": {"q": "b"}}
        assert json.loads(t.observation) == {"search": "ra", "search_1": "rb"}
        assert json.loads(t.tool_labels_str) == {"search": {"en_US": "search", "zh_Hans": "search"}}


async def test_a_round_before_its_observations_has_none(db: Database) -> None:
    values = repo.thought_values(
        "t",
        1,
        thought="",
        tool_names=["calc"],
        tool_inputs=[{"e": "1"}],
        observations=[""],
        metas=[{}],
        answer="",
        file_ids=[],
        usage=None,
    )
    assert (values["observation"], values["tool_meta_str"]) == ("", "{}")
    none = repo.thought_values(
        "t",
        1,
        thought="",
        tool_names=[],
        tool_inputs=[],
        observations=[],
        metas=[],
        answer="",
        file_ids=[],
        usage=None,
    )
    assert (none["tool"], none["tool_input"], none["tool_labels_str"]) == ("", "", "{}")
    assert set(values) == set(none)  # always the same keys: the writer keeps such updates in order


async def test_save_thought_usage_and_listing(db: Database) -> None:
    usage = Usage(
        prompt_tokens=100,
        completion_tokens=20,
        total_tokens=120,
        prompt_unit_price=Decimal("0.5"),
        prompt_price_unit=Decimal("0.000001"),
        completion_unit_price=Decimal("1.5"),
        completion_price_unit=Decimal("0.000001"),
        total_price=Decimal("0.00008"),
    )
    async with db.transaction() as s:
        msg = await _message(s)
        t2 = await rows.add_thought(s, msg.id, 2)
        t1 = await rows.add_thought(s, msg.id, 1, usage=usage)
    async with db.session() as s:
        listed = await repo.list_thoughts(s, msg.id)
        assert [r.id for r in listed] == [t1.id, t2.id]
        r = listed[0]
        assert (r.message_token, r.answer_token, r.tokens) == (100, 20, 120)
        assert (r.message_unit_price, r.message_price_unit) == (Decimal("0.5"), Decimal("0.000001"))
        assert (r.answer_unit_price, r.answer_price_unit) == (Decimal("1.5"), Decimal("0.000001"))
        assert r.total_price == Decimal("0.00008")
