from __future__ import annotations

import json
from decimal import Decimal

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.model.entities import Usage
from loopwright.store import models as m
from loopwright.store import repositories as repo
from loopwright.store.db import Database


async def _message(s: AsyncSession) -> m.Message:
    app, _ = await repo.create_app(s, "demo", {})
    user = await repo.get_or_create_end_user(s, app.id, "u")
    conv = await repo.create_conversation(s, app.id, user.id)
    return await repo.create_message(s, conv, "q")


async def test_create_thought_initial_values(db: Database) -> None:
    async with db.transaction() as s:
        msg = await _message(s)
        t = await repo.create_thought(s, msg.id, 1, created_by="user-1")
    async with db.session() as s:
        row = await s.get(m.MessageAgentThought, t.id)
        assert row is not None
        assert (row.thought, row.answer, row.observation, row.tool) == ("", "", "", "")
        assert (row.tool_labels_str, row.tool_meta_str) == ("{}", "{}")
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


async def test_save_thought_rules(db: Database) -> None:
    async with db.transaction() as s:
        msg = await _message(s)
        t = await repo.create_thought(s, msg.id, 1)
        await repo.save_thought(s, t.id, thought="I will ")
        await repo.save_thought(s, t.id, thought="search.", tool_names=["search", "calc"])
        assert t.thought == "I will search." and t.tool == "search;calc"
        assert json.loads(t.tool_labels_str) == {
            "search": {"en_US": "search", "zh_Hans": "search"},
            "calc": {"en_US": "calc", "zh_Hans": "calc"},
        }
        await repo.save_thought(s, t.id, tool_input={"search": {"q": "天气"}, "calc": {"e": "1+1"}})
        assert "天气" in (t.tool_input or "")
        await repo.save_thought(s, t.id, observation={"search": "sunny", "calc": "2"})
        # falsy values never overwrite
        await repo.save_thought(
            s, t.id, tool_names="", tool_input={}, observation="", answer="", thought="", file_ids=[]
        )
        assert t.tool == "search;calc"
        assert json.loads(t.tool_input or "") == {"search": {"q": "天气"}, "calc": {"e": "1+1"}}
        assert json.loads(t.observation or "") == {"search": "sunny", "calc": "2"}
        assert (t.thought, t.answer, t.message_files) == ("I will search.", "", "[]")
        # truthy values overwrite
        await repo.save_thought(s, t.id, tool_names="calc", answer="done", file_ids=["f1", "f2"])
        assert t.tool == "calc" and t.answer == "done" and json.loads(t.message_files or "") == ["f1", "f2"]
        assert json.loads(t.tool_labels_str) == {"calc": {"en_US": "calc", "zh_Hans": "calc"}}
        # tool_meta: None leaves it, {} overwrites (Dify checks "is not None")
        await repo.save_thought(s, t.id, tool_meta={"calc": {"time_cost": 0.1}})
        await repo.save_thought(s, t.id, tool_meta=None)
        assert json.loads(t.tool_meta_str) == {"calc": {"time_cost": 0.1}}
        await repo.save_thought(s, t.id, tool_meta={})
        assert t.tool_meta_str == "{}"
        await repo.save_thought(s, t.id, labels={"calc": {"en_US": "Calculator", "zh_Hans": "计算器"}})
        assert json.loads(t.tool_labels_str)["calc"]["en_US"] == "Calculator"
        with pytest.raises(LookupError):
            await repo.save_thought(s, "missing", thought="x")


async def test_save_thought_duplicate_tools_keep_every_call(db: Database) -> None:
    async with db.transaction() as s:
        msg = await _message(s)
        t = await repo.create_thought(s, msg.id, 1)
        await repo.save_thought(s, t.id, tool_names=["search", "search"], tool_input=[{"q": "a"}, {"q": "b"}])
        await repo.save_thought(s, t.id, observation=["ra", "rb"])
        assert t.tool == "search;search"
        assert json.loads(t.tool_input or "") == {"search": {"q": "a"}, "search_1": {"q": "b"}}
        assert json.loads(t.observation or "") == {"search": "ra", "search_1": "rb"}
        assert json.loads(t.tool_labels_str) == {"search": {"en_US": "search", "zh_Hans": "search"}}


async def test_save_thought_usage_and_listing(db: Database) -> None:
    async with db.transaction() as s:
        msg = await _message(s)
        t2 = await repo.create_thought(s, msg.id, 2)
        t1 = await repo.create_thought(s, msg.id, 1)
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
        await repo.save_thought(s, t1.id, usage=usage)
    async with db.session() as s:
        rows = await repo.list_thoughts(s, msg.id)
        assert [r.id for r in rows] == [t1.id, t2.id]
        r = rows[0]
        assert (r.message_token, r.answer_token, r.tokens) == (100, 20, 120)
        assert (r.message_unit_price, r.message_price_unit) == (Decimal("0.5"), Decimal("0.000001"))
        assert (r.answer_unit_price, r.answer_price_unit) == (Decimal("1.5"), Decimal("0.000001"))
        assert r.total_price == Decimal("0.00008")
