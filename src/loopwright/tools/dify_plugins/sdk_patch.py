"""A linear-time stdin reader for old plugin SDKs.

``dify_plugin`` before 0.1.1 reads stdin 512 bytes at a time and splits its whole buffer again after
each read, so a request of 4 MB takes 16–20 s to arrive (0.2 s on 0.4). Dify's plugin daemon patches
those SDKs; so does loopwright, in the plugin's environment (never in the plugin's own files): a method
appended to the SDK's stdio reader module replaces ``_read_stream`` with one that reads 64 KB at a time
and splits only what arrived with a newline. Only the exact reader it recognizes is patched, once.
"""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path

log = logging.getLogger(__name__)

MARKER = "# loopwright: linear-time stdin reader"
_OLD_READ = "tp_read(sys.stdin.fileno(), 512)"
_READER = "dify_plugin/core/server/stdio/request_reader.py"

_PATCH = f"""

{MARKER} (this SDK split its whole buffer again after every 512 bytes read)
def _loopwright_read_stream(self):
    pending = []
    while True:
        data = tp_read(sys.stdin.fileno(), 65536)
        if not data:
            continue
        if b"\\n" not in data:
            pending.append(data)
            continue
        pending.append(data)
        lines = b"".join(pending).split(b"\\n")
        tail = lines.pop()
        pending = [tail] if tail else []
        for line in lines:
            if not line.strip():
                continue
            try:
                data = loads(line)
                yield PluginInStream(
                    session_id=data["session_id"],
                    event=PluginInStreamEvent.value_of(data["event"]),
                    data=data["data"],
                    reader=self,
                    writer=StdioResponseWriter(),
                )
            except Exception as e:
                StdioResponseWriter().error(data={{"error": str(e)}})


StdioRequestReader._read_stream = _loopwright_read_stream
"""


def speed_up_stdin_reader(env: Path) -> bool:
    """Patch the SDK in ``env`` when it has the slow reader; whether it was patched now."""
    for site in env.glob("lib/python3*/site-packages"):
        reader = site / _READER
        try:
            source = reader.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        if MARKER in source or _OLD_READ not in source or "from json import loads" not in source:
            return False
        # A new file renamed over the old one: uv hard-links installed files to its cache, so writing
        # in place would change the cache and every environment made from it.
        temp = reader.with_name(f".{reader.name}.{uuid.uuid4().hex}.tmp")
        temp.write_text(source + _PATCH, encoding="utf-8")
        os.replace(temp, reader)
        for cached in reader.parent.glob("__pycache__/request_reader.*.pyc"):
            cached.unlink(missing_ok=True)
        log.info("patched the slow stdin reader of the plugin SDK in %s", env)
        return True
    return False
