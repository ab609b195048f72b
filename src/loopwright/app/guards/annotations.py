"""Annotation replies: an app's annotated question→answer pairs, and answering a query from them.

:class:`Annotations` is the app layer's one door to them — the Service API routes
(``/v1/apps/annotations…``) and ``loopwright annotate`` call it, and the message pipeline asks it for a
match (``app.guards.steps``). When annotation reply is on for an app, a query whose embedding is close enough
to an annotated question's (cosine similarity ≥ the score threshold, top 1, as Dify's vector search) is
answered with that annotation — no model call — and the hit is recorded (hit history, ``hit_count``).

The setting comes from the Service API's ``POST /v1/apps/annotation-reply/enable|disable`` (stored per
app; it wins) or else from the app configuration's ``annotation_reply``. Enabling is a job, as Dify's:
it embeds every annotation's question with the chosen model and then turns the setting on; clients poll
``…/status/{job_id}``. Question embeddings are stored with the spec of the model that made them, so a
server restart or another worker needs no re-embedding; an edited question is embedded again when next
needed. Each process keeps an app's vectors in memory, checked against the table (count and newest
change) before each use, so a change made by another process is seen at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from cachetools import LRUCache, TTLCache

from loopwright.app.dify.annotation_setting import AnnotationReply
from loopwright.errors import NotFoundError, UserInputError
from loopwright.store import annotations as repo
from loopwright.store import repositories as messages_repo
from loopwright.store.db import Database
from loopwright.store.models import Message, MessageAnnotation, unix_seconds

if TYPE_CHECKING:
    from loopwright.knowledge.embeddings import Embedder, EndpointSettings

log = logging.getLogger("loopwright.app.guards.annotations")

MAX_PAGE_SIZE = 100  # Dify's max_per_page
SETTING_TTL = 2.0  # a setting changed by another process is seen within this
ACTIONS = ("enable", "disable")
_UNKNOWN: Any = object()  # not in the settings cache
DIFY_ACCOUNT_NAME = "Dify user"  # Dify's name for an annotation's author without an account


class AnnotationNotFoundError(NotFoundError):
    def __init__(self) -> None:
        super().__init__("Annotation not found")


class AnnotationJobNotFoundError(UserInputError):
    """Dify answers an unknown job with a ValueError (400 ``invalid_param``)."""

    def __init__(self) -> None:
        super().__init__("The job does not exist.")


@dataclass(frozen=True, slots=True)
class AnnotationView:
    """An annotation as the Service API shows it (Dify's ``annotation_fields``)."""

    id: str
    question: str
    answer: str
    hit_count: int
    created_at: int

    def body(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.question,
            "answer": self.answer,
            "hit_count": self.hit_count,
            "created_at": self.created_at,
        }


def _view(row: MessageAnnotation) -> AnnotationView:
    return AnnotationView(row.id, row.question, row.content, row.hit_count, unix_seconds(row.created_at))


@dataclass(frozen=True, slots=True)
class AnnotationMatch:
    id: str
    question: str
    answer: str
    account_id: str | None
    score: float

    def reply_metadata(self) -> dict[str, Any]:
        """Dify's ``message_end`` ``metadata.annotation_reply``."""
        return {"id": self.id, "account": {"id": self.account_id or "", "name": DIFY_ACCOUNT_NAME}}


@dataclass(slots=True)
class _Index:
    fingerprint: tuple[int, datetime | None, str]
    ids: list[str]
    matrix: np.ndarray[Any, np.dtype[np.float32]]  # unit rows


def _unit(vectors: Any) -> np.ndarray[Any, np.dtype[np.float32]]:
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: np.ndarray[Any, np.dtype[np.float32]] = (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)
    return unit


@asynccontextmanager
async def open_annotations(database_url: str | None = None) -> AsyncIterator[Annotations]:
    """The annotations of the app database (``database_url``, else the environment's, as the server
    resolves it), migrated first, for a command: ``loopwright annotate``."""
    from loopwright.config import load_settings

    db = Database(database_url) if database_url else Database()
    store = Annotations(db, endpoints=load_settings)
    try:
        await db.migrate()
        yield store
    finally:
        await store.aclose()
        await db.close()


class Annotations:
    """The annotations of every app on ``db`` (see the module's docstring). ``endpoints`` gives the
    OpenAI-compatible endpoint settings (the server's); ``embedders`` are embedders already built, by
    spec (tests, embedding)."""

    def __init__(
        self,
        db: Database,
        endpoints: Callable[[], EndpointSettings] | None = None,
        embedders: Mapping[str, Embedder] | None = None,
    ) -> None:
        self.db = db
        self._endpoints = endpoints
        self._embedders: dict[str, Embedder] = dict(embedders or {})
        self._indexes: LRUCache[str, _Index] = LRUCache(256)
        self._settings: TTLCache[str, AnnotationReply | None] = TTLCache(4096, SETTING_TTL)
        self._jobs: set[asyncio.Task[None]] = set()

    def use_embedder(self, spec: str, embedder: Embedder) -> None:
        self._embedders[spec] = embedder

    def embedder(self, spec: str) -> Embedder:
        embedder = self._embedders.get(spec)
        if embedder is None:
            from loopwright.knowledge.embeddings import embedder_for

            built = embedder_for(spec, self._endpoints() if self._endpoints is not None else None)
            if built is None:
                raise UserInputError(f"annotation reply needs an embedding model, not {spec!r}")
            embedder = self._embedders[spec] = built
        return embedder

    # --- the annotations ----------------------------------------------------------------------------

    async def page(
        self, app_id: str, page: int = 1, limit: int = 20, keyword: str = ""
    ) -> tuple[list[AnnotationView], int]:
        limit = min(max(limit, 1), MAX_PAGE_SIZE)
        async with self.db.sessionmaker() as session:
            rows, total = await repo.list_annotations(session, app_id, max(page, 1), limit, keyword)
        return [_view(r) for r in rows], total

    async def create(
        self, app_id: str, question: str, answer: str, *, account_id: str | None = None
    ) -> AnnotationView:
        async with self.db.transaction() as session:
            row = await repo.add_annotation(session, app_id, question, answer, account_id=account_id)
            return _view(row)

    async def from_message(
        self,
        app_id: str,
        message_id: str,
        *,
        answer: str | None = None,
        question: str | None = None,
        account_id: str | None = None,
    ) -> AnnotationView:
        """An annotation of a stored message (Dify's ``up_insert_app_annotation_from_message``): its query
        and, unless given, its answer; the message's annotation is updated when it has one."""
        async with self.db.transaction() as session:
            message = await session.get(Message, message_id)
            if message is None or message.app_id != app_id:
                raise NotFoundError("Message Not Exists.")
            text = answer if answer is not None else message.answer
            if not text:
                raise UserInputError("the message has no answer to annotate; give one")
            asked = question or message.query
            row = await repo.annotation_of_message(session, app_id, message_id)
            if row is not None:
                repo.set_annotation_text(row, asked, text)
            else:
                row = await repo.add_annotation(
                    session, app_id, asked, text, account_id=account_id, message=message
                )
            await session.flush()
            return _view(row)

    async def from_feedback(
        self, app_id: str, rating: str = "like", limit: int = 100
    ) -> list[AnnotationView]:
        """Annotations of the app's messages end users rated ``rating`` (newest first), each as
        :meth:`from_message`; messages already annotated are left as they are."""
        async with self.db.sessionmaker() as session:
            rated = await messages_repo.app_feedbacks(session, app_id, limit=limit)
            ids = [f.message_id for f, _ in rated if f.rating == rating]
            done = {i for i in ids if await repo.annotation_of_message(session, app_id, i) is not None}
        out = []
        for message_id in dict.fromkeys(ids):
            if message_id not in done:
                try:
                    out.append(await self.from_message(app_id, message_id, account_id="feedback"))
                except UserInputError as exc:
                    log.info("message %s not annotated: %s", message_id, exc)
        return out

    async def update(self, app_id: str, annotation_id: str, question: str, answer: str) -> AnnotationView:
        async with self.db.transaction() as session:
            row = await repo.get_annotation(session, app_id, annotation_id)
            if row is None:
                raise AnnotationNotFoundError()
            repo.set_annotation_text(row, question, answer)
            await session.flush()
            return _view(row)

    async def delete(self, app_id: str, annotation_id: str) -> None:
        async with self.db.transaction() as session:
            row = await repo.get_annotation(session, app_id, annotation_id)
            if row is None:
                raise AnnotationNotFoundError()
            await repo.delete_annotation(session, row)

    # --- the setting and its jobs ---------------------------------------------------------------------

    async def setting(self, app_id: str, configured: AnnotationReply | None = None) -> AnnotationReply | None:
        """The app's annotation reply: the stored setting, else the configuration's."""
        stored = self._settings.get(app_id, _UNKNOWN)
        if stored is _UNKNOWN:
            async with self.db.sessionmaker() as session:
                row = await repo.get_setting(session, app_id)
            stored = None
            if row is not None:
                stored = AnnotationReply(
                    enabled=row.enabled, score_threshold=row.score_threshold, embedding=row.embedding
                )
            self._settings[app_id] = stored
        assert stored is None or isinstance(stored, AnnotationReply)
        return stored if stored is not None else configured

    async def start_job(
        self, app_id: str, action: str, *, score_threshold: float = 0.9, embedding: str = "minilm"
    ) -> dict[str, str]:
        """Start enabling or disabling annotation reply (Dify's body: ``{job_id, job_status}``; a job of
        that action still running is answered with its id and ``processing``)."""
        if action not in ACTIONS:
            raise UserInputError("Unsupported annotation reply action")
        async with self.db.transaction() as session:
            running = await repo.running_job(session, app_id, action)
            if running is not None:
                return {"job_id": running.id, "job_status": "processing"}
            job = await repo.add_job(session, app_id, action)
        task = asyncio.ensure_future(self._run_job(job.id, app_id, action, score_threshold, embedding))
        self._jobs.add(task)
        task.add_done_callback(self._jobs.discard)
        return {"job_id": job.id, "job_status": "waiting"}

    async def _run_job(self, job_id: str, app_id: str, action: str, threshold: float, embedding: str) -> None:
        try:
            async with self.db.transaction() as session:
                await repo.set_job(session, job_id, "processing")
            if action == "enable":
                await self._index(app_id, embedding)  # every question embedded before the setting is on
            async with self.db.transaction() as session:
                if action == "enable":
                    await repo.put_setting(
                        session, app_id, enabled=True, score_threshold=threshold, embedding=embedding
                    )
                else:
                    await repo.put_setting(session, app_id, enabled=False)
                await repo.set_job(session, job_id, "completed")
            self._settings.pop(app_id, None)
        except Exception as exc:  # the job's status tells the client; the server goes on
            log.warning("annotation reply %s of app %s failed: %s", action, app_id, exc)
            async with self.db.transaction() as session:
                await repo.set_job(session, job_id, "error", str(exc) or type(exc).__name__)

    async def job_status(self, app_id: str, action: str, job_id: str) -> dict[str, str]:
        async with self.db.sessionmaker() as session:
            job = await repo.get_job(session, app_id, action, job_id)
        if job is None:
            raise AnnotationJobNotFoundError()
        return {
            "job_id": job.id,
            "job_status": job.status,
            "error_msg": job.error if job.status == "error" else "",
        }

    async def jobs_settled(self) -> None:
        """Wait for the jobs started here (tests, shutdown)."""
        await asyncio.gather(*self._jobs, return_exceptions=True)

    async def aclose(self) -> None:
        """Let the jobs end, then close the embedders' connections."""
        await self.jobs_settled()
        for embedder in self._embedders.values():
            close = getattr(embedder, "close", None)
            if close is not None:
                try:
                    await close()
                except Exception as exc:
                    log.warning("closing an embedder failed: %s", exc)
        self._embedders.clear()

    # --- answering ------------------------------------------------------------------------------------

    async def match(self, app_id: str, query: str, setting: AnnotationReply) -> AnnotationMatch | None:
        """The annotation whose question is closest to ``query``, when its score reaches the threshold."""
        index = await self._index(app_id, setting.embedding)
        if not index.ids or not query.strip():
            return None
        vector = _unit(await self.embedder(setting.embedding).embed([query]))[0]
        scores = index.matrix @ vector
        best = int(np.argmax(scores))
        score = float(scores[best])
        if score < setting.score_threshold:
            return None
        async with self.db.sessionmaker() as session:
            row = await repo.get_annotation(session, app_id, index.ids[best])
        if row is None:  # deleted meanwhile
            return None
        return AnnotationMatch(row.id, row.question, row.content, row.account_id, score)

    async def record_hit(self, app_id: str, match: AnnotationMatch, query: str, message_id: str) -> None:
        async with self.db.transaction() as session:
            row = await repo.get_annotation(session, app_id, match.id)
            if row is not None:
                await repo.record_hit(session, row, query=query, message_id=message_id, score=match.score)

    async def _index(self, app_id: str, spec: str) -> _Index:
        """The app's question vectors for ``spec``: from memory while the table is unchanged; questions
        without a vector of this model are embedded and their vectors stored."""
        async with self.db.sessionmaker() as session:
            count, newest = await repo.annotations_fingerprint(session, app_id)
            fingerprint = (count, newest, spec)
            cached = self._indexes.get(app_id)
            if cached is not None and cached.fingerprint == fingerprint:
                return cached
            rows = list(await repo.all_annotations(session, app_id))
        missing = [r for r in rows if r.embedding is None or r.embedding_spec != spec]
        made: dict[str, bytes] = {}
        if missing:
            vectors = _unit(await self.embedder(spec).embed([r.question for r in missing]))
            made = {r.id: v.astype("<f4").tobytes() for r, v in zip(missing, vectors, strict=True)}
            async with self.db.transaction() as session:
                await repo.store_embeddings(session, spec, made)
        blobs = [made.get(r.id) or r.embedding or b"" for r in rows]
        matrix = (
            np.stack([np.frombuffer(b, dtype="<f4") for b in blobs])
            if blobs
            else np.zeros((0, 1), dtype=np.float32)
        )
        index = _Index(fingerprint, [r.id for r in rows], _unit(matrix) if blobs else matrix)
        self._indexes[app_id] = index
        return index
