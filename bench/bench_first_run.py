"""The README's main job as a new user runs it: `loopwright run "Use the calculator to compute 17 * 23."`
in a fresh process each time, on the embedded model — the time to the first byte of output (the first
streamed token) and to the end, with the prompt cache cold (an empty data directory: the very first
run) and then warm (the runs after it).

Set ``PYTHONPATH`` to the ``src`` of the tree to measure (another tree's, for a before/after).

Run: .venv/bin/python bench/bench_first_run.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUESTION = "Use the calculator to compute 17 * 23."


def one_run(data_dir: Path) -> tuple[float, float, str]:
    """(seconds to the first byte of output, seconds to the end, the output)."""
    exe = Path(sys.executable).with_name("loopwright")
    env = {**os.environ, "LOOPWRIGHT_DATA_DIR": str(data_dir)}
    for key in ("OPENAI_API_KEY", "LOOPWRIGHT_MODEL", "DATABASE_URL", "LOOPWRIGHT_DB"):
        env.pop(key, None)
    started = time.perf_counter()
    process = subprocess.Popen(
        [str(exe), "run", QUESTION], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert process.stdout is not None
    first = process.stdout.read(1)
    first_at = time.perf_counter() - started
    rest = process.stdout.read()
    process.wait()
    return first_at, time.perf_counter() - started, (first + rest).decode(errors="replace")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3, help="warm runs after the cold one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        first, whole, out = one_run(data)
        print(f"cold (empty data directory): first byte {first:5.1f} s, whole run {whole:5.1f} s", end="")
        print(f"; 391 in the answer: {'391' in out}")
        warm = [one_run(data) for _ in range(args.runs)]
        firsts = [w[0] for w in warm]
        wholes = [w[1] for w in warm]
        ok = sum("391" in w[2] for w in warm)
        median_first, median_whole = statistics.median(firsts), statistics.median(wholes)
        print(f"warm x{args.runs}: first byte median {median_first:5.1f} s (max {max(firsts):.1f}), ", end="")
        print(f"whole run median {median_whole:5.1f} s (max {max(wholes):.1f}); 391 in {ok} of {args.runs}")
        cache = data / "prompt-cache"
        files = list(cache.glob("*.session")) if cache.is_dir() else []
        print(f"prompt cache: {len(files)} file(s), {sum(f.stat().st_size for f in files) / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
