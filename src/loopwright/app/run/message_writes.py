"""The rows of one message, queued on the database's write-behind writer as the run goes.

The column values come from the store's repository builders (``repositories.new_conversation``,
``new_message``, ``new_message_file``, ``new_thought``, ``thought_values``, ``message_result``) — the same
functions the store's own tests check against SQLite and PostgreSQL; this module only decides when each
row is written: the conversation and message rows when the message starts, a round's thought row at the
end of each round, tool files as they come, the outcome at the end. Every write goes under the
conversation's key, so they land in order and a reader of the conversation can wait for them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from loopwright.app.dify.stream import DifyStream, ThoughtRow, file_type
from loopwright.model.entities import Usage
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import (
    Conversation,
    Message,
    MessageAgentThought,
    MessageFile,
    PendingApproval,
    utcnow,
)
from loopwright.store.threads import UUID_NIL
from loopwright.store.writer import Insert, Update, WriteOp
from loopwright.tools.base import ToolOutput
from loopwright.tools.files.signing import tool_file_of_url

NAME_CHARS = 20


def conversation_name(query: str) -> str:
    """Dify's first name for a conversation: the first 20 characters of the query, then ``…``."""
    query = query.strip()
    return query if len(query) <= NAME_CHARS else query[:NAME_CHARS] + "…"


