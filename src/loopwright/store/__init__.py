"""Storage: SQLAlchemy models, the database handle, repositories, Dify's text encodings and history.

The bottom layer: it knows nothing of HTTP or the agent loop.
"""

from loopwright.store.db import Database

__all__ = ["Database"]
