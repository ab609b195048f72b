"""Known vulnerabilities of the installed Python packages, read from an advisory database on disk.

pip-audit asks an online service; where that service cannot be reached (a registry mirror without
advisory data), this reads a local copy of an OSV-format database instead — a checkout of
``pypa/advisory-database`` (its ``vulns/`` folder) or any folder of OSV ``.yaml``/``.json`` files —
and matches every installed distribution of this interpreter against it: a version listed as
affected, or inside an affected range (introduced ≤ v < fixed, or ≤ last_affected). Advisories named
in ``scripts/audit-accepted.txt`` (one id a line, then ``#`` and why) are reported but not counted.

Run: .venv/bin/python scripts/audit_osv.py ADVISORY_DIR [--accepted scripts/audit-accepted.txt]
Prints one line per finding and a summary naming the database's newest advisory date; exits 1 on
any finding not accepted.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml
from packaging.version import InvalidVersion, Version


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def advisories(folder: Path) -> Iterator[dict[str, Any]]:
    for path in sorted(folder.rglob("*")):
        if path.suffix in (".yaml", ".yml"):
            yield yaml.safe_load(path.read_text(encoding="utf-8"))
        elif path.suffix == ".json":
            yield json.loads(path.read_text(encoding="utf-8"))


def _in_range(version: Version, events: list[dict[str, str]]) -> bool:
    """Whether ``version`` falls in one ECOSYSTEM range (its events in order, as OSV gives them)."""
    affected = False
    for event in events:
        try:
            if "introduced" in event:
                affected = affected or version >= Version(event["introduced"])
            elif "fixed" in event:
                affected = affected and version < Version(event["fixed"])
            elif "last_affected" in event:
                affected = affected and version <= Version(event["last_affected"])
        except InvalidVersion:
            continue
    return affected


def affects(entry: dict[str, Any], version: str) -> bool:
    if version in (entry.get("versions") or []):
        return True
    try:
        parsed = Version(version)
    except InvalidVersion:
        return False
    ranges = [r for r in entry.get("ranges") or [] if r.get("type") == "ECOSYSTEM"]
    return any(_in_range(parsed, r.get("events") or []) for r in ranges)


def accepted_ids(path: Path) -> set[str]:
    if not path.exists():
        return set()
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return {line for line in lines if line}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--accepted", type=Path, default=Path(__file__).with_name("audit-accepted.txt"))
    args = parser.parse_args()
    installed = {normalized(d.metadata["Name"]): d.version for d in metadata.distributions()}
    installed.pop("loopwright", None)
    accepted = accepted_ids(args.accepted)
    findings: list[str] = []
    read = 0
    newest = ""
    for advisory in advisories(args.folder):
        if not isinstance(advisory, dict):
            continue
        read += 1
        newest = max(newest, str(advisory.get("modified", "")))
        ids = {advisory.get("id", "?"), *(advisory.get("aliases") or [])}
        for entry in advisory.get("affected") or []:
            package = entry.get("package") or {}
            name = normalized(str(package.get("name", "")))
            if package.get("ecosystem") == "PyPI" and name in installed and affects(entry, installed[name]):
                line = f"{name} {installed[name]}: {advisory.get('id')}"
                print(("accepted " if ids & accepted else "found ") + line)
                findings += [] if ids & accepted else [line]
    print(
        f"osv audit: {len(installed)} installed packages against {read} advisories "
        f"(newest modified {newest[:10] or 'unknown'}): {len(findings)} known vulnerabilities not accepted"
    )
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
