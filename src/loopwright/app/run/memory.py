"""Memory across conversations (``memory.long_term: true``; docs/memory-and-budgets.md), per app and
per end user:

- a **working memory** block: the facts the agent keeps about the end user, read and rewritten with
  the ``working_memory`` tool (:func:`memory_tool`) and shown in every prompt;
- a log of **observations**: one per answered message (what the user said and what was answered),
  written behind the run's own rows when it ends, and — should a process die before they are in —
  caught up from the stored messages when a runtime opens (:func:`catch_up`).

Before a run, :func:`recall` puts into the prompt the working memory and the observations most relevant
to the question (BM25 over their words, as the knowledge bases' keyword search ranks), within
``memory.recall_tokens``. Everything is read and written for one app's end user: nothing crosses end
users or apps.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from sqlalchemy import exists, select

from loopwright.app.lookup import AppLookup
from loopwright.knowledge.keyword import idf, query_words
from loopwright.model.base import estimate_tokens, token_prefix_length
from loopwright.store import memory as store
from loopwright.store.db import Database
from loopwright.store.models import App, Conversation, MemoryObservation, Message
from loopwright.store.writer import Insert
from loopwright.tools.base import Tool, ToolContext
from loopwright.tools.function import tool

__all__ = ["catch_up", "memory_tool", "observation_of", "recall", "recalled_prompt"]

log = logging.getLogger("loopwright.app")

MEMORY_HEADING = "What you remember of this user from earlier conversations (use it when it helps):"
OBSERVATION_TOKENS = 160  # what one observation keeps of its message
BLOCK_TOKENS = 1000  # the longest working memory the tool keeps
CATCH_UP_BATCH = 500
_K1, _B = 1.2, 0.75


def observation_of(query: str, answer: str) -> str:
    """The observation of one answered message."""
    text = f"User: {query.strip()}\nAssistant: {answer.strip()}"
    return text[: token_prefix_length(text, OBSERVATION_TOKENS)]


def observation_row(
    app_id: str, end_user_id: str, conversation_id: str, message_id: str, query: str, answer: str
) -> Insert:
    """The write of a message's observation (nothing when the message has one already)."""
    values = store.new_observation(
        app_id, end_user_id, conversation_id, message_id, observation_of(query, answer)
    )
    return Insert(MemoryObservation, values, unless_present=True)


async def recall(
    db: Database,
    app_id: str,
    end_user_id: str,
    query: str,
    budget: int,
    *,
    conversation_id: str | None = None,
) -> str | None:
    """The memory block of a prompt: the working memory, then the observations most relevant to
    ``query`` from the end user's other conversations (``conversation_id``'s own turns are in its
    history already), within ``budget`` tokens; None when there is nothing to recall."""
    async with db.sessionmaker() as session:
        block = await store.get_block(session, app_id, end_user_id)
        rows = await store.observations(session, app_id, end_user_id)
    texts = [r.text for r in rows if r.conversation_id != conversation_id]
    return recalled_prompt(block, texts, query, budget)


def recalled_prompt(block: str, texts: Sequence[str], query: str, budget: int) -> str | None:
    """The memory block from a working memory and observations (newest first), see :func:`recall`."""
    parts: list[str] = []
    used = estimate_tokens(MEMORY_HEADING)
    if block.strip():
        cost = estimate_tokens(block)
        if used + cost <= budget:
            parts.append(f"Working memory:\n{block.strip()}")
            used += cost
    recalled: list[str] = []
    for i in rank(texts, query):
        cost = estimate_tokens(texts[i]) + 2
        if used + cost > budget:
            break
        recalled.append(texts[i])
        used += cost
    if recalled:
        parts.append("From earlier conversations:\n" + "\n---\n".join(recalled))
    return f"{MEMORY_HEADING}\n\n" + "\n\n".join(parts) if parts else None


