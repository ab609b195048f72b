"""The dataset retriever tool and toolset: Dify's shape and texts, citations, an agent run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent
from loopwright.agent import ToolCallFinished
from loopwright.knowledge import KnowledgeBase, merge_retriever_resources
from loopwright.testing import Reply, ScriptedModel
from loopwright.tools import TextMessage, ToolContext, ToolEngine, VariableMessage
from loopwright.tools.knowledge import KnowledgeToolset, dataset_retriever_tool, tool_name

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]


@pytest.fixture
async def kb(tmp_path: Path) -> AsyncIterator[KnowledgeBase]:
    base = KnowledgeBase(tmp_path / "kb.db")
    yield base
    await base.close()


async def _handbook(kb: KnowledgeBase, description: str = "") -> Any:
    ds = await kb.create_dataset("Handbook", description=description)
    await kb.add_text(ds, "vacation.txt", "Employees get 25 vacation days per year.")
    await kb.add_text(ds, "sick.txt", "Sick days need a note after three days of vacation or illness.")
    await kb.add_text(ds, "parking.txt", "Parking is free in the garage.")
    return await kb.get_dataset(ds.id)


async def _outputs(tool: Any, query: Any) -> list[Any]:
    return [m async for m in tool.invoke({"query": query}, ToolContext())]


async def test_shape_follows_dify(kb: KnowledgeBase) -> None:
    ds = await _handbook(kb)
    tool = dataset_retriever_tool(ds, kb)
    assert tool.name == tool_name(ds.id) == "dataset_" + ds.id.replace("-", "_")
    assert tool.description == "useful for when you want to answer queries about the Handbook"
    schema = tool.schema.parameters
    assert schema["required"] == ["query"] and list(schema["properties"]) == ["query"]
    assert (
        schema["properties"]["query"]["description"]
        == "Query for the dataset to be used to retrieve the dataset."
    )
    described = dataset_retriever_tool(await _rename(kb, ds, "HR rules\nand\r\nbenefits"), kb)
    assert described.description == "HR rulesandbenefits"


async def _rename(kb: KnowledgeBase, ds: Any, description: str) -> Any:
    from dataclasses import replace

    updated = replace(ds, description=description)
    await kb.store.update_dataset(updated)
    return updated


async def test_empty_query_gets_difys_message(kb: KnowledgeBase) -> None:
    tool = dataset_retriever_tool(await _handbook(kb), kb)
    for query in ("", "   ", None):
        assert await _outputs(tool, query) == [TextMessage("please input query")]


async def test_results_sorted_joined_and_cited(kb: KnowledgeBase) -> None:
    ds = await _handbook(kb)
    tool = dataset_retriever_tool(ds, kb, top_k=2)
    text, variable = await _outputs(tool, "vacation days")
    assert isinstance(text, TextMessage) and isinstance(variable, VariableMessage)
    lines = text.text.split("\n")
    assert lines[0] == "Employees get 25 vacation days per year." and len(lines) == 2
    assert variable.name == "retriever_resources"
    first, second = variable.value
    assert first["position"] == 1 and second["position"] == 2 and first["score"] >= second["score"]
    assert (first["dataset_id"], first["dataset_name"], first["document_name"]) == (
        ds.id,
        "Handbook",
        "vacation.txt",
    )
    assert first["content"] == lines[0] and first["segment_id"] and first["document_id"]
    assert first["hit_count"] == 1
    _, again = await _outputs(tool, "vacation days")
    assert again.value[0]["hit_count"] == 2


async def test_no_match_is_an_empty_observation_and_no_citation(kb: KnowledgeBase) -> None:
    tool = dataset_retriever_tool(await _handbook(kb), kb)
    assert await _outputs(tool, "quantum chromodynamics") == [TextMessage("")]
    assert dataset_retriever_tool(await _handbook_qa(kb), kb, return_resource=False) is not None


async def _handbook_qa(kb: KnowledgeBase) -> Any:
    ds = await kb.create_dataset("FAQ", doc_form="qa_model")
    await kb.add_qa(ds, "faq", [("Is parking free?", "Yes, in the garage.")])
    return await kb.get_dataset(ds.id)


async def test_qa_segments_read_question_answer(kb: KnowledgeBase) -> None:
    tool = dataset_retriever_tool(await _handbook_qa(kb), kb)
    text, variable = await _outputs(tool, "parking")
    assert text.text == "question:Is parking free? answer:Yes, in the garage."
    assert variable.value[0]["content"] == "question:Is parking free? \nanswer:Yes, in the garage."


async def test_toolset_skips_missing_and_empty_datasets(kb: KnowledgeBase) -> None:
    ds = await _handbook(kb)
    await kb.create_dataset("Empty")
    tools = await KnowledgeToolset(kb, [ds.id, "Empty", "missing"]).get_tools()
    assert [t.name for t in tools] == [tool_name(ds.id)]


async def test_a_deleted_dataset_answers_nothing(kb: KnowledgeBase) -> None:
    ds = await _handbook(kb)
    tool = dataset_retriever_tool(ds, kb)
    await kb.delete_dataset(ds)
    assert await _outputs(tool, "vacation") == [TextMessage("")]


async def test_the_engine_keeps_the_variable_among_the_outputs(kb: KnowledgeBase) -> None:
    ds = await _handbook(kb)
    engine = ToolEngine([dataset_retriever_tool(ds, kb)])
    result = await engine.invoke(tool_name(ds.id), '{"query": "garage parking"}')
    assert result.observation.startswith("Parking is free in the garage.")
    variables = [o for o in result.outputs if isinstance(o, VariableMessage)]
    assert variables[0].value[0]["document_name"] == "parking.txt"


async def test_an_agent_run_retrieves_and_collects_citations(kb: KnowledgeBase) -> None:
    ds = await _handbook(kb)
    name = tool_name(ds.id)
    model = ScriptedModel(
        [
            Reply.tool_calls((name, {"query": "vacation days"}), (name, {"query": "sick note"})),
            Reply.text("You get 25 days."),
        ],
        features=FC,  # type: ignore[arg-type]
    )
    collected: list[list[dict[str, Any]]] = []
    agent = Agent(model=model, tools=[KnowledgeToolset(kb, ["Handbook"], on_resources=collected.append)])
    events = [e async for e in agent.stream("How many vacation days do I get?")]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [f.name for f in finished] == [name, name]
    assert finished[0].observation.startswith("Employees get 25 vacation days per year.")
    assert events[-1].result.text == "You get 25 days."  # type: ignore[union-attr]
    # The tool saw the question in the model's request and answered from the dataset.
    assert "Employees get 25 vacation days" in str(model.requests[1].messages)
    assert len(collected) == 2
    merged = merge_retriever_resources(collected)
    assert [r["position"] for r in merged] == list(range(1, len(merged) + 1))
    assert len({(r["dataset_id"], r["document_id"]) for r in merged}) == len(merged)
    assert {r["document_name"] for r in merged} >= {"vacation.txt", "sick.txt"}
