"""The chat page's weight and speed.

1. First-load size: the files the chat page's HTML loads at once (its script, the chunks it preloads, its
   styles), gzipped (level 9, as a server or CDN would send them), each and in total. Goal ≤ 100 kB.
2. First render: a real ``loopwright serve`` on 127.0.0.1 (an app on the scripted model) and Debian's
   Chromium through Playwright (tests/web/browser.py); per run, a fresh browser context opens the share
   link and the time from the navigation's start to the moment the message box is in the page (the
   app's info and parameters fetched and the chat drawn) is read from the page's own clock. Median and
   max over ``--runs``. Goal ≤ 300 ms.

Run: .venv/bin/python bench/bench_web.py [--runs 20] [--size-only]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.web.browser import chromium, create_apps, start_server, stop_server  # noqa: E402

STATIC = Path(__file__).resolve().parents[1] / "src" / "loopwright" / "server" / "static"
SIZE_GOAL = 100 * 1024
RENDER_GOAL_MS = 300
# Installed before the page's own scripts (through the debugging protocol: the page's CSP does not
# apply): notes the page's clock when the message box first appears.
WATCH_FIRST_RENDER = """
new MutationObserver((_, observer) => {
    if (document.querySelector("textarea.message-input")) {
        window.__firstRender = performance.now();
        observer.disconnect();
    }
}).observe(document, { childList: true, subtree: true });
"""


def first_load_files(page: str = "chat") -> list[Path]:
    html = (STATIC / page / "index.html").read_text(encoding="utf-8")
    names = re.findall(r'(?:src|href)="/static/(assets/[^"]+)"', html)
    return [STATIC / name for name in dict.fromkeys(names)]


def report_size() -> int:
    total = 0
    for path in first_load_files():
        size = len(gzip.compress(path.read_bytes(), compresslevel=9))
        total += size
        print(f"  {path.name:<32} {path.stat().st_size / 1024:8.1f} kB  gzipped {size / 1024:6.1f} kB")
    verdict = "within" if total <= SIZE_GOAL else "OVER"
    print(f"first load, gzipped: {total / 1024:.1f} kB ({verdict} the goal of {SIZE_GOAL // 1024} kB)")
    return total


def measure_render(runs: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = folder / "bench.db"
        apps = asyncio.run(
            create_apps(
                f"sqlite+aiosqlite:///{db}",
                {"bench": {"script": {"replies": ["Hi."]}, "opening_statement": "Hello, **reader**."}},
                folder,
            )
        )
        server = start_server(folder, db)
        try:
            times: list[float] = []
            browsers = chromium()
            browser = next(browsers)
            try:
                for _ in range(runs + 1):  # the first run warms the server up and is not counted
                    context = browser.new_context()
                    page = context.new_page()
                    page.add_init_script(WATCH_FIRST_RENDER)
                    page.goto(apps["bench"].link(server.url))
                    page.wait_for_function("() => window.__firstRender !== undefined")
                    times.append(float(page.evaluate("window.__firstRender")))
                    context.close()
            finally:
                browsers.close()
            return times[1:]
        finally:
            stop_server(server)


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--size-only", action="store_true")
    args = parser.parse_args()
    report_size()
    if args.size_only:
        return
    times = measure_render(args.runs)
    median = statistics.median(times)
    verdict = "within" if median <= RENDER_GOAL_MS else "OVER"
    print(
        f"first render (navigation start → message box), {len(times)} runs: median {median:.0f} ms, "
        f"max {max(times):.0f} ms ({verdict} the goal of {RENDER_GOAL_MS} ms)"
    )


if __name__ == "__main__":
    main()
