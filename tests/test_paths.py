"""The data directory: one place for the database and files, wherever a command is started."""

from __future__ import annotations

from pathlib import Path

import platformdirs

from loopwright.paths import (
    data_dir,
    default_db_path,
    files_dir,
    legacy_db_notice,
    sqlite_path_of_url,
)


def test_the_environment_names_the_data_directory(tmp_path: Path) -> None:
    env = {"LOOPWRIGHT_DATA_DIR": str(tmp_path)}
    assert data_dir(env) == tmp_path
    assert default_db_path(env) == tmp_path / "loopwright.db"
    assert files_dir(env) == tmp_path / "files"


def test_unset_it_is_the_platforms_user_data_directory() -> None:
    assert data_dir({}) == Path(platformdirs.user_data_dir("loopwright", appauthor=False))
    assert data_dir({}).is_absolute()  # never relative to where a command happens to start


def test_a_database_left_in_the_working_directory_is_pointed_out(tmp_path: Path) -> None:
    work, data = tmp_path / "work", tmp_path / "data"
    work.mkdir()
    env = {"LOOPWRIGHT_DATA_DIR": str(data)}
    assert legacy_db_notice(env, cwd=work) is None  # nothing there: nothing to say
    (work / "loopwright.db").write_bytes(b"")
    notice = legacy_db_notice(env, cwd=work)
    assert notice is not None
    assert str(data / "loopwright.db") in notice and "LOOPWRIGHT_DB=" in notice
    # Chosen explicitly, or the same file: no notice.
    assert legacy_db_notice({**env, "LOOPWRIGHT_DB": "x.db"}, cwd=work) is None
    assert legacy_db_notice({"LOOPWRIGHT_DATA_DIR": str(work)}, cwd=work) is None


def test_sqlite_path_of_url() -> None:
    assert sqlite_path_of_url("sqlite+aiosqlite:////abs/x.db") == Path("/abs/x.db")
    assert sqlite_path_of_url("sqlite:///rel.db?mode=ro") == Path("rel.db")
    assert sqlite_path_of_url("sqlite+aiosqlite:///:memory:") is None
    assert sqlite_path_of_url("postgresql+asyncpg://u@h/db") is None
