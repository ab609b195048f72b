"""SQLAlchemy models: apps, versioned app configs, API keys, end users, conversations, messages, agent
thoughts, files and feedback. Column names follow Dify's ``models/model.py`` where Dify has them.

Conventions: UUID strings as primary keys; naive UTC timestamps (as Dify); money in :class:`DecimalText`
(a decimal string on SQLite, ``NUMERIC`` elsewhere); Dify's JSON-in-text columns stay text and are read
and written through :mod:`loopwright.store.codec`.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    Numeric,
    String,
    Text,
    UniqueConstraint,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator, TypeEngine

__all__ = [
    "ApiKey",
    "App",
    "AppConfig",
    "Base",
    "Conversation",
    "ConversationSummary",
    "DecimalText",
    "EndUser",
    "MemoryBlock",
    "MemoryObservation",
    "Message",
    "MessageAgentThought",
    "MessageFeedback",
    "MessageFile",
    "RunEvent",
    "RunStream",
    "UploadFile",
    "UsageCounter",
    "new_id",
    "utcnow",
]

PRICE_UNIT = Decimal("0.001")


def new_id() -> str:
    return str(uuid.uuid4())


def utcnow() -> datetime:
    """Naive UTC, as Dify stores timestamps."""
    return datetime.now(UTC).replace(tzinfo=None)


def unix_seconds(value: datetime) -> int:
    """Unix seconds of a stored datetime (stored naive, in UTC), as Dify's ``created_at`` fields."""
    return int(value.replace(tzinfo=UTC).timestamp()) if value.tzinfo is None else int(value.timestamp())


class DecimalText(TypeDecorator[Decimal]):
    """A Decimal stored losslessly: ``NUMERIC(precision, scale)`` where the database has decimals, a
    decimal string on SQLite (which would otherwise round through float and warn)."""

    impl = Numeric
    cache_ok = True

    def __init__(self, precision: int = 10, scale: int = 7) -> None:
        super().__init__()
        self.precision = precision
        self.scale = scale

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String(40))
        return dialect.type_descriptor(Numeric(self.precision, self.scale, asdecimal=True))

    def process_bind_param(self, value: Decimal | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        value = Decimal(value)
        return str(value) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        if value is None:
            return None
        return value if isinstance(value, Decimal) else Decimal(str(value))

    @property
    def python_type(self) -> type[Decimal]:
        return Decimal


class Base(DeclarativeBase):
    pass


def _id() -> Mapped[str]:
    return mapped_column(String(36), primary_key=True, default=new_id)


def _created() -> Mapped[datetime]:
    return mapped_column(DateTime, nullable=False, default=utcnow)


def _money(default: str = "0") -> Mapped[Decimal]:
    return mapped_column(DecimalText(10, 7), nullable=False, default=Decimal(default))


class App(Base):
    __tablename__ = "apps"

    id: Mapped[str] = _id()
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    mode: Mapped[str] = mapped_column(String(32), nullable=False, default="agent-chat")
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")
    icon: Mapped[str | None] = mapped_column(String(255))
    # Dify's access switches: ``status`` other than "normal" (``loopwright app disable``) or
    # ``enable_api`` off (``app disable --api``) make the Service API answer 403.
    status: Mapped[str] = mapped_column(String(32), nullable=False, default="normal", server_default="normal")
    enable_api: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True, server_default=true())
    created_at: Mapped[datetime] = _created()


class AppConfig(Base):
    """One version of an app's configuration. Versions are appended, never updated in place, so a
    conversation can stay pinned to the version it started with."""

    __tablename__ = "app_configs"
    __table_args__ = (UniqueConstraint("app_id", "version", name="uq_app_configs_app_version"),)

    id: Mapped[str] = _id()
    app_id: Mapped[str] = mapped_column(ForeignKey("apps.id", ondelete="CASCADE"), nullable=False)
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    created_at: Mapped[datetime] = _created()


