"""app.uploads: where uploads go, their names and types, and keeping one (file and row, or neither)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import OperationalError

from loopwright.app.config import AppConfig
from loopwright.app.files import uploads
from loopwright.app.lookup import AppLookup
from loopwright.config import Settings
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import EndUser, UploadFile


def test_the_limits_are_the_ones_given_else_the_defaults(tmp_path: Path) -> None:
    assert uploads.upload_limits(Settings()) == uploads.UploadLimits(
        Path(os.environ["LOOPWRIGHT_DATA_DIR"]) / "files" / "uploads", 15 * 1024 * 1024
    )
    given = uploads.upload_limits(Settings(), directory=str(tmp_path), max_bytes=1000)
    assert given == uploads.UploadLimits(tmp_path, 1000, ())


def test_dify_limits_by_type_unless_a_limit_is_given() -> None:
    mb = 1024 * 1024
    dify = uploads.upload_limits(Settings())
    limits = [dify.limit_for(kind) for kind in ("image", "audio", "video", "document", "custom")]
    assert limits == [10 * mb, 50 * mb, 100 * mb, 15 * mb, 15 * mb]
    one = uploads.upload_limits(Settings(), max_bytes=1000)
    assert {one.limit_for(kind) for kind in ("image", "video", "document")} == {1000}


def test_names_and_types() -> None:
    assert uploads.display_name("C:\\Users\\me\\cat\x00.PNG ") == "cat.PNG"
    long = uploads.display_name("x" * 300 + ".jpeg")
    assert len(long) == 200 and long.endswith("x.jpeg")
    assert uploads.extension_of("a.tar.GZ") == "gz" and uploads.extension_of("README") == ""
    assert uploads.effective_mime_type("application/octet-stream", "png") == "image/png"
    assert uploads.effective_mime_type("", "md") == "text/markdown"
    assert uploads.effective_mime_type("image/webp", "png") == "image/webp"  # a declared type stays
    images = AppConfig(file_upload={"enabled": True, "allowed_types": ["image"]})
    assert uploads.type_allowed(images, "image/png", "png")
    assert not uploads.type_allowed(images, "text/plain", "txt")
    assert uploads.type_allowed(AppConfig(file_upload={"allowed_types": ["custom"]}), "text/plain", "txt")
    # a form's file field takes its own types (none listed: any)
    docs = AppConfig(user_input_form=[{"variable": "d", "type": "file", "allowed_file_types": ["document"]}])
    assert uploads.type_allowed(docs, "application/pdf", "pdf") and not uploads.type_allowed(
        docs, "video/mp4", "mp4"
    )
    anything = AppConfig(user_input_form=[{"variable": "d", "type": "file-list"}])
    assert uploads.type_allowed(anything, "video/mp4", "mp4")


async def test_a_kept_upload_has_its_file_and_its_row(db: Database, tmp_path: Path) -> None:
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "a", AppConfig().model_dump())
    received = tmp_path / ".incoming.part"
    received.write_bytes(b"pixels")
    directory = tmp_path / "uploads"
    stored = await uploads.store_upload(
        db,
        AppLookup(db),
        app.id,
        "alice",
        received,
        directory=directory,
        name="cat.png",
        size=6,
        mime_type="image/png",
    )
    assert not received.exists()
    assert (directory / app.id / stored.id).read_bytes() == b"pixels"
    async with db.transaction() as s:
        row = await s.get(UploadFile, stored.id)
        user = await s.scalar(select(EndUser).where(EndUser.session_id == "alice"))
    assert row is not None and user is not None
    assert (row.name, row.extension, row.mime_type, row.size, row.storage_key) == (
        "cat.png",
        "png",
        "image/png",
        6,
        f"{app.id}/{stored.id}",
    )
    assert stored.created_by == row.end_user_id == user.id


async def test_an_upload_that_cannot_be_recorded_leaves_no_file(db: Database, tmp_path: Path) -> None:
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "a", AppConfig().model_dump())
        await s.execute(text("DROP TABLE upload_files"))  # the row cannot be written
    received = tmp_path / ".incoming.part"
    received.write_bytes(b"pixels")
    directory = tmp_path / "uploads"
    with pytest.raises(OperationalError, match="upload_files"):
        await uploads.store_upload(
            db,
            AppLookup(db),
            app.id,
            "alice",
            received,
            directory=directory,
            name="a.png",
            size=6,
            mime_type="",
        )
    assert [p for p in directory.rglob("*") if p.is_file()] == []
