"""The graded checks of an answer: semantic similarity with an embedding model (the packaged MiniLM
by default; nothing is downloaded) and an LLM judge that scores the answer against a rubric (any
configured model). Both give a score and pass at their ``min``."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import numpy as np

from loopwright.evals.results import Check, TurnTrace
from loopwright.evals.schema import Judge, Similar
from loopwright.model.entities import SystemMessage, UserMessage

if TYPE_CHECKING:
    from loopwright.knowledge.embeddings import Embedder
    from loopwright.model.base import Model

JUDGE_INSTRUCTION = (
    "You grade the answer an assistant gave, against a rubric. Read the question, the tools the "
    "assistant called and its answer, then reply with one JSON object and nothing else: "
    '{"score": <a number from 0 to 1: how well the answer meets the rubric>, "reason": "<one sentence>"}'
)
_SCORE = re.compile(r"\"score\"\s*:\s*(-?\d+(?:\.\d+)?)")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")

EmbedderFor = Callable[[str], "Embedder | None"]
ModelFor = Callable[[str], Awaitable["Model"]]


class Graders:
    """What the graded checks use, built once per run: embedders by spec, judge models by spec."""

    def __init__(self, embedder_for: EmbedderFor, model_for: ModelFor) -> None:
        self._embedder_for = embedder_for
        self._model_for = model_for
        self._embedders: dict[str, Embedder | None] = {}

    async def similar(self, expect: Similar, trace: TurnTrace) -> Check:
        if expect.embedding not in self._embedders:
            self._embedders[expect.embedding] = self._embedder_for(expect.embedding)
        embedder = self._embedders[expect.embedding]
        if embedder is None:
            return Check(
                name="answer.similar", passed=False, detail=f"no embedding model: {expect.embedding!r}"
            )
        vectors = np.asarray(await embedder.embed([trace.answer, expect.to]), dtype=np.float64)
        score = cosine(vectors[0], vectors[1])
        return Check(
            name="answer.similar",
            passed=score >= expect.min,
            score=round(score, 4),
            detail=f"similarity {score:.3f} (at least {expect.min:g}) to {expect.to!r}",
        )

    async def judge(self, expect: Judge, trace: TurnTrace, default_model: str | None) -> Check:
        spec = expect.model or default_model
        if spec is None:
            return Check(name="answer.judge", passed=False, detail="no judge model (give judge.model)")
        model = await self._model_for(spec)
        reply = await _complete(model, judge_prompt(expect.rubric, trace))
        score = judge_score(reply)
        if score is None:
            return Check(
                name="answer.judge", passed=False, detail=f"the judge gave no score: {reply[:120]!r}"
            )
        return Check(
            name="answer.judge",
            passed=score >= expect.min,
            score=score,
            detail=f"score {score:g} (at least {expect.min:g}) from {spec}: {_reason(reply)}",
        )


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.dot(a, b) / norm) if norm else 0.0


def judge_prompt(rubric: str, trace: TurnTrace) -> list[SystemMessage | UserMessage]:
    calls = "\n".join(
        f"- {c.name}({json.dumps(c.args, ensure_ascii=False)}) → {c.output[:500]}" for c in trace.tool_calls
    )
    body = (
        f"Rubric: {rubric}\n\nQuestion: {trace.query}\n\nTool calls:\n{calls or '(none)'}\n\n"
        f"Answer: {trace.answer}"
    )
    return [SystemMessage(JUDGE_INSTRUCTION), UserMessage(body)]


def judge_score(reply: str) -> float | None:
    """The score in a judge's reply (its JSON's ``score``, else the first number), clamped to 0–1."""
    found = _SCORE.search(reply) or _NUMBER.search(reply)
    if found is None:
        return None
    value = float(found.group(1) if found.re is _SCORE else found.group(0))
    return min(max(value, 0.0), 1.0)


def _reason(reply: str) -> str:
    try:
        data = json.loads(reply[reply.index("{") : reply.rindex("}") + 1])
    except ValueError:
        return reply.strip()[:200]
    return str(data.get("reason", ""))[:200] if isinstance(data, dict) else ""


async def _complete(model: Model, messages: list[SystemMessage | UserMessage]) -> str:
    parts: list[str] = []
    stream = model.stream(messages, params={"temperature": 0.0})
    try:
        async for chunk in stream:
            if chunk.text:
                parts.append(chunk.text)
    finally:
        await stream.aclose()
    return "".join(parts)
