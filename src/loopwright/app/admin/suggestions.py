"""Suggested questions after an answer, as Dify makes them (``LLMGenerator.
generate_suggested_questions_after_answer``): the conversation's last three exchanges as
``Human:``/``Assistant:`` lines, Dify's instruction, one call of the app's model (``max_tokens`` 256,
``temperature`` 0), and the first JSON array of strings in the reply. A failing model gives no
questions, as in Dify.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence

from loopwright.model.base import Model
from loopwright.model.entities import UserMessage

log = logging.getLogger("loopwright.app")

# Dify's SUGGESTED_QUESTIONS_AFTER_ANSWER_INSTRUCTION_PROMPT (core/llm_generator/prompts.py).
INSTRUCTION = (
    "Please help me predict the three most likely questions that human would ask, "
    "and keep each question under 20 characters.\n"
    "MAKE SURE your output is the SAME language as the Assistant's latest response. "
    "The output must be an array in JSON format following the specified schema:\n"
    '["question1","question2","question3"]\n'
)
HISTORY_MESSAGES = 3  # Dify's message_limit for this prompt
_ARRAY = re.compile(r"\[.*?\]", re.DOTALL)


def suggestion_prompt(exchanges: Sequence[tuple[str, str]]) -> str:
    """Dify's prompt for the conversation's last exchanges (query, answer), oldest first."""
    histories = "\n".join(f"Human: {query}\nAssistant: {answer}" for query, answer in exchanges)
    return f"{histories}\n{INSTRUCTION}\nquestions:\n"


def questions_from_reply(reply: str) -> list[str]:
    """The strings of the first JSON array in the reply (none when there is no readable array)."""
    match = _ARRAY.search(reply.strip())
    if match is None:
        return []
    try:
        parsed = json.loads(match.group(0))
    except ValueError:
        return []
    return [q for q in parsed if isinstance(q, str)] if isinstance(parsed, list) else []


async def suggest_questions(model: Model, exchanges: Sequence[tuple[str, str]]) -> list[str]:
    """Ask ``model`` for the questions a user may ask next ([] when the call fails)."""
    parts: list[str] = []
    try:
        async for chunk in model.stream(
            [UserMessage(suggestion_prompt(exchanges))], params={"max_tokens": 256, "temperature": 0}
        ):
            parts.append(chunk.text)
    except Exception:
        log.warning("suggesting questions failed", exc_info=True)
        return []
    return questions_from_reply("".join(parts))
