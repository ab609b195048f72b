"""The agent log of a message: Dify's console agent-log shape (``services/agent_service.get_agent_logs``),
built from what is stored (the message, its thoughts, its files), so it is there for any past message
and after a restart.

Shape: ``{"meta": {status, executor, start_time, elapsed_time, total_tokens, agent_mode, iterations},
"iterations": [{tokens, tool_calls: [{status, error, time_cost, tool_name, tool_label, tool_input,
tool_output, tool_parameters, tool_icon}], tool_raw: {inputs, outputs}, thought, created_at, files}],
"files": [...]}``. loopwright adds ``meta.metrics`` (the run's stored ``RunMetrics``, or None for a
message stored without them) and ``meta.status`` is ``"error"`` for a failed message (Dify always says
``"success"``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.app.conversations import MESSAGE_NOT_FOUND
from loopwright.app.lookup import AppLookup
from loopwright.errors import NotFoundError
from loopwright.store import codec
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import Conversation, EndUser, Message, MessageAgentThought, MessageFile

# The app config's strategy as Dify's agent_mode strategy names it.
_AGENT_MODE = {"function-calling": "function_call", "react": "react", "auto": "auto"}


async def agent_log(
    db: Database, lookup: AppLookup, app_id: str, user: str, message_id: str
) -> dict[str, Any]:
    """The agent log of one of the end user's messages in this app (the Service API's);
    :class:`NotFoundError` when the message is not theirs (Dify's message)."""
    end_user_id = await lookup.end_user_id(app_id, user)
    async with db.transaction() as session:
        message = await repo.find_user_message(session, app_id, end_user_id, message_id)
        if message is None:
            raise NotFoundError(MESSAGE_NOT_FOUND)
        rows = await _rows(session, message)
    return await _log(lookup, rows, executor=user)


async def message_agent_log(db: Database, message_id: str) -> dict[str, Any]:
    """The agent log of any message, by id (for operators: ``loopwright log``); the executor is the
    end user's ``user`` identifier."""
    async with db.transaction() as session:
        message = await session.get(Message, message_id)
        if message is None:
            raise NotFoundError(MESSAGE_NOT_FOUND)
        rows = await _rows(session, message)
        end_user = await session.get(EndUser, rows.conversation.end_user_id) if rows.conversation else None
    return await _log(AppLookup(db), rows, executor=end_user.session_id if end_user else "")


@dataclass(slots=True)
class _Rows:
    message: Message
    thoughts: list[MessageAgentThought]
    files: list[MessageFile]
    conversation: Conversation | None


async def _rows(session: AsyncSession, message: Message) -> _Rows:
    thoughts = (await repo.thoughts_of_messages(session, [message.id])).get(message.id, [])
    files = (await repo.files_of_messages(session, [message.id])).get(message.id, [])
    conv = await session.get(Conversation, message.conversation_id)
    return _Rows(message, thoughts, files, conv)


async def _log(lookup: AppLookup, rows: _Rows, *, executor: str) -> dict[str, Any]:
    strategy = "auto"
    if rows.conversation is not None:
        version = await lookup.config(rows.conversation.app_config_id)
        if version is not None:
            strategy = version.config.strategy
    return build_agent_log(
        rows.message, rows.thoughts, rows.files, executor=executor, agent_mode=_AGENT_MODE[strategy]
    )


def build_agent_log(
    message: Message,
    thoughts: Sequence[MessageAgentThought],
    files: Sequence[MessageFile],
    *,
    executor: str,
    agent_mode: str,
) -> dict[str, Any]:
    """The log from stored rows (thoughts in position order)."""
    metadata = codec.decode_json_object(message.message_metadata) or {}
    metrics = metadata.get("metrics")
    return {
        "meta": {
            "status": "error" if message.status == "error" else "success",
            "executor": executor or "Unknown",
            "start_time": _iso(message.created_at),
            "elapsed_time": message.provider_response_latency,
            "total_tokens": message.answer_tokens + message.message_tokens,
            "agent_mode": agent_mode,
            "iterations": len(thoughts),
            "metrics": metrics if isinstance(metrics, dict) else None,
        },
        "iterations": [_iteration(t) for t in thoughts],
        "files": [_file(f) for f in files],
    }


def _iteration(t: MessageAgentThought) -> dict[str, Any]:
    names = codec.split_tool_names(t.tool)
    keys = codec.unique_tool_keys(names)  # a tool called twice in a round is stored as name, name_1
    inputs = _per_tool(t.tool_input, keys)
    outputs = _per_tool(t.observation, keys)
    metas = codec.decode_json_object(t.tool_meta_str) or {}
    labels = codec.decode_json_object(t.tool_labels_str) or {}
    calls = []
    for name, key in zip(names, keys, strict=True):
        meta = metas.get(key)
        meta = meta if isinstance(meta, dict) else {}
        calls.append(
            {
                "status": "error" if meta.get("error") else "success",
                "error": meta.get("error"),
                "time_cost": meta.get("time_cost", 0),
                "tool_name": name,
                "tool_label": labels.get(name, name),
                "tool_input": inputs.get(key, {}),
                "tool_output": outputs.get(key, {}),
                "tool_parameters": meta.get("tool_parameters", {}),
                "tool_icon": "",
            }
        )
    files = _maybe_json(t.message_files or "[]")
    return {
        "tokens": t.tokens or 0,
        "tool_calls": calls,
        "tool_raw": {"inputs": t.tool_input or "", "outputs": t.observation or ""},
        "thought": t.thought or "",
        "created_at": _iso(t.created_at),
        "files": files if isinstance(files, list) else [],
    }


def _per_tool(text: str | None, keys: Sequence[str]) -> dict[str, Any]:
    """A round's per-tool JSON by key; text that is not such an object belongs whole to a single tool
    (Dify's tool_inputs_dict / tool_outputs_dict)."""
    if not text:
        return {}
    value = codec.decode_json_object(text)
    if value is not None and (len(keys) != 1 or keys[0] in value):
        return value
    if len(keys) == 1:
        return {keys[0]: value if value is not None else _maybe_json(text)}
    return {key: text for key in keys}


def _maybe_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _file(f: MessageFile) -> dict[str, Any]:
    return {
        "id": f.id,
        "type": f.type,
        "transfer_method": f.transfer_method,
        "url": f.url,
        "belongs_to": f.belongs_to,
        "upload_file_id": f.upload_file_id,
    }


def _iso(value: datetime) -> str:
    """A stored datetime (naive, in UTC) as ISO 8601 with its offset."""
    return (value.replace(tzinfo=UTC) if value.tzinfo is None else value).isoformat()