class ApiKey(Base):
    __tablename__ = "api_keys"
    __table_args__ = (Index("ix_api_keys_token", "token", unique=True),)

    id: Mapped[str] = _id()
    app_id: Mapped[str] = mapped_column(ForeignKey("apps.id", ondelete="CASCADE"), nullable=False)
    token: Mapped[str] = mapped_column(String(255), nullable=False)
    created_at: Mapped[datetime] = _created()
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime)


class EndUser(Base):
    """A client's ``user`` string, scoped to one app."""

    __tablename__ = "end_users"
    __table_args__ = (UniqueConstraint("app_id", "session_id", name="uq_end_users_app_session"),)

    id: Mapped[str] = _id()
    app_id: Mapped[str] = mapped_column(ForeignKey("apps.id", ondelete="CASCADE"), nullable=False)
    session_id: Mapped[str] = mapped_column(String(255), nullable=False)
    created_at: Mapped[datetime] = _created()


class Conversation(Base):
    __tablename__ = "conversations"
    __table_args__ = (Index("ix_conversations_app_end_user", "app_id", "end_user_id", "updated_at"),)

    id: Mapped[str] = _id()
    app_id: Mapped[str] = mapped_column(ForeignKey("apps.id", ondelete="CASCADE"), nullable=False)
    app_config_id: Mapped[str] = mapped_column(ForeignKey("app_configs.id"), nullable=False)
    end_user_id: Mapped[str] = mapped_column(ForeignKey("end_users.id"), nullable=False)
    name: Mapped[str] = mapped_column(String(255), nullable=False, default="New conversation")
    inputs: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    status: Mapped[str] = mapped_column(String(32), nullable=False, default="normal")
    is_deleted: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = mapped_column(DateTime, nullable=False, default=utcnow)


class Message(Base):
    __tablename__ = "messages"
    __table_args__ = (
        Index("ix_messages_conversation_created", "conversation_id", "created_at"),
        Index("ix_messages_status", "status"),
    )

    id: Mapped[str] = _id()
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False
    )
    app_id: Mapped[str] = mapped_column(ForeignKey("apps.id", ondelete="CASCADE"), nullable=False)
    query: Mapped[str] = mapped_column(Text, nullable=False)
    answer: Mapped[str] = mapped_column(Text, nullable=False, default="")
    inputs: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    message_tokens: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    answer_tokens: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    total_price: Mapped[Decimal] = _money()
    currency: Mapped[str] = mapped_column(String(16), nullable=False, default="USD")
    provider_response_latency: Mapped[float] = mapped_column(Float, nullable=False, default=0.0)
    status: Mapped[str] = mapped_column(String(16), nullable=False, default="normal")
    error: Mapped[str | None] = mapped_column(Text)
    message_metadata: Mapped[str | None] = mapped_column(Text)
    parent_message_id: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = _created()
    # While the answer is being made (status "running"): the process making it (a Worker's id).
    worker_id: Mapped[str | None] = mapped_column(String(36))
    # The app whose agent produced the answer, when a handoff moved the message to another app (None:
    # the conversation's own app)
    answered_by: Mapped[str | None] = mapped_column(String(64))


