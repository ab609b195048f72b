"""Conversation names made by the app's model, as Dify makes them (``LLMGenerator.
generate_conversation_name``): Dify's title prompt with the first query appended, one call
(``max_tokens`` 500, ``temperature`` 1), the JSON reply's ``"Your Output"`` — the query itself when
the reply is not such JSON — cut at 75 characters plus ``...``. An empty reply names nothing.

A new conversation first gets the query's first 20 characters (``message_writes.conversation_name``);
when the request asks for ``auto_generate_name`` (Dify's default) and the app names conversations
(``app.config.names_conversations``: ``generate_conversation_names``, unset — Dify's default — for a
hosted model; or the server runs ``dify_strict``), :func:`rename_in_background` replaces that name
after the first answer. The embedded and scripted models are spared the call unless asked.
``POST /v1/conversations/{id}/name`` with ``auto_generate`` calls :func:`generate_name` directly.
"""

from __future__ import annotations

import asyncio
import json
import logging

from loopwright.model.base import Model
from loopwright.model.entities import UserMessage
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import Conversation

log = logging.getLogger("loopwright.app")

# Dify's CONVERSATION_TITLE_PROMPT (core/llm_generator/prompts.py), word for word: models are tuned
# to answer it with the JSON below.
CONVERSATION_TITLE_PROMPT = """You are asked to generate a concise chat title by decomposing the user’s input into two parts: “Intention” and “Subject”.

1. Detect Input Language
Automatically identify the language of the user’s input (e.g. English, Chinese, Italian, Español, Arabic, Japanese, French, and etc.).

2. Generate Title
- Combine Intention + Subject into a single, as-short-as-possible phrase.
- The title must be natural, friendly, and in the same language as the input.
- If the input is a direct question to the model, you may add an emoji at the end.

3. Output Format
Return **only** a valid JSON object with these exact keys and no additional text:
{
  "Language Type": "<Detected language>",
  "Your Reasoning": "<Brief explanation in that language>",
  "Your Output": "<Intention + Subject>"
}

User Input:
"""  # noqa: E501
MAX_NAME_CHARS = 75
MAX_QUERY_CHARS = 2000


def title_prompt(query: str) -> str:
    """Dify's prompt for ``query`` (a long query keeps its first and last 300 characters)."""
    if len(query) > MAX_QUERY_CHARS:
        query = query[:300] + "...[TRUNCATED]..." + query[-300:]
    return CONVERSATION_TITLE_PROMPT + query.replace("\n", " ") + "\n"


def title_from_reply(reply: str, query: str) -> str:
    """The name in the model's reply, as Dify reads it (see the module's docstring)."""
    if not reply:
        return ""
    try:
        parsed = json.loads(reply)
    except ValueError:
        parsed = _json_in(reply)
    output = parsed.get("Your Output") if isinstance(parsed, dict) else None
    name = output.strip() if isinstance(output, str) and output.strip() else query.strip()
    return name[:MAX_NAME_CHARS] + "..." if len(name) > MAX_NAME_CHARS else name


def _json_in(text: str) -> object:
    """The first JSON object inside ``text`` (a reply wrapped in prose or a code fence), or None."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        return json.loads(text[start : end + 1])
    except ValueError:
        return None


async def generate_name(model: Model, query: str) -> str:
    """One call of ``model`` for the conversation name of ``query`` ("" when it answers nothing)."""
    parts: list[str] = []
    async for chunk in model.stream(
        [UserMessage(title_prompt(query))], params={"max_tokens": 500, "temperature": 1}
    ):
        parts.append(chunk.text)
    return title_from_reply("".join(parts).strip(), query)


async def rename_after_answer(db: Database, model: Model, conversation_id: str, query: str) -> None:
    """Name a new conversation by ``model`` once its first message is stored (a failure keeps the
    first name; it is logged)."""
    try:
        name = await generate_name(model, query)
        if not name:
            return
        await db.writer.settled(conversation_id)
        async with db.transaction() as session:
            conversation = await session.get(Conversation, conversation_id)
            if conversation is not None and not conversation.is_deleted:
                await repo.rename_conversation(session, conversation, name)
    except Exception:
        log.warning("naming conversation %s failed", conversation_id, exc_info=True)


def rename_in_background(
    db: Database, model: Model, conversation_id: str, query: str, tasks: set[asyncio.Task[None]]
) -> None:
    """Start :func:`rename_after_answer`; ``tasks`` keeps it alive until it ends. Not once ``db`` is
    closed (a run that ended as its process shut down): the work would outlive the database."""
    if db.closed:
        return
    task = asyncio.get_running_loop().create_task(
        rename_after_answer(db, model, conversation_id, query), name="loopwright-naming"
    )
    tasks.add(task)
    task.add_done_callback(tasks.discard)
