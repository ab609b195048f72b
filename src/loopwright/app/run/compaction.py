"""A conversation's history fitted into the model's window (``memory.compaction``; see
docs/memory-and-budgets.md).

- ``off``: the history as it is (only the app's ``history_message_limit`` applies).
- ``trim``: whole turns dropped, oldest first, until the history fits (Dify's behaviour; the default).
- ``summarize``: the tool results of older turns (all but the newest ``keep_turns``) are cut to
  ``tool_result_tokens`` first, each marked in the prompt as cut (the whole result stays stored); when
  the history still takes more than ``summarize_at`` of its room, the older turns are folded into a
  summary made by the summary model (the newest turns, at least ``keep_turns`` and as many as fit in
  half the threshold, stay verbatim), which is stored and stands for those turns in the prompts of the
  turns after (so the prompt's prefix — the summary, then the turns since — stays the same from turn to
  turn, and prompt caches keep working). Each turn is folded once: a new summary is made from the
  previous summary and the turns that came after it. Without a summary model (the embedded local model
  is too small to summarize), or when summarizing fails, the history is trimmed instead.

Whatever the mode, the result never exceeds the room: trimming is the last step.

A turn is one stored message: its query (a user message), then its rounds. The summary covers the
first ``covered`` turns of the conversation's thread; it enters the prompt as one user message.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from loopwright.app.config import MemorySettings
from loopwright.app.run.history import trim_to_budget
from loopwright.model.base import Model, estimate_tokens, token_prefix_length
from loopwright.model.entities import (
    AssistantMessage,
    PromptMessage,
    SystemMessage,
    ToolMessage,
    UserMessage,
    content_text,
)

__all__ = ["Compacted", "Summary", "compact", "summarize_with"]

log = logging.getLogger("loopwright.app")

SUMMARY_HEADING = "Summary of the earlier conversation (its older turns, folded):"
SUMMARY_INSTRUCTION = (
    "You keep the running summary of a conversation between a user and an assistant, so that the "
    "assistant can go on with it without the turns themselves. Fold the new turns into the summary: keep "
    "what the user said about themselves and wants, facts, decisions, results of tools that matter and "
    "open questions; drop greetings and repetition. Answer with the new summary only, in plain text, "
    "at most {words} words."
)
SUMMARY_WORDS = 250

Turn = list[PromptMessage]
# (previous summary or None, the turns to fold) → the new summary's text
Summarizer = Callable[[str | None, Sequence[Turn]], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class Summary:
    """A stored summary: its text stands for the first ``covered`` turns of the thread."""

    text: str
    covered: int
    id: str = ""


@dataclass(slots=True)
class Compacted:
    """The history as the prompt gets it, and what compaction did (for the message's log)."""

    messages: list[PromptMessage]
    summary: Summary | None = None  # the summary at the head of the prompt
    made: Summary | None = None  # a summary made for this turn (to be stored)
    tool_results_cut: int = 0
    turns_dropped: int = 0

    def log_entry(self, mode: str) -> dict[str, Any]:
        """What the message's metadata keeps of it (the agent log shows it)."""
        entry: dict[str, Any] = {
            "mode": mode,
            "tool_results_cut": self.tool_results_cut,
            "turns_dropped": self.turns_dropped,
        }
        if self.summary is not None:
            entry["summary"] = self.summary.text
            entry["summarized_messages"] = self.summary.covered
            entry["summary_made_now"] = self.made is not None
        return entry


async def compact(
    history: Sequence[PromptMessage],
    settings: MemorySettings,
    *,
    room: int,
    count_tokens: Callable[[Sequence[PromptMessage]], int],
    limit: int | None = None,
    summary: Summary | None = None,
    summarize: Summarizer | None = None,
) -> Compacted:
    """``history`` fitted into ``room`` tokens (see the module's docstring); ``limit`` is the app's
    window on the number of messages; ``summary`` the conversation's stored one."""
    mode = settings.compaction
    if mode == "off":
        kept = trim_to_budget(history, count_tokens, 1 << 62, limit) if limit is not None else list(history)
        return Compacted(kept, turns_dropped=_turns(history) - _turns(kept))
    if mode == "trim":
        kept = trim_to_budget(history, count_tokens, room, limit)
        return Compacted(kept, turns_dropped=_turns(history) - _turns(kept))
    return await _summarized(history, settings, room, count_tokens, limit, summary, summarize)


async def _summarized(
    history: Sequence[PromptMessage],
    settings: MemorySettings,
    room: int,
    count_tokens: Callable[[Sequence[PromptMessage]], int],
    limit: int | None,
    summary: Summary | None,
    summarize: Summarizer | None,
) -> Compacted:
    turns = split_turns(history)
    if summary is not None and summary.covered > len(turns):
        summary = None  # a summary of a thread that is no longer this one (never expected)
    covered = summary.covered if summary is not None else 0
    live, cut = cut_tool_results(turns[covered:], settings.keep_turns, settings.tool_result_tokens)
    made: Summary | None = None
    prompt = _prompt(summary, live)
    size = count_tokens(prompt)
    due = size > settings.summarize_at * room and len(live) > settings.keep_turns
    if not due and size <= room and limit is None:  # the common turn: counted once, nothing to do
        return Compacted(prompt, summary, None, cut, 0)
    if due and summarize is not None:
        keep = _kept_after_summary(live, settings.keep_turns, settings.summarize_at * room / 2, count_tokens)
        fold = live[:-keep]
        try:
            text = await summarize(summary.text if summary is not None else None, fold)
        except Exception as exc:  # a failing summary model never fails the run: trimmed instead
            log.warning("summarizing the conversation failed, trimming it instead: %s", exc)
        else:
            summary = made = Summary(text.strip(), covered + len(fold))
            live = live[-keep:]
            prompt = _prompt(summary, live)
    kept = trim_to_budget(prompt, count_tokens, room, limit)
    dropped = _turns(prompt) - _turns(kept)
    if summary is not None and dropped and not _starts_with_summary(kept):
        summary = None  # trimmed away with the oldest turns
    return Compacted(kept, summary, made, cut, dropped)


def _kept_after_summary(
    live: Sequence[Turn], least: int, target: float, count_tokens: Callable[[Sequence[PromptMessage]], int]
) -> int:
    """How many of the newest turns stay verbatim when the older ones are folded: at least ``least``,
    and more while they fit in ``target`` tokens (half the threshold: the history then grows for a
    while before the next summary is due, rather than making one every turn)."""
    keep = least
    while keep < len(live) - 1 and count_tokens([m for t in live[-(keep + 1) :] for m in t]) <= target:
        keep += 1
    return keep


def split_turns(history: Sequence[PromptMessage]) -> list[Turn]:
    """The history as turns: each starts at a user message (what comes before the first is its own)."""
    turns: list[Turn] = []
    for message in history:
        if isinstance(message, SystemMessage):
            continue
        if isinstance(message, UserMessage) or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return turns


def cut_tool_results(turns: list[Turn], keep_turns: int, keep_tokens: int) -> tuple[list[Turn], int]:
    """The turns with the tool results of all but the newest ``keep_turns`` cut to ``keep_tokens``
    (marked as cut); and how many were cut. A result cut is the same in every later turn's prompt."""
    old = max(len(turns) - keep_turns, 0)
    out: list[Turn] = []
    cut = 0
    for i, turn in enumerate(turns):
        if i >= old or not any(isinstance(m, ToolMessage) for m in turn):
            out.append(turn)
            continue
        new_turn: Turn = []
        for m in turn:
            shorter = _cut(m, keep_tokens) if isinstance(m, ToolMessage) else None
            if shorter is not None:
                cut += 1
            new_turn.append(shorter or m)
        out.append(new_turn)
    return out, cut


def _cut(message: ToolMessage, keep_tokens: int) -> ToolMessage | None:
    text = content_text(message.content)
    tokens = estimate_tokens(text)
    if tokens <= keep_tokens:
        return None
    kept = text[: token_prefix_length(text, keep_tokens)].rstrip()
    note = f"[tool result cut: {tokens} tokens, the whole result is kept in the conversation's log]"
    content = f"{kept} … {note}" if kept else note
    return ToolMessage(content=content, tool_call_id=message.tool_call_id, name=message.name)


def _prompt(summary: Summary | None, turns: Sequence[Turn]) -> list[PromptMessage]:
    head: list[PromptMessage] = [UserMessage(f"{SUMMARY_HEADING}\n{summary.text}")] if summary else []
    return head + [m for turn in turns for m in turn]


def _starts_with_summary(messages: Sequence[PromptMessage]) -> bool:
    first = messages[0] if messages else None
    return isinstance(first, UserMessage) and content_text(first.content).startswith(SUMMARY_HEADING)


def _turns(messages: Sequence[PromptMessage]) -> int:
    return sum(1 for m in messages if isinstance(m, UserMessage))


def transcript(turns: Sequence[Turn]) -> str:
    """The turns as plain text, for the summary model."""
    lines: list[str] = []
    for turn in turns:
        for m in turn:
            text = content_text(m.content).strip()
            if isinstance(m, UserMessage):
                lines.append(f"User: {text}")
            elif isinstance(m, ToolMessage):
                lines.append(f"Tool {m.name or ''}: {text}".replace("  ", " "))
            elif isinstance(m, AssistantMessage):
                calls = ", ".join(f"{c.name}({c.arguments})" for c in m.tool_calls)
                if text:
                    lines.append(f"Assistant: {text}")
                if calls:
                    lines.append(f"Assistant calls: {calls}")
    return "\n".join(lines)


def summarize_with(model: Model) -> Summarizer:
    """A summarizer that asks ``model`` (its reply's text is the new summary). The turns' transcript
    is cut, oldest lines first, to what the model's window leaves."""

    async def summarize(previous: str | None, turns: Sequence[Turn]) -> str:
        text = transcript(turns)
        room = max(model.context_size - 1024 - estimate_tokens(previous or ""), 256)
        tokens = estimate_tokens(text)
        if tokens > room:  # keep the newest part of the transcript
            text = text[len(text) - token_prefix_length(text[::-1], room) :]
        before = previous or "(nothing yet)"
        messages: list[PromptMessage] = [
            SystemMessage(SUMMARY_INSTRUCTION.format(words=SUMMARY_WORDS)),
            UserMessage(f"The summary so far:\n{before}\n\nThe new turns:\n{text}"),
        ]
        parts: list[str] = []
        stream = model.stream(messages, params={"max_tokens": 2 * SUMMARY_WORDS})
        try:
            async for chunk in stream:
                if chunk.text:
                    parts.append(chunk.text)
        finally:
            await stream.aclose()
        summary = "".join(parts).strip()
        if not summary:
            raise ValueError("the summary model answered nothing")
        return summary

    return summarize