class MessageAgentThought(Base):
    """One round of an agent: Dify's ``message_agent_thoughts``, text encodings included
    (see :mod:`loopwright.store.codec`)."""

    __tablename__ = "message_agent_thoughts"
    __table_args__ = (Index("ix_message_agent_thoughts_message_position", "message_id", "position"),)

    id: Mapped[str] = _id()
    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id", ondelete="CASCADE"), nullable=False)
    message_chain_id: Mapped[str | None] = mapped_column(String(36))
    position: Mapped[int] = mapped_column(Integer, nullable=False)
    thought: Mapped[str | None] = mapped_column(Text)
    tool: Mapped[str | None] = mapped_column(Text)
    tool_labels_str: Mapped[str] = mapped_column(Text, nullable=False, default="{}")
    tool_meta_str: Mapped[str] = mapped_column(Text, nullable=False, default="{}")
    tool_input: Mapped[str | None] = mapped_column(Text)
    observation: Mapped[str | None] = mapped_column(Text)
    tool_process_data: Mapped[str | None] = mapped_column(Text)
    message: Mapped[str | None] = mapped_column(Text)
    message_token: Mapped[int | None] = mapped_column(Integer)
    message_unit_price: Mapped[Decimal | None] = mapped_column(DecimalText(10, 7))
    message_price_unit: Mapped[Decimal] = _money(str(PRICE_UNIT))
    message_files: Mapped[str | None] = mapped_column(Text)
    answer: Mapped[str | None] = mapped_column(Text)
    answer_token: Mapped[int | None] = mapped_column(Integer)
    answer_unit_price: Mapped[Decimal | None] = mapped_column(DecimalText(10, 7))
    answer_price_unit: Mapped[Decimal] = _money(str(PRICE_UNIT))
    tokens: Mapped[int | None] = mapped_column(Integer)
    total_price: Mapped[Decimal | None] = mapped_column(DecimalText(10, 7))
    currency: Mapped[str | None] = mapped_column(String(16))
    latency: Mapped[float | None] = mapped_column(Float)
    created_by_role: Mapped[str] = mapped_column(String(32), nullable=False)
    created_by: Mapped[str] = mapped_column(String(255), nullable=False)
    created_at: Mapped[datetime] = _created()


class MessageFile(Base):
    __tablename__ = "message_files"
    __table_args__ = (Index("ix_message_files_message", "message_id"),)

    id: Mapped[str] = _id()
    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id", ondelete="CASCADE"), nullable=False)
    type: Mapped[str] = mapped_column(String(32), nullable=False)
    transfer_method: Mapped[str] = mapped_column(String(32), nullable=False)
    url: Mapped[str | None] = mapped_column(Text)
    belongs_to: Mapped[str] = mapped_column(String(16), nullable=False, default="user")
    upload_file_id: Mapped[str | None] = mapped_column(ForeignKey("upload_files.id"))
    created_by_role: Mapped[str] = mapped_column(String(32), nullable=False)
    created_by: Mapped[str] = mapped_column(String(255), nullable=False)
    created_at: Mapped[datetime] = _created()


class UploadFile(Base):
    __tablename__ = "upload_files"

    id: Mapped[str] = _id()
    app_id: Mapped[str] = mapped_column(ForeignKey("apps.id", ondelete="CASCADE"), nullable=False)
    end_user_id: Mapped[str | None] = mapped_column(ForeignKey("end_users.id"))
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    size: Mapped[int] = mapped_column(Integer, nullable=False)
    extension: Mapped[str] = mapped_column(String(32), nullable=False, default="")
    mime_type: Mapped[str] = mapped_column(String(255), nullable=False, default="application/octet-stream")
    storage_key: Mapped[str] = mapped_column(String(255), nullable=False)
    created_at: Mapped[datetime] = _created()


class MessageFeedback(Base):
    """One end user's rating of one message (``like`` | ``dislike``)."""

    __tablename__ = "message_feedbacks"
    __table_args__ = (
        UniqueConstraint("message_id", "end_user_id", name="uq_message_feedbacks_message_end_user"),
    )

    id: Mapped[str] = _id()
    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id", ondelete="CASCADE"), nullable=False)
    end_user_id: Mapped[str] = mapped_column(ForeignKey("end_users.id"), nullable=False)
    rating: Mapped[str] = mapped_column(String(16), nullable=False)
    content: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = mapped_column(DateTime, nullable=False, default=utcnow)


class Worker(Base):
    """A live process that runs messages (a server worker, a CLI run): it renews ``heartbeat_at``
    while it lives, so the running messages of one that died can be told apart and marked
    interrupted (``app.run.recovery``)."""

    __tablename__ = "workers"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    started_at: Mapped[datetime] = _created()
    heartbeat_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)
    # where it runs: a process on the same host that is gone is dead at once, whatever its heartbeat
    host: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    pid: Mapped[int] = mapped_column(Integer, nullable=False, default=0)


