"""The one SSE reader of the tests: Dify's frames (``data: {json}`` and ``event: ping``) as dicts.

A ping is ``{"event": "ping"}``; an event's number (``id: N``) is left out here (``numbered`` keeps
it); anything else in a stream fails the test.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, Iterable, Iterator
from typing import Any

PING = {"event": "ping"}
# What a client that reads SSE sends: with it, a stream numbers its frames (``id: N``) to re-attach after
ACCEPT_SSE = {"Accept": "text/event-stream"}


def event_of(line: str) -> dict[str, Any] | None:
    """The event one line of a stream carries (None for the blank line between frames)."""
    if not line.strip():
        return None
    if line.startswith("data: "):
        event: dict[str, Any] = json.loads(line[len("data: ") :])
        return event
    if line == "event: ping":
        return dict(PING)
    if line.startswith("id: ") and line[4:].isdigit():
        return None
    raise AssertionError(f"unexpected SSE line: {line!r}")


def parse_sse(body: str | bytes, *, pings: bool = True) -> list[dict[str, Any]]:
    """Every event of a whole body, in order."""
    text = body.decode() if isinstance(body, bytes) else body
    return [e for e in iter_sse(text.split("\n"), pings=pings)]


def iter_sse(lines: Iterable[str | bytes], *, pings: bool = True) -> Iterator[dict[str, Any]]:
    """Events from the lines of a stream as they come (a blocking client's ``iter_lines``)."""
    for line in lines:
        event = event_of(line.decode() if isinstance(line, bytes) else line)
        if event is not None and (pings or event != PING):
            yield event


async def aiter_sse(lines: AsyncIterable[str], *, pings: bool = True) -> Any:
    """Events from the lines of a live stream (httpx's ``aiter_lines``), as they arrive."""
    async for line in lines:
        event = event_of(line)
        if event is not None and (pings or event != PING):
            yield event


def numbered(body: str | bytes) -> list[tuple[int | None, dict[str, Any]]]:
    """Every frame of a whole body as ``(id, event)``, pings included (their id is None)."""
    text = body.decode() if isinstance(body, bytes) else body
    out: list[tuple[int | None, dict[str, Any]]] = []
    for block in text.split("\n\n"):
        seq: int | None = None
        event: dict[str, Any] | None = None
        for line in block.split("\n"):
            if line.startswith("id: "):
                seq = int(line[4:])
            else:
                event = event_of(line) or event
        if event is not None:
            out.append((seq, event))
    return out
