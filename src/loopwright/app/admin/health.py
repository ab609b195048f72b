"""What a process reports about itself: health for load balancers and scripts, and the line
``loopwright serve`` prints once it accepts connections."""

from __future__ import annotations

from sqlalchemy.engine import make_url

from loopwright.store import repositories as repo
from loopwright.store.db import Database


async def database_ok(db: Database) -> bool:
    """Whether the database answers a query."""
    try:
        async with db.sessionmaker() as session:
            await repo.ping(session)
    except Exception:
        return False
    return True


async def ready_line(db: Database, address: str) -> str:
    """``loopwright serving http://… · database … · N apps`` (the database URL without its password)."""
    async with db.sessionmaker() as session:
        apps = await repo.count_apps(session)
    shown = make_url(db.url).render_as_string(hide_password=True)
    return f"loopwright serving {address} · database {shown} · {apps} app{'s' if apps != 1 else ''}"