class RunStream(Base):
    """The event stream of one run (``task_id``), kept so that a client can re-attach to it from any
    worker and replay it for a while after it ended (``app.run.journal``). ``user`` is the end user's
    own id in the app (Dify's ``user``): only that user of that app may read it. The message's ids and
    creation time rebuild the leading fields of its events."""

    __tablename__ = "run_streams"

    task_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    app_id: Mapped[str] = mapped_column(String(36), nullable=False)
    user: Mapped[str] = mapped_column(String(255), nullable=False)
    message_id: Mapped[str] = mapped_column(String(36), nullable=False, index=True)  # the sweep's reads
    conversation_id: Mapped[str] = mapped_column(String(36), nullable=False)
    message_created_at: Mapped[int] = mapped_column(Integer, nullable=False)  # unix seconds, as events
    worker_id: Mapped[str | None] = mapped_column(String(36))  # the process running it (app.run.recovery)
    started_at: Mapped[datetime] = _created()
    ended_at: Mapped[datetime | None] = mapped_column(DateTime, index=True)  # None: still running
    # a stop asked by a worker that does not run it, where no notification reaches the others (SQLite)
    stop_user: Mapped[str | None] = mapped_column(String(255))


class RunEvent(Base):
    """Consecutive events of a run stream, written together (token deltas are batched): the events
    numbered ``first_seq`` to ``last_seq``, as a JSON list (``app.run.journal`` says what an item is).
    ``final``: the run ended with this chunk (it may hold no event)."""

    __tablename__ = "run_events"

    task_id: Mapped[str] = mapped_column(
        ForeignKey("run_streams.task_id", ondelete="CASCADE"), primary_key=True
    )
    first_seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    last_seq: Mapped[int] = mapped_column(Integer, nullable=False)
    items: Mapped[str] = mapped_column(Text, nullable=False)
    final: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    created_at: Mapped[datetime] = _created()


class MessageAnnotation(Base):
    """A question and the answer an app gives to it without its model (Dify's ``message_annotations``):
    written by hand, or from a message (``message_id``). The question's embedding is kept with the model
    spec that made it, filled when annotation reply first needs it (``app.guards.annotations``)."""

    __tablename__ = "message_annotations"
    __table_args__ = (Index("ix_message_annotations_app_created", "app_id", "created_at"),)

    id: Mapped[str] = _id()
    app_id: Mapped[str] = mapped_column(ForeignKey("apps.id", ondelete="CASCADE"), nullable=False)
    conversation_id: Mapped[str | None] = mapped_column(String(36))
    message_id: Mapped[str | None] = mapped_column(String(36))
    question: Mapped[str] = mapped_column(Text, nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    hit_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    account_id: Mapped[str | None] = mapped_column(String(255))  # who wrote it (no accounts here: a label)
    embedding_spec: Mapped[str | None] = mapped_column(String(255))
    embedding: Mapped[bytes | None] = mapped_column(LargeBinary)  # float32, little-endian
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = mapped_column(DateTime, nullable=False, default=utcnow)


class AppAnnotationSetting(Base):
    """An app's annotation reply as set over the Service API (wins over its configuration's)."""

    __tablename__ = "app_annotation_settings"

    id: Mapped[str] = _id()
    app_id: Mapped[str] = mapped_column(
        ForeignKey("apps.id", ondelete="CASCADE"), nullable=False, unique=True
    )
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    score_threshold: Mapped[float] = mapped_column(Float, nullable=False, default=0.9)
    embedding: Mapped[str] = mapped_column(String(255), nullable=False, default="minilm")
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = mapped_column(DateTime, nullable=False, default=utcnow)


class AppAnnotationHitHistory(Base):
    """A query answered by an annotation (Dify's ``app_annotation_hit_histories``)."""

    __tablename__ = "app_annotation_hit_histories"
    __table_args__ = (Index("ix_app_annotation_hit_histories_annotation", "annotation_id"),)

    id: Mapped[str] = _id()
    app_id: Mapped[str] = mapped_column(ForeignKey("apps.id", ondelete="CASCADE"), nullable=False)
    annotation_id: Mapped[str] = mapped_column(String(36), nullable=False)
    source: Mapped[str] = mapped_column(String(32), nullable=False, default="api")
    question: Mapped[str] = mapped_column(Text, nullable=False)
    message_id: Mapped[str] = mapped_column(String(36), nullable=False)
    score: Mapped[float] = mapped_column(Float, nullable=False, default=0.0)
    annotation_question: Mapped[str] = mapped_column(Text, nullable=False)
    annotation_content: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = _created()


class AnnotationJob(Base):
    """An annotation-reply enable or disable job, whose status clients poll (Dify keeps these in Redis)."""

    __tablename__ = "annotation_jobs"

    id: Mapped[str] = _id()
    app_id: Mapped[str] = mapped_column(ForeignKey("apps.id", ondelete="CASCADE"), nullable=False)
    action: Mapped[str] = mapped_column(String(16), nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False, default="waiting")
    error: Mapped[str] = mapped_column(Text, nullable=False, default="")
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = mapped_column(DateTime, nullable=False, default=utcnow)


class PendingApproval(Base):
    """A run paused until a person decides on its tool calls (agent.approvals): what resuming it
    needs, kept so that a server restart does not lose it. The row is deleted when the run resumes
    (a paused run resumes once); a later pause of the same message adds a new one."""

    __tablename__ = "pending_approvals"

    task_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    app_id: Mapped[str] = mapped_column(String(36), nullable=False)
    user: Mapped[str] = mapped_column(String(255), nullable=False)  # the Service API user who asked
    end_user_id: Mapped[str] = mapped_column(String(36), nullable=False)
    config_id: Mapped[str] = mapped_column(String(36), nullable=False)
    conversation_id: Mapped[str] = mapped_column(String(36), nullable=False)
    message_id: Mapped[str] = mapped_column(String(36), nullable=False)
    message_created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)
    calls: Mapped[str] = mapped_column(Text, nullable=False)  # JSON: the calls waiting for a decision
    run_state: Mapped[str] = mapped_column(Text, nullable=False)  # JSON: the agent's interruption
    stream_state: Mapped[str] = mapped_column(Text, nullable=False)  # JSON: the message's thought rows
    created_at: Mapped[datetime] = _created()
    expires_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)

    __table_args__ = (Index("ix_pending_approvals_expires_at", "expires_at"),)


