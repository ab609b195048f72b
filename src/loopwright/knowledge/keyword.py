"""Keyword search: SQLite FTS5 with BM25 (Dify's "economy" index), scores normalised to 0..1.

The query's words (minus stop words) are OR-ed, each as a quoted FTS5 phrase, so no user text is
read as FTS5 syntax. FTS5's ``bm25()`` is unbounded, so it is divided by the sum of the query terms'
IDFs (FTS5's own formula; terms that no segment holds are left out): a segment that holds every query
term once, at average length, scores about 1.0; one that holds only the rarer half of them about 0.5.
Scores above 1 are cut to 1. A score threshold and the hybrid weights thus mean the same thing from
one query to the next.

Term statistics come from ``fts5vocab`` tables; the query is stemmed by the same tokenizer through a
scratch FTS5 table in ``temp`` (per connection), so the IDFs match what ``bm25()`` used.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from typing import Any

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves""".split()  # noqa: SIM905
)
MAX_TERMS = 32
_WORD = re.compile(r"\w+", re.UNICODE)
_K1 = 1.2  # FTS5's bm25 constants
_B = 0.75


def query_words(query: str) -> list[str]:
    """The words to search for: lower-cased, deduplicated, stop words dropped (unless that leaves none)."""
    seen: dict[str, None] = {}
    for m in _WORD.finditer(query.lower()):
        seen.setdefault(m.group(), None)
    words = list(seen)
    content = [w for w in words if w not in STOP_WORDS]
    return (content or words)[:MAX_TERMS]


def match_expression(words: list[str]) -> str:
    """An FTS5 MATCH string that ORs the words as quoted phrases."""
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def idf(total_rows: int, rows_with_term: int) -> float:
    """FTS5's IDF: ``log((N - n + 0.5) / (n + 0.5))``, floored at 1e-6."""
    value = math.log((total_rows - rows_with_term + 0.5) / (rows_with_term + 0.5))
    return value if value > 0 else 1e-6


class KeywordIndex:
    """BM25 search over ``kb_segments_fts`` on one connection (which must stay in one thread)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self._total: tuple[int, int] | None = None  # (data_version, rows)
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.kb_query_fts USING fts5("
            "words, tokenize='porter unicode61 remove_diacritics 2')"
        )
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.kb_query_terms "
            "USING fts5vocab(temp, kb_query_fts, 'instance')"
        )
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.kb_fts_terms "
            "USING fts5vocab(main, kb_segments_fts, 'row')"
        )

    def search(
        self,
        dataset_id: str,
        query: str,
        k: int,
        document_ids: Collection[str] | None = None,
    ) -> list[tuple[int, float]]:
        """The best ``k`` segments of the dataset as ``(seq, score 0..1)``, best first.
        ``document_ids`` restricts the search to those documents (metadata filters)."""
        words = query_words(query)
        if not words or k <= 0 or (document_ids is not None and not document_ids):
            return []
        sql = (
            # CROSS JOIN fixes the order: the FTS match drives the loop. Left to itself the planner
            # may walk the dataset's segments and re-run the match for each one.
            "SELECT kb_segments_fts.rowid, bm25(kb_segments_fts) AS r FROM kb_segments_fts "
            "CROSS JOIN kb_segments s ON s.seq = kb_segments_fts.rowid "
            "WHERE kb_segments_fts MATCH ? AND s.dataset_id = ?"
        )
        args: list[Any] = [match_expression(words), dataset_id]
        if document_ids is not None:
            ids = list(document_ids)
            sql += f" AND s.document_id IN ({','.join('?' * len(ids))})"
            args.extend(ids)
        rows = self.conn.execute(sql + " ORDER BY r LIMIT ?", [*args, k]).fetchall()
        if not rows:
            return []
        scale = self._idf_sum(words)
        return [(int(seq), min(1.0, -float(rank) / scale) if scale > 0 else 0.0) for seq, rank in rows]

    def _idf_sum(self, words: list[str]) -> float:
        """The sum over the query's phrases of their IDF (a multi-token phrase counts its rarest token)."""
        conn = self.conn
        conn.execute("SAVEPOINT kb_query")
        try:
            conn.executemany(
                "INSERT INTO temp.kb_query_fts(rowid, words) VALUES (?, ?)", list(enumerate(words, 1))
            )
            instances = conn.execute("SELECT term, doc FROM temp.kb_query_terms").fetchall()
        finally:
            conn.execute("ROLLBACK TO kb_query")
            conn.execute("RELEASE kb_query")
        if not instances:
            return 0.0
        terms = sorted({t for t, _ in instances})
        marks = ",".join("?" * len(terms))
        counts = dict(
            conn.execute(f"SELECT term, doc FROM temp.kb_fts_terms WHERE term IN ({marks})", terms).fetchall()
        )
        total = self._total_rows()
        best: dict[int, float] = {}
        for term, phrase in instances:
            n = int(counts.get(term, 0))
            if n:  # a term no segment holds cannot be matched: it should not lower every score
                best[phrase] = max(best.get(phrase, 0.0), idf(total, n))
        return sum(best.values())

    def invalidate(self) -> None:
        """Forget cached statistics: call after this connection wrote segments."""
        self._total = None

    def _total_rows(self) -> int:
        """The row count FTS5 uses for IDF, cached until another connection commits (``data_version``)
        or this one calls :meth:`invalidate`."""
        version = int(self.conn.execute("PRAGMA data_version").fetchone()[0])
        if self._total is None or self._total[0] != version:
            (n,) = self.conn.execute("SELECT count(*) FROM kb_segments").fetchone()
            self._total = (version, int(n))
        return self._total[1]
