"""The offline dependency audit (scripts/audit_osv.py) against a small OSV folder of its own."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import yaml

SCRIPT = Path(__file__).parents[2] / "scripts" / "audit_osv.py"
HTTPX = metadata.version("httpx")


def advisory(folder: Path, ident: str, name: str, events: list[dict[str, str]], versions: list[str]) -> None:
    entry = {
        "package": {"name": name, "ecosystem": "PyPI"},
        "ranges": [{"type": "ECOSYSTEM", "events": events}],
        "versions": versions,
    }
    body = {"id": ident, "modified": "2026-01-02T00:00:00Z", "affected": [entry]}
    (folder / f"{ident}.yaml").write_text(yaml.safe_dump(body))


def audit(folder: Path, accepted: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, str(SCRIPT), str(folder), "--accepted", str(accepted)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def test_an_installed_version_in_an_affected_range_fails_the_audit(tmp_path: Path) -> None:
    advisory(tmp_path, "PYSEC-0000-1", "HTTPX", [{"introduced": "0"}, {"fixed": HTTPX + ".post1"}], [])
    advisory(tmp_path, "PYSEC-0000-2", "httpx", [{"introduced": "0"}, {"fixed": "0.0.1"}], ["0.0.0"])
    done = audit(tmp_path, tmp_path / "none.txt")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"found httpx {HTTPX}: PYSEC-0000-1" in done.stdout
    assert "PYSEC-0000-2" not in done.stdout  # fixed long before the installed version
    assert "against 2 advisories (newest modified 2026-01-02): 1 known" in done.stdout


def test_a_listed_version_is_found_and_an_accepted_advisory_passes(tmp_path: Path) -> None:
    db = tmp_path / "db"
    db.mkdir()
    advisory(db, "PYSEC-0000-3", "httpx", [], [HTTPX])
    assert audit(db, tmp_path / "none.txt").returncode == 1
    accepted = tmp_path / "accepted.txt"
    accepted.write_text("PYSEC-0000-3  # only reachable through a feature this project does not use\n")
    done = audit(db, accepted)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"accepted httpx {HTTPX}: PYSEC-0000-3" in done.stdout
