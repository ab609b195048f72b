"""The hash of the web UI's sources (web/), stored next to the build (server/static/SOURCE_HASH).

The built assets are committed so that a plain ``pip install`` serves the UI without Node; this hash tells
whether that build is stale: CI (tests/server/test_web_build.py) fails when the sources no longer match it,
and scripts/install rebuilds when Node is present and they differ.

    python3 scripts/web_source_hash.py            # print the hash of web/
    python3 scripts/web_source_hash.py --write    # store it next to the build (npm run build does)
    python3 scripts/web_source_hash.py --check    # exit 1 when the stored hash is not the sources'
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WEB = ROOT / "web"
STORED = ROOT / "src" / "loopwright" / "server" / "static" / "SOURCE_HASH"
# What does not go into the build: installed packages and the unit tests.
SKIPPED_DIRS = {"node_modules", "tests", "dist", ".vite"}
SKIPPED_SUFFIXES = (".test.ts", ".test.tsx")


def source_files(web: Path = WEB) -> list[Path]:
    """Every file of ``web`` that goes into the build, in a stable order."""
    files = []
    for path in web.rglob("*"):
        relative = path.relative_to(web)
        if not path.is_file() or any(part in SKIPPED_DIRS for part in relative.parts[:-1]):
            continue
        if path.name.endswith(SKIPPED_SUFFIXES) or path.name == ".gitignore":
            continue
        files.append(path)
    return sorted(files, key=lambda p: p.relative_to(web).as_posix())


def source_hash(web: Path = WEB) -> str:
    """sha256 over each source file's path and content hash (line endings normalized, so a checkout
    with CRLF hashes the same)."""
    digest = hashlib.sha256()
    for path in source_files(web):
        content = path.read_bytes().replace(b"\r\n", b"\n")
        digest.update(path.relative_to(web).as_posix().encode() + b"\n")
        digest.update(hashlib.sha256(content).hexdigest().encode() + b"\n")
    return digest.hexdigest()


def stored_hash() -> str | None:
    return STORED.read_text().strip() if STORED.is_file() else None


def main(argv: list[str]) -> int:
    current = source_hash()
    if "--write" in argv:
        STORED.write_text(current + "\n")
        return 0
    if "--check" in argv:
        if stored_hash() != current:
            print(
                "the web UI build in src/loopwright/server/static is stale: run `cd web && npm ci && "
                "npm run build` and commit the result",
                file=sys.stderr,
            )
            return 1
        return 0
    print(current)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
