"""``loopwright kb …``: knowledge bases from the command line.

The knowledge tables live in the app database's SQLite file (``DATABASE_URL`` / ``LOOPWRIGHT_DB``, else
``loopwright.db`` in the data directory), or in ``files/knowledge.sqlite3`` there when the app
database is not SQLite.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from loopwright.knowledge import Dataset, KnowledgeBase

T = TypeVar("T")
PREVIEW_CHARS = 240

kb = typer.Typer(help="Knowledge bases: create, add documents, search.", no_args_is_help=True)


class Method(StrEnum):
    keyword = "keyword"
    vector = "vector"
    hybrid = "hybrid"


class Backend(StrEnum):
    sqlite_vec = "sqlite-vec"
    lancedb = "lancedb"


def _fail(message: str) -> typer.Exit:
    typer.secho(f"error: {message}", fg="red", err=True)
    return typer.Exit(1)


def _run(work: Callable[[KnowledgeBase], Awaitable[T]]) -> T:
    """Open the knowledge base, run ``work`` on it, close it; errors become one red line."""
    from loopwright.app.admin.apps import open_knowledge
    from loopwright.config import load_settings
    from loopwright.errors import LoopwrightError
    from loopwright.knowledge import DatasetExistsError, DatasetNotFoundError, EmbeddingError
    from loopwright.knowledge.connection import KnowledgeSetupError

    async def main() -> T:
        base = open_knowledge(load_settings())  # the embedding endpoints' URL and key
        try:
            return await work(base)
        finally:
            await base.close()

    try:
        return asyncio.run(main())
    except (
        DatasetExistsError,
        DatasetNotFoundError,
        EmbeddingError,
        KnowledgeSetupError,
        LoopwrightError,
        ValueError,
    ) as e:
        raise _fail(str(e)) from None


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)


@kb.command("create")
def create(
    name: Annotated[str, typer.Argument(help="The dataset's name (1-40 characters).")],
    embedding: Annotated[
        str, typer.Option(help="none (keyword search only), minilm, or openai:<model>.")
    ] = "none",
    chunk_tokens: Annotated[
        int | None, typer.Option(min=1, help="Segment size in tokens (default 500; 200 for minilm).")
    ] = None,
    overlap: Annotated[int | None, typer.Option(min=0, help="Tokens shared by adjacent segments.")] = None,
    description: Annotated[
        str, typer.Option(help="What the dataset is about (the tool's description).")
    ] = "",
    vector_store: Annotated[Backend, typer.Option(help="Where vectors are kept.")] = Backend.sqlite_vec,
    qa: Annotated[bool, typer.Option("--qa", help="Q&A dataset: files hold Q:/A: pairs or a CSV.")] = False,
) -> None:
    """Create a dataset; prints its id."""

    from loopwright.app.admin import datasets

    async def work(base: KnowledgeBase) -> str:
        new = datasets.NewDataset(
            name,
            description=description,
            embedding=embedding,
            vector_store="lancedb" if vector_store is Backend.lancedb else "sqlite-vec",
            chunk_tokens=chunk_tokens,
            chunk_overlap=overlap,
            doc_form="qa_model" if qa else "text_model",
        )
        return (await datasets.create_dataset(base, new)).id

    typer.echo(_run(work))


@kb.command("add")
def add(
    name: Annotated[str, typer.Argument(help="The dataset (name or id).")],
    files: Annotated[list[Path], typer.Argument(help="Text, Markdown, HTML, PDF (or CSV for Q&A) files.")],
) -> None:
    """Add files to a dataset (a file whose name is already there replaces that document)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from loopwright._threads import run_sync
    from loopwright.app.admin import datasets
    from loopwright.knowledge.extract import ExtractError, kind_of

    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise _fail(f"no such file: {missing[0]}")
    try:
        for f in files:  # every type is checked before anything is added
            kind_of(f.name)
    except ExtractError as e:
        raise _fail(str(e)) from None

    async def work(base: KnowledgeBase) -> list[tuple[str, str, int, str | None]]:
        dataset = await datasets.find_dataset(base, name)
        results: list[tuple[str, str, int, str | None]] = []
        columns = (
            TextColumn("{task.description:<10}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        console = _console()
        with Progress(*columns, console=console, disable=not console.is_terminal) as bar:
            file_task = bar.add_task("files", total=len(files))
            chunk_task = bar.add_task("chunks", total=None)
            embed_task = bar.add_task("embeddings", total=None, visible=dataset.has_vectors)
            chunks_total = 0

            def progress(event: str, n: int) -> None:
                nonlocal chunks_total
                if event == "chunks":
                    chunks_total += n
                    bar.update(chunk_task, total=chunks_total, advance=n)
                    bar.update(embed_task, total=chunks_total)
                elif event == "embedded":
                    bar.advance(embed_task, n)

            for file in files:
                queued = await datasets.queue_document(
                    base,
                    dataset,
                    file.name,
                    data=await run_sync(file.read_bytes),
                    kind=kind_of(file.name),
                    progress=progress,
                )
                document = await queued.index()
                results.append((file.name, document.status, document.segment_count, document.error))
                bar.advance(file_task)
        return results

    results = _run(work)
    failed = 0
    for file_name, status, segments, error in results:
        if status == "completed":
            typer.echo(f"{file_name}: {segments} segments")
        else:
            failed += 1
            typer.secho(f"{file_name}: error: {error}", fg="red", err=True)
    if failed:
        raise typer.Exit(1)


@kb.command("search")
def search(
    name: Annotated[str, typer.Argument(help="The dataset (name or id).")],
    query: Annotated[str, typer.Argument(help="What to look for.")],
    method: Annotated[
        Method | None, typer.Option(help="keyword, vector or hybrid (default: the dataset's setting).")
    ] = None,
    top_k: Annotated[int, typer.Option(min=1, help="How many segments to show.")] = 5,
    threshold: Annotated[
        float | None, typer.Option(help="Leave out segments scoring below this (0-1).")
    ] = None,
) -> None:
    """Print the best segments for a query, with their scores."""
    from rich.markup import escape
    from rich.table import Table

    from loopwright.app.admin import datasets

    async def work(base: KnowledgeBase) -> Table:
        dataset = await datasets.find_dataset(base, name)
        hits = await datasets.try_query(
            base,
            dataset,
            query,
            method=method.value if method else None,
            top_k=top_k,
            score_threshold=threshold,
        )
        table = Table(show_lines=True, title=f"{dataset.name}: {len(hits)} segment(s)")
        table.add_column("#", justify="right")
        table.add_column("score", justify="right")
        table.add_column("document")
        table.add_column("segment")
        for i, hit in enumerate(hits, 1):
            text = " ".join(hit.segment.sign_content().split())
            if len(text) > PREVIEW_CHARS:
                text = text[: PREVIEW_CHARS - 1] + "…"
            where = f"{escape(hit.document_name)} §{hit.segment.position}"
            table.add_row(str(i), f"{hit.score:.3f}", where, escape(text))
        return table

    _console().print(_run(work))


@kb.command("list")
def list_datasets() -> None:
    """List the datasets: name, id, documents, embedding, search method, chunk/overlap tokens."""
    datasets: list[Dataset] = _run(lambda base: base.list_datasets())
    if not datasets:
        typer.echo("no datasets (create one: loopwright kb create NAME)")
        return
    width = max(len("name"), *(len(d.name) for d in datasets))
    typer.echo(
        f"{'name':<{width}}  {'id':<36}  {'documents':>9}  {'embedding':<10} {'method':<8} chunk/overlap"
    )
    for d in datasets:
        typer.echo(
            f"{d.name:<{width}}  {d.id:<36}  {d.document_count:>9}  {d.embedding:<10} "
            f"{d.retrieval.method:<8} {d.chunk_tokens}/{d.overlap_tokens}"
        )


@kb.command("documents")
def documents(name: Annotated[str, typer.Argument(help="The dataset (name or id).")]) -> None:
    """List a dataset's documents with their status."""
    from loopwright.app.admin import datasets

    async def work(base: KnowledgeBase) -> list[str]:
        dataset = await datasets.find_dataset(base, name)
        docs, _ = await base.list_documents(dataset)
        return [
            f"{d.id}  {d.status:<9} {d.segment_count:>5} segments  {d.name}"
            + (f"  ({d.error})" if d.error else "")
            for d in docs
        ]

    for line in _run(work):
        typer.echo(line)


@kb.command("delete")
def delete(name: Annotated[str, typer.Argument(help="The dataset (name or id).")]) -> None:
    """Delete a dataset with its documents and vectors."""
    from loopwright.app.admin import datasets

    async def work(base: KnowledgeBase) -> str:
        dataset = await datasets.find_dataset(base, name)
        await datasets.delete_dataset(base, dataset.id)
        return dataset.name

    typer.echo(f"deleted {_run(work)}")


@kb.command("key")
def key() -> None:
    """Create a dataset API key (``dataset-…``) for the Knowledge HTTP API; prints it."""
    from loopwright.app.admin.datasets import create_key

    typer.echo(_run(create_key))
