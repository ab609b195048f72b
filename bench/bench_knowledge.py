"""Knowledge base throughput and latency, on one core.

1. Ingest: synthetic documents (Zipf-distributed pseudo-words, ~100-token paragraphs) through
   ``KnowledgeBase.add_text`` (clean, split, store rows + FTS5 index) into a keyword-only dataset, in
   chunks/s, up to 10k and 100k chunks.
2. Keyword query latency p50/p99 at 10k and 100k chunks: questions are 2-6 words drawn from a random
   chunk, leaving out the 200 most frequent words (what stop-word removal does to real questions).
   Measured in the index (``KeywordIndex.search``, the SQL alone) and end to end (``kb.search``: the
   worker-thread hop, segment and document rows, no hit counting).
3. Vector query latency at 10k and 100k: the store is filled with generated unit vectors (384 dims, as
   MiniLM; clustered around one centre per ~100 vectors, as topics cluster real embeddings) —
   embedding 100k chunks with MiniLM on one core would take about an hour — and queried with slightly
   perturbed stored vectors. Reports the sqlite-vec path in use (exact scan ≤ 10k vectors, Hamming
   KNN + exact rescoring above), how often the perturbed vector's source ranks first, and the overlap
   of the top 10 with an exact scan.
4. Embedding throughput of the packaged MiniLM (chunks/s on the test corpus' English paragraphs,
   ~50 tokens each, batch 64), measured separately.

The process pins itself to CPU 0 and torch to one thread. Run:
    .venv/bin/python bench/bench_knowledge.py [--quick]
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from loopwright.knowledge import KnowledgeBase, SqliteVecStore, vectors
from loopwright.knowledge.kb import Dataset

VOCAB = 30_000
PARAGRAPH_WORDS = 75  # ≈ 100 estimated tokens
PARAGRAPHS_PER_DOC = 1_000
DIM = 384
QUERIES = 300


def pin_to_one_core() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})


def make_vocab(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < VOCAB:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    return sorted(words)


def make_paragraphs(n: int, vocab: list[str], np_rng: np.random.Generator) -> list[str]:
    ranks = (np_rng.zipf(1.15, size=(n, PARAGRAPH_WORDS)) - 1) % VOCAB
    return [" ".join(vocab[r] for r in row) + "." for row in ranks]


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
    }


async def ingest(kb: KnowledgeBase, ds: Dataset, paragraphs: list[str]) -> float:
    started = time.perf_counter()
    for i in range(0, len(paragraphs), PARAGRAPHS_PER_DOC):
        doc = await kb.add_text(ds, f"doc{i}.txt", "\n\n".join(paragraphs[i : i + PARAGRAPHS_PER_DOC]))
        assert doc.status == "completed", doc.error
    return time.perf_counter() - started


def keyword_queries(paragraphs: list[str], rng: random.Random) -> list[str]:
    counts = Counter(w for p in paragraphs[:5000] for w in p.rstrip(".").split())
    common = {w for w, _ in counts.most_common(200)}
    out = []
    for _ in range(QUERIES):
        words = [w for w in rng.choice(paragraphs).rstrip(".").split() if w not in common]
        out.append(" ".join(rng.sample(words, min(len(words), rng.randint(2, 6)))))
    return out


async def keyword_latency(kb: KnowledgeBase, ds: Dataset, queries: list[str]) -> dict[str, Any]:
    def in_index() -> list[float]:
        index = kb.store._keyword
        assert index is not None
        times = []
        for q in queries:
            t = time.perf_counter()
            index.search(ds.id, q, 5)
            times.append(time.perf_counter() - t)
        return times

    await kb.search(ds, queries[0], method="keyword", count_hits=False)  # warm up
    index_times = await kb.store._call(in_index)
    e2e = []
    for q in queries:
        t = time.perf_counter()
        await kb.search(ds, q, method="keyword", top_k=5, count_hits=False)
        e2e.append(time.perf_counter() - t)
    return {"index": percentiles(index_times), "kb.search": percentiles(e2e)}


async def vector_latency(kb: KnowledgeBase, ds: Dataset, n: int) -> dict[str, Any]:
    rng = np.random.default_rng(7)
    # Clustered, like real embeddings (topics): 1 centre per ~100 vectors, members at cosine ≈ 0.7.
    centres = rng.standard_normal((max(1, n // 100), DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    noise = rng.standard_normal((n, DIM)).astype(np.float32) / np.sqrt(DIM)
    data = centres[rng.integers(0, len(centres), size=n)] + noise
    data /= np.linalg.norm(data, axis=1, keepdims=True)

    seqs_of: list[int] = []

    def fill() -> float:
        conn = kb.store._conn
        seqs = [r[0] for r in conn.execute("SELECT seq FROM kb_segments LIMIT ?", (n,)).fetchall()]
        seqs_of.extend(seqs)
        store = SqliteVecStore(conn, ds.id, DIM)
        started = time.perf_counter()
        for i in range(0, n, 5000):
            conn.execute("BEGIN")
            store.add(seqs[i : i + 5000], data[i : i + 5000], ["x"] * len(seqs[i : i + 5000]))
            conn.execute("COMMIT")
        return time.perf_counter() - started

    def queries() -> dict[str, Any]:
        store = SqliteVecStore(kb.store._conn, ds.id, DIM)
        picks = rng.integers(0, n, size=QUERIES)
        noise = rng.standard_normal((QUERIES, DIM)).astype(np.float32) * 0.02
        times, overlap, planted = [], [], []
        for pick, q in zip(picks, data[picks] + noise, strict=True):
            t = time.perf_counter()
            hits = store.search(q, 10)
            times.append(time.perf_counter() - t)
            planted.append(bool(hits) and hits[0][0] == seqs_of[int(pick)])
            if len(overlap) < 30:
                limit = vectors.EXACT_LIMIT
                vectors.EXACT_LIMIT = 10**9
                exact = store.search(q, 10)
                vectors.EXACT_LIMIT = limit
                overlap.append(len({s for s, _ in hits} & {s for s, _ in exact}) / 10)
        path = "exact scan" if n <= vectors.EXACT_LIMIT else "bit KNN + exact rescoring"
        agreement = round(float(np.mean(overlap)), 3)
        found = round(float(np.mean(planted)), 3)
        return {
            **percentiles(times),
            "path": path,
            "top10_overlap_with_exact": agreement,
            "source_at_1": found,
        }

    fill_seconds = await kb.store._call(fill)
    result = await kb.store._call(queries)
    result["store_vectors_per_s"] = round(n / fill_seconds)
    return result


async def embedding_throughput() -> dict[str, Any]:
    import torch

    from loopwright.knowledge import MiniLMEmbedder
    from loopwright.knowledge.embeddings import load_minilm

    torch.set_num_threads(1)
    started = time.perf_counter()
    await asyncio.to_thread(load_minilm)
    load = time.perf_counter() - started
    embedder = MiniLMEmbedder()
    # English prose (the test corpus' paragraphs): pseudo-words would split into far more word pieces.
    corpus = Path(__file__).parent.parent / "tests" / "knowledge" / "fixtures" / "corpus"
    prose = [p for f in sorted(corpus.glob("*.md")) for p in f.read_text().split("\n\n") if len(p) > 80]
    texts = (prose * (256 // len(prose) + 1))[:256]
    await embedder.embed(texts[:8])
    started = time.perf_counter()
    for i in range(0, len(texts), 64):
        await embedder.embed(texts[i : i + 64])
    elapsed = time.perf_counter() - started
    return {"load_s": round(load, 1), "chunks_per_s": round(len(texts) / elapsed, 1)}


async def run_size(n: int, paragraphs: list[str], rng: random.Random, directory: Path) -> dict[str, Any]:
    kb = KnowledgeBase(directory / f"bench-{n}.db")
    try:
        ds = await kb.create_dataset(f"bench{n}", chunk_tokens=120, overlap_tokens=0)
        seconds = await ingest(kb, ds, paragraphs[:n])
        chunks = await kb.store.count_segments(ds.id)
        ds = await kb.get_dataset(ds.id)
        result: dict[str, Any] = {"chunks": chunks, "ingest_chunks_per_s": round(chunks / seconds)}
        result["keyword"] = await keyword_latency(kb, ds, keyword_queries(paragraphs[:n], rng))
        vds = await kb.create_dataset(f"vec{n}")
        # Vectors are keyed by segment seq: reuse the keyword dataset's rows as the vectors' segments.
        result["vector"] = await vector_latency(kb, vds, chunks)
        return result
    finally:
        await kb.close()


async def main() -> None:
    pin_to_one_core()
    quick = "--quick" in sys.argv
    sizes = [10_000] if quick else [10_000, 100_000]
    rng = random.Random(42)
    vocab = make_vocab(rng)
    paragraphs = make_paragraphs(max(sizes), vocab, np.random.default_rng(42))
    report: dict[str, Any] = {
        "date": dt.date.today().isoformat(),
        "machine": f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, pinned to 1 core",
    }
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            report[f"{n}"] = await run_size(n, paragraphs, rng, Path(tmp))
            print(json.dumps({str(n): report[f"{n}"]}), flush=True)
    report["minilm"] = await embedding_throughput()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
