"""``ToolRanker``: the few tools most relevant to a question, out of many, by meaning.

An app with dozens of tools (a Dify import with its plugins easily has 50–200) sends every schema with
every request: prompt tokens, and a harder choice for the model — small models pick worse among many.
When an agent offers more than ``threshold`` tools, the ranker embeds the query (and, with less weight,
the conversation before it) with the packaged all-MiniLM-L6-v2 and offers the ``top_k`` tools whose
name and description are nearest, plus every tool already used in the conversation. It implements the
agent's ``ToolSelector`` protocol (``agent.tool_selection``) structurally.

Tool vectors are computed once per set of tools; a query costs one encoding (a few milliseconds on a
CPU). When the model cannot be loaded (the ``embeddings`` extra is missing) the ranker says so once and
offers every tool.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from loopwright._threads import run_sync
from loopwright.model.entities import ToolSchema

log = logging.getLogger("loopwright.tools")

Encode = Callable[[list[str]], Any]
"""``encode(texts)`` → one normalised vector per text (rows of a 2-D array)."""

CONVERSATION_WEIGHT = 0.35  # how much the conversation before the query counts beside the query
# A word of the query that names few tools (a product — "Salesforce", "Zoom") adds this much, scaled by
# how rare it is among the tools: small embedding models blur proper nouns.
NAME_WEIGHT = 0.15
_WORD = re.compile(r"[a-z][a-z0-9]{3,}")
CONVERSATION_TURNS = 2  # the last messages of the conversation that count
MAX_TEXT = 1000  # characters of a text that are embedded (the model reads 256 tokens anyway)


class _Request(Protocol):
    """The agent's ``ToolChoiceRequest``, as far as ranking reads it."""

    @property
    def tools(self) -> Sequence[ToolSchema]: ...
    @property
    def query(self) -> str: ...
    @property
    def conversation(self) -> Sequence[str]: ...
    @property
    def used(self) -> frozenset[str]: ...


def tool_text(tool: ToolSchema) -> str:
    """What a tool is embedded as: its name in words, then its description."""
    words = tool.name.replace("_", " ").replace("-", " ")
    return f"{words}: {tool.description}"[:MAX_TEXT]


class ToolRanker:
    """Offers the ``top_k`` most relevant tools when there are more than ``threshold`` (see the module's
    docstring). ``encode`` defaults to the packaged MiniLM."""

    def __init__(self, *, threshold: int = 16, top_k: int = 6, encode: Encode | None = None) -> None:
        if top_k < 1 or threshold < 1:
            raise ValueError("threshold and top_k must be at least 1")
        self.threshold = threshold
        self.top_k = top_k
        self._encode = encode
        # (tool texts, their vectors, each tool's words, each word's weight: its rarity among the tools)
        self._tools: tuple[tuple[str, ...], Any, list[set[str]], dict[str, float]] | None = None
        self._unavailable = False

    async def select(self, request: _Request) -> list[str] | None:
        tools = request.tools
        if len(tools) <= self.threshold or self._unavailable:
            return None
        try:
            scores = await run_sync(self.scores, tools, request.query, list(request.conversation))
        except Exception as exc:  # the model is missing or broken: every tool, and say so once
            self._unavailable = True
            log.warning("tool ranking is off (every tool is offered): %s", exc)
            return None
        order = np.argsort(-scores, kind="stable")
        chosen = {tools[i].name for i in order[: self.top_k]}
        chosen |= {t.name for t in tools if t.name in request.used}
        return [t.name for t in tools if t.name in chosen]

    def scores(self, tools: Sequence[ToolSchema], query: str, conversation: list[str]) -> Any:
        """The relevance of each tool (blocking: the caller runs it in a worker thread)."""
        _, vectors, words, weights = self._index(tools)
        context = " ".join(conversation[-CONVERSATION_TURNS:])[-MAX_TEXT:]
        texts = [query[:MAX_TEXT], context] if context.strip() else [query[:MAX_TEXT]]
        encoded = np.asarray(self.encode(texts), dtype=np.float32)
        scores = vectors @ encoded[0]
        if len(encoded) > 1:
            scores = scores + CONVERSATION_WEIGHT * (vectors @ encoded[1])
        asked = set(_WORD.findall(query.lower()))
        named = [sum(weights.get(w, 0.0) for w in asked & tool_words) for tool_words in words]
        return scores + NAME_WEIGHT * np.asarray(named, dtype=np.float32)

    def encode(self, texts: list[str]) -> Any:
        if self._encode is None:
            from loopwright.knowledge.embeddings import MINILM

            self._encode = MINILM.encode
        return self._encode(texts)

    def _index(
        self, tools: Sequence[ToolSchema]
    ) -> tuple[tuple[str, ...], Any, list[set[str]], dict[str, float]]:
        texts = tuple(tool_text(t) for t in tools)
        cached = self._tools
        if cached is None or cached[0] != texts:
            vectors = np.asarray(self.encode(list(texts)), dtype=np.float32)
            words = [set(_WORD.findall(text.lower())) for text in texts]
            counts: dict[str, int] = {}
            for tool_words in words:
                for w in tool_words:
                    counts[w] = counts.get(w, 0) + 1
            # rare words only: one in at most 3 tools weighs 1 for one tool, less for more
            weights = {w: 1.0 / math.sqrt(c) for w, c in counts.items() if c <= 3}
            cached = self._tools = (texts, vectors, words, weights)
        return cached
