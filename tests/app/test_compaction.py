"""app.run.compaction: the modes, old tool results cut and marked, a failing summary model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from loopwright.app.config import AppConfig, MemorySettings, import_dify_dsl, load_app_yaml
from loopwright.app.run.compaction import SUMMARY_HEADING, Summary, Turn, compact
from loopwright.model.base import estimate_message_tokens
from loopwright.model.entities import AssistantMessage, PromptMessage, ToolCall, ToolMessage, UserMessage

BIG = "row of the report " * 20


def history(turns: int) -> list[PromptMessage]:
    out: list[PromptMessage] = []
    for i in range(turns):
        call = ToolCall(id=f"c{i}", name="report", arguments="{}")
        out += [
            UserMessage(f"Question {i}"),
            AssistantMessage("", tool_calls=[call]),
            ToolMessage(content=BIG, tool_call_id=f"c{i}", name="report"),
            AssistantMessage(f"Answer {i}"),
        ]
    return out


async def test_old_tool_results_are_cut_first_and_marked() -> None:
    settings = MemorySettings(compaction="summarize", keep_turns=2, tool_result_tokens=10)
    done = await compact(history(5), settings, room=10_000, count_tokens=estimate_message_tokens)
    tools = [m for m in done.messages if isinstance(m, ToolMessage)]
    assert done.tool_results_cut == 3 and done.made is None and done.turns_dropped == 0
    assert all("[tool result cut:" in str(m.content) for m in tools[:3])
    assert [str(m.content) for m in tools[3:]] == [BIG, BIG]  # the newest turns keep theirs whole


async def test_a_summary_folds_the_older_turns_once() -> None:
    asked: list[tuple[str | None, list[str]]] = []

    async def summarize(previous: str | None, turns: Sequence[Turn]) -> str:
        asked.append((previous, [str(t[0].content) for t in turns]))
        return f"summary of {len(turns)} turns"

    settings = MemorySettings(compaction="summarize", keep_turns=2, tool_result_tokens=10, summarize_at=0.5)
    count = estimate_message_tokens
    first = await compact(history(7), settings, room=1000, count_tokens=count, summarize=summarize)
    assert first.made == Summary("summary of 5 turns", 5)
    assert str(first.messages[0].content).startswith(SUMMARY_HEADING)
    questions = [str(m.content) for m in first.messages if isinstance(m, UserMessage)]
    assert questions[1:] == ["Question 5", "Question 6"]
    # the next turn reuses it: nothing is summarized again while it fits
    again = await compact(
        history(8), settings, room=1000, count_tokens=count, summary=first.made, summarize=summarize
    )
    assert again.made is None and again.summary == first.made and len(asked) == 1
    # the prompt's prefix is stable: the summary, then the turns since (a turn's tool results are cut
    # once, when it leaves the newest ``keep_turns``)
    assert again.messages[:2] == first.messages[:2]


async def test_a_failing_summary_model_trims_instead() -> None:
    async def broken(previous: str | None, turns: Sequence[Turn]) -> str:
        raise RuntimeError("down")

    settings = MemorySettings(compaction="summarize", keep_turns=2, summarize_at=0.5)
    count = estimate_message_tokens
    done = await compact(history(8), settings, room=400, count_tokens=count, summarize=broken)
    assert done.made is None and done.summary is None
    assert count(done.messages) <= 400 and done.turns_dropped > 0


async def test_off_sends_everything_and_trim_drops_whole_turns() -> None:
    whole = history(6)
    count = estimate_message_tokens
    off = await compact(whole, MemorySettings(compaction="off"), room=10, count_tokens=count)
    assert off.messages == whole
    trim = await compact(whole, MemorySettings(), room=300, count_tokens=estimate_message_tokens)
    assert trim.turns_dropped > 0 and isinstance(trim.messages[0], UserMessage)


def test_trim_is_the_default_and_yaml_off_reads_as_off() -> None:
    assert AppConfig().memory.compaction == "trim"
    _, config = load_app_yaml("name: x\nmemory:\n  compaction: off\n  long_term: true\n")
    assert config.memory.compaction == "off" and config.memory.long_term


def test_a_dify_import_keeps_difys_trimming() -> None:
    fixture = Path(__file__).parent / "fixtures" / "dify-agent-app.yml"
    report = import_dify_dsl(fixture.read_text(encoding="utf-8"))
    assert report.config.memory.compaction == "trim"