class MessageWrites:
    """Queues the writes of one message (``conversation_id``, ``message_id``) on ``db.writer``."""

    def __init__(self, db: Database, conversation_id: str, message_id: str) -> None:
        self._db = db
        self._key = conversation_id
        self._message_id = message_id
        self._inserted: set[str] = set()
        self._release: asyncio.Task[None] | None = None  # kept: a task nobody references may vanish
        self.end_user_id = ""
        self.compaction: dict[str, Any] | None = None  # what compaction did (app.run.compaction), for the log

    def start(
        self,
        *,
        app_id: str,
        config_id: str,
        query: str,
        inputs: dict[str, Any],
        files: Sequence[dict[str, Any]],
        new_conversation: bool,
        end_user: str | asyncio.Task[str],
        now: datetime,
        worker_id: str | None = None,
        parent_message_id: str | None = UUID_NIL,
    ) -> None:
        """Queue the message's first rows (and its conversation's, when new) and return at once: the run
        starts while they are written. ``end_user`` is the end user's id, or the task finding it (a new
        user of a new conversation): then the rows, and every later write of the message, wait for it."""
        # ``parent_message_id``: the message it follows (a branch: a new version of a message), or
        # UUID_NIL for "the one before" (a linear conversation, as Dify's Service API), see store.threads
        message = repo.new_message(
            self._message_id,
            self._key,
            app_id,
            query,
            inputs=inputs,
            parent_message_id=parent_message_id,
            now=now,
            worker_id=worker_id,
        )
        rows: list[WriteOp] = [Insert(Message, message)]
        rows += [Insert(MessageFile, repo.new_message_file(self._message_id, f, now=now)) for f in files]
        if not new_conversation:
            self._submit(Update(Conversation, {"id": self._key, "updated_at": now}), *rows)
            return
        conversation = repo.new_conversation(
            self._key, app_id, "", config_id, name=conversation_name(query), inputs=inputs, now=now
        )
        if isinstance(end_user, str):
            self.end_user_id = conversation["end_user_id"] = end_user
            self._submit(_new_conversation(conversation), *rows)
            return
        self._db.writer.hold(self._key)
        self._release = asyncio.ensure_future(self._release_when_known(end_user, conversation, rows))

    async def _release_when_known(
        self, end_user: asyncio.Task[str], conversation: dict[str, Any], rows: list[WriteOp]
    ) -> None:
        try:
            self.end_user_id = conversation["end_user_id"] = await asyncio.shield(end_user)
        except BaseException:
            # The parked writes fail on their own (no conversation row) rather than wait for ever.
            self._db.writer.release(self._key)
            raise
        self._db.writer.release(self._key, _new_conversation(conversation), *rows)

    def save_round(self, row: ThoughtRow, labels: Mapping[str, Mapping[str, str]]) -> None:
        """Queue a round's thought row as it stands: an insert the first time, an update after that.
        The mirror in the wire adapter (``DifyStream.thoughts``) is the source of truth."""
        values = _thought_values(row, labels)
        if row.id in self._inserted:
            op: Insert | Update = Update(MessageAgentThought, values)
        else:
            self._inserted.add(row.id)
            new = repo.new_thought(self._message_id, row.position, thought_id=row.id)
            op = Insert(MessageAgentThought, {**new, **values})
        self._submit(op)

    def save_tool_files(self, files: Sequence[tuple[str, ToolOutput]]) -> None:
        """``message_files`` rows of the files tools made (Dify: ``transfer_method="tool_file"``), under
        the ids their ``message_file`` events carried. A tool file's URL is kept without its signature,
        which expires: readers sign it again."""
        now = utcnow()
        for file_id, output in files:
            url = getattr(output, "url", "") or ""
            if tool_file_of_url(url) is not None:  # ours: drop the signature (…?timestamp=…&sign=…)
                url = url.partition("?")[0]
            mime = getattr(output, "mime_type", None) or "application/octet-stream"
            values = {
                "id": file_id,
                "type": file_type(mime),
                "transfer_method": "tool_file",
                "url": url,
                "belongs_to": "assistant",
                "upload_file_id": None,
                "created_by_role": "end_user",
                "created_by": self.end_user_id,
            }
            self._submit(Insert(MessageFile, repo.new_message_file(self._message_id, values, now=now)))

    async def finish(
        self, stream: DifyStream, status: str, error: str | None, elapsed: float
    ) -> tuple[str, Usage]:
        """Queue the last thought writes and the message's outcome, and wait until they are written
        (a run has ended only when it is stored; a failure is logged by the writer). Returns the stored
        answer and usage."""
        # A row changes only while it is the last one (or a plan's, whose checklist ticks: ``revised``):
        # those, and any never saved (a stop or an error mid-round), are what a round's end did not write.
        thoughts = stream.thoughts
        cut = thoughts[-1] if thoughts and status in ("stopped", "error") else None
        if cut is not None and not cut.thought and not cut.names:
            # A round cut off before it ended has no thought of its own yet: it keeps the text it
            # streamed, so a reader of the history shows the partial answer where the stream showed it.
            cut.thought = stream.partial_answer
        for row in thoughts:
            if row.id not in self._inserted or row is thoughts[-1] or row.revised:
                self.save_round(row, stream.labels)
        usage = stream.total_usage.with_latency(elapsed)  # the whole message's time, as Dify
        streamed = stream.end.metadata["usage"] if stream.end is not None else stream.usage_dict()
        meta: dict[str, Any] = {"usage": streamed, "retriever_resources": stream.retriever_resources}
        if stream.annotation_reply is not None:
            meta["annotation_reply"] = stream.annotation_reply
        if stream.metrics is not None:
            meta["metrics"] = stream.metrics.to_dict()  # ours, beside Dify's keys
        if self.compaction is not None:
            meta["compaction"] = self.compaction  # ours too
        metadata = json.dumps(meta, ensure_ascii=False)
        # a paused message has no answer yet (its last round's thought is in its thought row)
        answer = repo.storable(stream.answer or ("" if status == "waiting" else stream.partial_answer))
        result = repo.message_result(
            answer=answer,
            usage=usage,
            status=status,
            error=repo.storable(error) if error else None,
            metadata=metadata,
        )
        result["id"] = self._message_id
        if stream.answered_by is not None:  # handoffs: the app whose agent answered (app.run.handoffs)
            result["answered_by"] = stream.answered_by
        await asyncio.wait({self._db.writer.submit(Update(Message, result), key=self._key)})
        return answer, usage

    def pause(self, pending: dict[str, Any]) -> None:
        """Queue the ``pending_approvals`` row of a message that waits for decisions (``finish`` with
        status ``waiting`` follows, so the row is in when the run has ended)."""
        self._submit(Insert(PendingApproval, pending))

    def resumed(self, thought_ids: Sequence[str], end_user_id: str, worker_id: str | None) -> None:
        """A paused message runs again: its thought rows exist (updates from now on), and it is
        ``running`` in this process (app.run.recovery) until it ends."""
        self._inserted.update(thought_ids)
        self.end_user_id = end_user_id
        self._submit(Update(Message, {"id": self._message_id, "status": "running", "worker_id": worker_id}))

    async def stopped_while_paused(self) -> None:
        """A message stopped while it waited for approvals: ``stopped``, its rows as they were."""
        values = repo.message_result(status="stopped")
        values["id"] = self._message_id
        await asyncio.wait({self._db.writer.submit(Update(Message, values), key=self._key)})

    def submit(self, op: WriteOp) -> None:
        """Queue another write that goes with the message (a conversation's summary), in order with
        its rows."""
        self._submit(op)

    async def count(self, op: WriteOp) -> None:
        """Write another change that goes with the message (the usage counters of a capped app), in
        order with its rows, and wait until it is in (the next request reads it); a failure is logged
        by the writer."""
        await asyncio.wait({self._db.writer.submit(op, key=self._key)})

    def _submit(self, *ops: WriteOp) -> None:
        for op in ops:
            self._db.writer.submit(op, key=self._key)


def _thought_values(row: ThoughtRow, labels: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    return repo.thought_values(
        row.id,
        row.position,
        thought=row.thought,
        tool_names=row.names,
        tool_inputs=row.inputs,
        observations=row.observations,
        metas=row.metas,
        answer=row.answer,
        file_ids=row.message_files,
        usage=row.usage,
        labels=labels,
    )


def _new_conversation(values: dict[str, Any]) -> Insert:
    """A new conversation's row; when one is there already, nothing. An id the server made is new,
    but a caller that names its conversations (AG-UI's threadId) may start two runs of a new one at
    once: both are the conversation's, and neither run's rows are lost."""
    return Insert(Conversation, values, unless_present=True)