class HumanInputForm(Base):
    """A paused run's Dify Human Input form (``app.run.human_input``): its token's SHA-256 (the token
    itself is never stored), the app and user it belongs to, the calls it decides on (to tell its
    pause from a later one of the same message), its deadline, and once submitted, when and how. The
    row outlives the pause, so that a second submission is told the form was used."""

    __tablename__ = "human_input_forms"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    form_id: Mapped[str] = mapped_column(String(36), nullable=False)
    task_id: Mapped[str] = mapped_column(String(36), nullable=False)
    app_id: Mapped[str] = mapped_column(String(36), nullable=False)
    user: Mapped[str] = mapped_column(String(255), nullable=False)
    node_id: Mapped[str] = mapped_column(String(36), nullable=False)  # the paused round's thought id
    calls: Mapped[str] = mapped_column(Text, nullable=False)  # JSON: the calls waiting
    created_at: Mapped[datetime] = _created()
    expires_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)
    submitted_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    action: Mapped[str | None] = mapped_column(String(32), nullable=True)

    __table_args__ = (
        Index("ix_human_input_forms_task_id", "task_id"),
        Index("ix_human_input_forms_expires_at", "expires_at"),
    )


class UsageCounter(Base):
    """What one scope spent, for the app's budgets (``app.run.budgets``): ``scope`` is ``app``,
    ``end_user`` or ``conversation``, ``scope_id`` its id, ``day`` the UTC day (``YYYY-MM-DD``) of a
    daily count or ``""`` for a count that never resets (a conversation's). Rows are added to in place
    (``store.usage.add_usage``), so several workers on one database share them. ``cost_units`` is the
    cost in units of 10⁻⁷ of the currency (prices' own precision): an integer adds exactly on every
    database."""

    __tablename__ = "usage_counters"

    scope: Mapped[str] = mapped_column(String(16), primary_key=True)
    scope_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    day: Mapped[str] = mapped_column(String(10), primary_key=True)
    tokens: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    cost_units: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    runs: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    updated_at: Mapped[datetime] = mapped_column(DateTime, nullable=False, default=utcnow)


