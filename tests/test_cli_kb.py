"""``loopwright kb …`` against a real SQLite file (the app database's, via LOOPWRIGHT_DB)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopwright.cli import app


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("LOOPWRIGHT_DB", str(tmp_path / "lw.db"))
    (tmp_path / "vacation.txt").write_text("Employees get 25 vacation days per year.", encoding="utf-8")
    (tmp_path / "parking.md").write_text("# Parking\n\nParking is free in the garage.", encoding="utf-8")
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    return tmp_path


def test_create_add_search_list_delete(workdir: Path) -> None:
    runner = CliRunner()
    made = runner.invoke(app, ["kb", "create", "Handbook", "--chunk-tokens", "100", "--overlap", "10"])
    assert made.exit_code == 0, made.output
    dataset_id = made.output.strip()
    added = runner.invoke(
        app, ["kb", "add", "Handbook", str(workdir / "vacation.txt"), str(workdir / "parking.md")]
    )
    assert added.exit_code == 0, added.output
    assert "vacation.txt: 1 segments" in added.output and "parking.md: 1 segments" in added.output
    found = runner.invoke(app, ["kb", "search", "Handbook", "where do I park", "--top-k", "1"])
    assert found.exit_code == 0, found.output
    assert "parking.md" in found.output and "Parking is free" in found.output and "1.000" in found.output
    listed = runner.invoke(app, ["kb", "list"])
    assert "Handbook" in listed.output and dataset_id in listed.output and "100/10" in listed.output
    assert listed.output.splitlines()[0].split() == [
        "name",
        "id",
        "documents",
        "embedding",
        "method",
        "chunk/overlap",
    ]
    docs = runner.invoke(app, ["kb", "documents", dataset_id])
    assert docs.output.count("completed") == 2
    assert (workdir / "lw.knowledge.sqlite3").is_file()  # beside the app database
    deleted = runner.invoke(app, ["kb", "delete", "Handbook"])
    assert deleted.exit_code == 0 and "deleted Handbook" in deleted.output
    assert "no datasets" in runner.invoke(app, ["kb", "list"]).output


def test_errors_are_one_line_and_exit_1(workdir: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["kb", "create", "H"]).exit_code == 0
    dup = runner.invoke(app, ["kb", "create", "H"])
    assert dup.exit_code == 1 and "already exists" in dup.output
    missing = runner.invoke(app, ["kb", "search", "nope", "x"])
    assert missing.exit_code == 1 and "no dataset named 'nope'" in missing.output
    bad_type = runner.invoke(app, ["kb", "add", "H", str(workdir / "image.png")])
    assert bad_type.exit_code == 1 and "unsupported file type" in bad_type.output
    no_file = runner.invoke(app, ["kb", "add", "H", str(workdir / "nothing.txt")])
    assert no_file.exit_code == 1 and "no such file" in no_file.output
    bad_embedding = runner.invoke(app, ["kb", "create", "X", "--embedding", "word2vec"])
    assert bad_embedding.exit_code == 1 and "unknown embedding" in bad_embedding.output


def test_key_prints_a_dataset_key(workdir: Path) -> None:
    result = CliRunner().invoke(app, ["kb", "key"])
    assert result.exit_code == 0 and result.output.strip().startswith("dataset-")
    assert len(result.output.strip()) == len("dataset-") + 24
