"""A message's agent log, in the shape of Dify's console agent log (``AgentService.get_agent_logs``):
``meta`` (status, executor, start time, elapsed time, total tokens, agent mode, iterations) and one
iteration per stored round with its thought, tool calls (name, label, input, output, status, error,
time cost), tokens and files. Built from the stored rows only, so it works for any past message and
after a restart. ``meta.metrics`` (the run's figures, agent.metrics) is our addition.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from loopwright.app.admin.conversations import MESSAGE_NOT_FOUND
from loopwright.app.lookup import AppLookup
from loopwright.errors import NotFoundError
from loopwright.store import codec
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import Conversation, EndUser, Message, MessageAgentThought

# Dify's names for the strategies (its app config's agent_mode.strategy)
AGENT_MODES = {"function-calling": "function_call", "react": "react"}


async def find_message(
    db: Database, lookup: AppLookup, app_id: str, user: str, message_id: str
) -> tuple[Message, list[MessageAgentThought], str]:
    """The end user's message with its thoughts and the configuration id of its conversation;
    :class:`NotFoundError` (Dify's text) for a message that is not theirs."""
    end_user_id = await lookup.end_user_id(app_id, user)
    async with db.transaction() as session:
        message = await repo.find_user_message(session, app_id, end_user_id, message_id)
        if message is None:
            raise NotFoundError(MESSAGE_NOT_FOUND)
        thoughts = await repo.list_thoughts(session, message_id)
        conversation = await session.get(Conversation, message.conversation_id)
    return message, thoughts, conversation.app_config_id if conversation else ""


async def message_log(db: Database, message_id: str) -> dict[str, Any]:
    """The agent log of any stored message, by id, for operators (``loopwright log``): the executor
    is the end user's ``user``; ``agent_mode`` is the app configuration's strategy (``auto`` when the
    app lets the model decide, since building the model to resolve it is not a log's job)."""
    async with db.transaction() as session:
        message = await session.get(Message, message_id)
        if message is None:
            raise NotFoundError(MESSAGE_NOT_FOUND)
        thoughts = await repo.list_thoughts(session, message_id)
        conversation = await session.get(Conversation, message.conversation_id)
        end_user = await session.get(EndUser, conversation.end_user_id) if conversation else None
    version = await AppLookup(db).config(conversation.app_config_id) if conversation else None
    strategy = version.config.strategy if version is not None else "auto"
    return agent_log(message, thoughts, executor=end_user.session_id if end_user else "", strategy=strategy)


def agent_log(
    message: Message,
    thoughts: Sequence[MessageAgentThought],
    *,
    executor: str,
    strategy: str,
) -> dict[str, Any]:
    """The agent log of ``message`` (see the module's docstring)."""
    metadata = codec.decode_json_object(message.message_metadata) or {}
    meta: dict[str, Any] = {
        "status": "error" if message.status == "error" else "success",
        "executor": executor,
        "start_time": message.created_at.isoformat(),
        "elapsed_time": message.provider_response_latency,
        "total_tokens": message.message_tokens + message.answer_tokens,
        "agent_mode": AGENT_MODES.get(strategy, strategy),
        "iterations": len(thoughts),
    }
    if "metrics" in metadata:
        meta["metrics"] = metadata["metrics"]
    if "compaction" in metadata:  # the history's compaction, with the summary the prompt began with
        meta["compaction"] = metadata["compaction"]
    return {
        "meta": meta,
        "iterations": [_iteration(t) for t in thoughts],
        "files": [f for t in thoughts for f in _files(t)],
    }


def _iteration(row: MessageAgentThought) -> dict[str, Any]:
    names = codec.split_tool_names(row.tool)
    labels = codec.tool_labels(row.tool, codec.decode_json_object(row.tool_labels_str))
    metas = codec.decode_json_object(row.tool_meta_str) or {}
    inputs = codec.decode_history_inputs(row.tool, row.tool_input)
    outputs = codec.decode_history_observations(row.tool, row.observation)
    calls = []
    for name, key in zip(names, codec.unique_tool_keys(names), strict=True):
        meta = metas.get(key) or {}
        calls.append(
            {
                "status": "error" if meta.get("error") else "success",
                "error": meta.get("error"),
                "time_cost": meta.get("time_cost", 0),
                "tool_name": name,
                "tool_label": labels.get(name, codec.fallback_label(name)),
                "tool_input": inputs.get(key, {}),
                "tool_output": outputs.get(key, ""),
                "tool_parameters": meta.get("tool_parameters", {}),
                "tool_icon": "",
            }
        )
    return {
        "tokens": row.tokens or 0,
        "tool_calls": calls,
        "tool_raw": {"inputs": row.tool_input or "", "outputs": row.observation or ""},
        "thought": row.thought or "",
        "created_at": row.created_at.isoformat(),
        "files": _files(row),
    }


def _files(row: MessageAgentThought) -> list[str]:
    try:
        files = json.loads(row.message_files or "[]")
    except json.JSONDecodeError:
        return []
    return [str(f) for f in files] if isinstance(files, list) else []