class RateWindow(Base):
    """Requests of one scope in one fixed minute, counted across every worker of a PostgreSQL
    database while a rate limit is on (``store.rate_counters``; ``app.run.rate_limits``): ``scope`` is a
    digest of ``key:<key digest>`` or ``user:<app>:<user>`` (no key, no user name stored), ``window``
    the minute since the epoch. Rows of past minutes are deleted by the heartbeat."""

    __tablename__ = "rate_windows"

    scope: Mapped[str] = mapped_column(String(32), primary_key=True)
    window: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)


class StreamLease(Base):
    """One streaming run counted against one scope's stream limit, across every worker of a
    PostgreSQL database (``store.rate_counters``): deleted when the run ends, renewed by its worker's
    heartbeat until then; a lease past ``expires_at`` (its worker died) no longer counts."""

    __tablename__ = "stream_leases"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    scope: Mapped[str] = mapped_column(String(32), primary_key=True)
    worker_id: Mapped[str] = mapped_column(String(36), nullable=False)
    expires_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)

    __table_args__ = (
        Index("ix_stream_leases_scope_expires_at", "scope", "expires_at"),
        Index("ix_stream_leases_worker_id", "worker_id"),
    )


class ConversationSummary(Base):
    """The older turns of a conversation folded into a summary (``memory.compaction: summarize``;
    ``app.run.compaction``): it stands for the first ``covered_messages`` messages of the conversation's
    thread in the prompts of later turns. A newer summary (of more messages) adds a row; the newest is
    used, the older ones stay for the log. The messages themselves are never changed."""

    __tablename__ = "conversation_summaries"
    __table_args__ = (Index("ix_conversation_summaries_conversation", "conversation_id", "covered_messages"),)

    id: Mapped[str] = _id()
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False
    )
    covered_messages: Mapped[int] = mapped_column(Integer, nullable=False)
    last_message_id: Mapped[str] = mapped_column(String(36), nullable=False)  # the newest message folded
    summary: Mapped[str] = mapped_column(Text, nullable=False)
    model: Mapped[str] = mapped_column(String(255), nullable=False, default="")  # the spec that made it
    created_at: Mapped[datetime] = _created()


class MemoryBlock(Base):
    """An end user's working memory in one app (``memory.long_term``; ``app.memory``): the facts the
    agent keeps about them, read and rewritten through its memory tool and shown in every prompt.
    Deleted with the end user."""

    __tablename__ = "memory_blocks"

    end_user_id: Mapped[str] = mapped_column(ForeignKey("end_users.id", ondelete="CASCADE"), primary_key=True)
    app_id: Mapped[str] = mapped_column(ForeignKey("apps.id", ondelete="CASCADE"), nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False, default="")
    updated_at: Mapped[datetime] = mapped_column(DateTime, nullable=False, default=utcnow)


class MemoryObservation(Base):
    """One observation of an end user's past conversations (``memory.long_term``): written after each
    turn (one per message: ``message_id`` is unique, so a writer catching up never writes one twice),
    recalled by relevance into later prompts. Deleted with the end user."""

    __tablename__ = "memory_observations"
    __table_args__ = (Index("ix_memory_observations_user", "app_id", "end_user_id", "created_at"),)

    id: Mapped[str] = _id()
    app_id: Mapped[str] = mapped_column(ForeignKey("apps.id", ondelete="CASCADE"), nullable=False)
    end_user_id: Mapped[str] = mapped_column(ForeignKey("end_users.id", ondelete="CASCADE"), nullable=False)
    conversation_id: Mapped[str] = mapped_column(String(36), nullable=False)
    message_id: Mapped[str] = mapped_column(String(36), nullable=False, unique=True)
    text: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = _created()