def rank(texts: Sequence[str], query: str) -> list[int]:
    """The indices of ``texts`` that share a word with ``query``, best first by BM25 (ties: the earlier
    index, i.e. the newer observation)."""
    words = query_words(query)
    if not words or not texts:
        return []
    docs = [Counter(query_words_all(t)) for t in texts]
    lengths = [sum(d.values()) for d in docs]
    average = sum(lengths) / len(lengths) or 1.0
    scores: list[tuple[float, int]] = []
    weights = {w: idf(len(docs), sum(1 for d in docs if w in d)) for w in words}
    for i, (doc, length) in enumerate(zip(docs, lengths, strict=True)):
        score = 0.0
        for w in words:
            tf = doc.get(w, 0)
            if tf:
                score += weights[w] * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * length / average))
        if score > 0 and not math.isnan(score):
            scores.append((-score, i))
    return [i for _, i in sorted(scores)]


def query_words_all(text: str) -> list[str]:
    """Every content word of ``text`` (with repeats), as the ranking counts them."""
    from loopwright.knowledge.keyword import STOP_WORDS

    return [w for w in _words(text) if w not in STOP_WORDS]


def _words(text: str) -> list[str]:
    import re

    return re.findall(r"\w+", text.lower())


def memory_tool(db: Database, lookup: AppLookup) -> Tool:
    """The ``working_memory`` tool of a ``memory.long_term`` app: reads or rewrites the end user's
    working memory (the user and app are the call's, never an argument)."""

    @tool(name="working_memory")
    async def working_memory(
        ctx: ToolContext, action: Literal["read", "append", "replace"] = "read", text: str = ""
    ) -> str:
        """Read or update your working memory about this user: facts that stay true across
        conversations (their name, preferences, ongoing goals). It is shown to you at the start of
        every conversation.

        Args:
            action: "read" it, "append" a line to it, or "replace" it whole.
            text: the line to append, or the whole new memory.
        """
        if not ctx.app_id:
            return "No working memory here (the agent is not running for an app's user)."
        end_user = await lookup.end_user_id(ctx.app_id, ctx.user_id)
        async with db.transaction() as session:
            current = await store.get_block(session, ctx.app_id, end_user)
            if action == "read":
                return current or "(empty)"
            new = text.strip() if action == "replace" else "\n".join(p for p in (current, text.strip()) if p)
            if estimate_tokens(new) > BLOCK_TOKENS:
                return (
                    f"Not saved: the working memory would exceed {BLOCK_TOKENS} tokens; replace it shorter."
                )
            await store.set_block(session, ctx.app_id, end_user, new)
        return "Saved."

    return working_memory


async def catch_up(db: Database, lookup: AppLookup) -> int:
    """Write the observations a process that died did not write: answered messages of the apps with
    ``memory.long_term`` that have none. Returns how many were written."""
    written = 0
    async with db.sessionmaker() as session:
        app_ids = list(await session.scalars(select(App.id)))
    for app_id in app_ids:
        latest = await lookup.latest_config(app_id)
        if latest is None or not latest.config.memory.long_term:
            continue
        written += await _catch_up_app(db, app_id)
    if written:
        log.info("memory: caught up %d observations", written)
    return written


async def _catch_up_app(db: Database, app_id: str) -> int:
    missing = ~exists().where(MemoryObservation.message_id == Message.id)
    stmt = (
        select(Message.id, Message.query, Message.answer, Conversation.id, Conversation.end_user_id)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(Message.app_id == app_id, Message.status == "normal", Message.answer != "", missing)
        .order_by(Message.created_at)
        .limit(CATCH_UP_BATCH)
    )
    async with db.sessionmaker() as session:
        rows = (await session.execute(stmt)).all()
    for message_id, query, answer, conversation_id, end_user_id in rows:
        db.writer.submit(observation_row(app_id, end_user_id, conversation_id, message_id, query, answer))
    await db.writer.flush()
    return len(rows)
