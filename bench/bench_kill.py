"""``kill -9`` of a real ``loopwright serve`` at 20 seeded random points of a stream (the long version of
tests/reliability/test_kill_reattach.py), each followed by a restart and a re-attach: the message
marked interrupted, every stored event replayed once, in order, as first sent, then the error.
Prints how many kills passed; exits non-zero at the first failure (with its assertion).

Run: .venv/bin/python bench/bench_kill.py [--kills 20] [--seed 20261125]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.reliability.test_kill_reattach import SEED, kill_and_reattach  # noqa: E402

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        kill_and_reattach(Path(tmp), args.kills, args.seed)
    print(f"kills: {args.kills}  seed: {args.seed}  all passed  wall: {time.perf_counter() - started:.0f} s")
