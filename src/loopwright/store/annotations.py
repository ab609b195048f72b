"""Repository functions of annotations: the rows, the app's annotation-reply setting, hits and jobs.

Listing is Dify's: newest first (``created_at``, then ``id``), a keyword matched in the question or the
answer (case-insensitive, ``%`` and ``_`` taken literally).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.store.models import (
    AnnotationJob,
    AppAnnotationHitHistory,
    AppAnnotationSetting,
    Message,
    MessageAnnotation,
    new_id,
    utcnow,
)


def _like(keyword: str) -> str:
    escaped = keyword.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


async def list_annotations(
    session: AsyncSession, app_id: str, page: int, limit: int, keyword: str = ""
) -> tuple[list[MessageAnnotation], int]:
    """One page of the app's annotations and how many there are in all (with the keyword)."""
    where = [MessageAnnotation.app_id == app_id]
    if keyword:
        pattern = _like(keyword)
        where.append(
            or_(
                MessageAnnotation.question.ilike(pattern, escape="\\"),
                MessageAnnotation.content.ilike(pattern, escape="\\"),
            )
        )
    total = await session.scalar(select(func.count()).select_from(MessageAnnotation).where(*where))
    stmt = (
        select(MessageAnnotation)
        .where(*where)
        .order_by(MessageAnnotation.created_at.desc(), MessageAnnotation.id.desc())
        .offset((page - 1) * limit)
        .limit(limit)
    )
    return list((await session.scalars(stmt)).all()), int(total or 0)


async def add_annotation(
    session: AsyncSession,
    app_id: str,
    question: str,
    content: str,
    *,
    account_id: str | None = None,
    message: Message | None = None,
    now: datetime | None = None,
) -> MessageAnnotation:
    now = now or utcnow()
    row = MessageAnnotation(
        id=new_id(),
        app_id=app_id,
        question=question,
        content=content,
        hit_count=0,
        account_id=account_id,
        conversation_id=message.conversation_id if message is not None else None,
        message_id=message.id if message is not None else None,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    return row


async def get_annotation(session: AsyncSession, app_id: str, annotation_id: str) -> MessageAnnotation | None:
    row = await session.get(MessageAnnotation, annotation_id)
    return row if row is not None and row.app_id == app_id else None


async def annotation_of_message(
    session: AsyncSession, app_id: str, message_id: str
) -> MessageAnnotation | None:
    stmt = select(MessageAnnotation).where(
        MessageAnnotation.app_id == app_id, MessageAnnotation.message_id == message_id
    )
    return (await session.scalars(stmt.limit(1))).first()


def set_annotation_text(row: MessageAnnotation, question: str, content: str) -> None:
    """New text; a changed question loses its embedding (made again when next needed)."""
    if question != row.question:
        row.embedding, row.embedding_spec = None, None
    row.question, row.content, row.updated_at = question, content, utcnow()


async def delete_annotation(session: AsyncSession, row: MessageAnnotation) -> None:
    """The annotation and its hits."""
    await session.execute(
        delete(AppAnnotationHitHistory).where(AppAnnotationHitHistory.annotation_id == row.id)
    )
    await session.delete(row)


async def annotations_fingerprint(session: AsyncSession, app_id: str) -> tuple[int, datetime | None]:
    """How many annotations the app has and the newest change: what a cache of them is checked by."""
    stmt = select(func.count(), func.max(MessageAnnotation.updated_at)).where(
        MessageAnnotation.app_id == app_id
    )
    count, newest = (await session.execute(stmt)).one()
    return int(count or 0), newest


async def all_annotations(session: AsyncSession, app_id: str) -> Sequence[MessageAnnotation]:
    stmt = select(MessageAnnotation).where(MessageAnnotation.app_id == app_id).order_by(MessageAnnotation.id)
    return (await session.scalars(stmt)).all()


async def store_embeddings(session: AsyncSession, spec: str, vectors: dict[str, bytes]) -> None:
    """Keep the question embeddings made with ``spec`` (by annotation id); ``updated_at`` is left as it
    is (an embedding is not a change of the annotation)."""
    for annotation_id, blob in vectors.items():
        await session.execute(
            update(MessageAnnotation)
            .where(MessageAnnotation.id == annotation_id)
            .values(embedding=blob, embedding_spec=spec)
        )


async def record_hit(
    session: AsyncSession,
    row: MessageAnnotation,
    *,
    query: str,
    message_id: str,
    score: float,
    source: str = "api",
) -> None:
    """A query answered by ``row``: a hit history row and one more ``hit_count``."""
    session.add(
        AppAnnotationHitHistory(
            id=new_id(),
            app_id=row.app_id,
            annotation_id=row.id,
            source=source,
            question=query,
            message_id=message_id,
            score=score,
            annotation_question=row.question,
            annotation_content=row.content,
            created_at=utcnow(),
        )
    )
    await session.execute(
        update(MessageAnnotation)
        .where(MessageAnnotation.id == row.id)
        .values(hit_count=MessageAnnotation.hit_count + 1)
    )


async def hit_histories(session: AsyncSession, annotation_id: str) -> Sequence[AppAnnotationHitHistory]:
    stmt = (
        select(AppAnnotationHitHistory)
        .where(AppAnnotationHitHistory.annotation_id == annotation_id)
        .order_by(AppAnnotationHitHistory.created_at.desc())
    )
    return (await session.scalars(stmt)).all()


# --- the setting and its jobs ------------------------------------------------------------------------


async def get_setting(session: AsyncSession, app_id: str) -> AppAnnotationSetting | None:
    stmt = select(AppAnnotationSetting).where(AppAnnotationSetting.app_id == app_id)
    return (await session.scalars(stmt)).first()


async def put_setting(
    session: AsyncSession,
    app_id: str,
    *,
    enabled: bool,
    score_threshold: float | None = None,
    embedding: str | None = None,
) -> AppAnnotationSetting:
    row = await get_setting(session, app_id)
    now = utcnow()
    if row is None:
        row = AppAnnotationSetting(id=new_id(), app_id=app_id, created_at=now)
        row.score_threshold = 0.9 if score_threshold is None else score_threshold
        row.embedding = embedding or "minilm"
        session.add(row)
    if score_threshold is not None:
        row.score_threshold = score_threshold
    if embedding is not None:
        row.embedding = embedding
    row.enabled, row.updated_at = enabled, now
    await session.flush()
    return row


async def add_job(session: AsyncSession, app_id: str, action: str) -> AnnotationJob:
    now = utcnow()
    job = AnnotationJob(
        id=new_id(), app_id=app_id, action=action, status="waiting", error="", created_at=now, updated_at=now
    )
    session.add(job)
    await session.flush()
    return job


async def running_job(session: AsyncSession, app_id: str, action: str) -> AnnotationJob | None:
    """The app's job of this action that has not finished, if any."""
    stmt = select(AnnotationJob).where(
        AnnotationJob.app_id == app_id,
        AnnotationJob.action == action,
        AnnotationJob.status.in_(("waiting", "processing")),
    )
    return (await session.scalars(stmt.limit(1))).first()


async def get_job(session: AsyncSession, app_id: str, action: str, job_id: str) -> AnnotationJob | None:
    job = await session.get(AnnotationJob, job_id)
    return job if job is not None and job.app_id == app_id and job.action == action else None


async def set_job(session: AsyncSession, job_id: str, status: str, error: str = "") -> None:
    await session.execute(
        update(AnnotationJob)
        .where(AnnotationJob.id == job_id)
        .values(status=status, error=error, updated_at=utcnow())
    )
