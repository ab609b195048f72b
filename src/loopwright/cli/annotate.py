"""``loopwright annotate``: an app's annotations — the answers it gives without its model when annotation
reply is on (docs/trust.md).

``add`` a question and its answer, ``message`` turns a stored message (its query and answer, or an
answer you give) into one, ``feedback`` does that for every message end users liked, ``list`` and
``delete``. The database is the server's (``DATABASE_URL``, else ``LOOPWRIGHT_DB``, else
``./loopwright.db``); the work is :mod:`loopwright.app.guards.annotations`'.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from loopwright.cli._common import print_error, reported_errors

if TYPE_CHECKING:
    from loopwright.app.guards.annotations import Annotations, AnnotationView

T = TypeVar("T")

annotate = typer.Typer(help="Annotations: answers an app gives without its model.", no_args_is_help=True)

AppOpt = Annotated[str, typer.Option("--app", help="The app's id.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _run(work: Callable[[Annotations], Awaitable[T]], plain: bool = False) -> T:
    """The work on the database's annotations; a bad argument (an unknown message or annotation) is
    one ``error:`` line and exit 1."""
    from loopwright.app.guards.annotations import open_annotations
    from loopwright.errors import UserInputError

    async def go() -> T:
        async with open_annotations() as store:
            return await work(store)

    try:
        return asyncio.run(go())
    except UserInputError as exc:
        print_error(str(exc), plain=plain)
        raise typer.Exit(1) from None


def _show(views: list[AnnotationView], json_output: bool) -> None:
    if json_output:
        typer.echo(json.dumps([v.body() for v in views], ensure_ascii=False))
        return
    for v in views:
        typer.echo(f"{v.id}  hits {v.hit_count}\n  Q: {v.question}\n  A: {v.answer}")


@annotate.command("add")
def add(
    app_id: AppOpt,
    question: Annotated[str, typer.Option("--question", "-q", help="The question.")],
    answer: Annotated[str, typer.Option("--answer", "-a", help="The answer.")],
    json_output: JsonOpt = False,
) -> None:
    """Add an annotation; prints its id."""
    with reported_errors(plain=json_output):
        view = _run(lambda s: s.create(app_id, question, answer, account_id="cli"))
    _print_one(view, json_output)


@annotate.command("message")
def from_message(
    message_id: Annotated[str, typer.Argument(help="A stored message's id.")],
    app_id: AppOpt,
    answer: Annotated[
        str | None, typer.Option("--answer", "-a", help="The answer (default: the message's).")
    ] = None,
    question: Annotated[
        str | None, typer.Option("--question", "-q", help="The question (default: the message's query).")
    ] = None,
    json_output: JsonOpt = False,
) -> None:
    """Annotate a stored message (updates its annotation when it has one); prints the annotation's id."""
    with reported_errors(plain=json_output):
        view = _run(
            lambda s: s.from_message(app_id, message_id, answer=answer, question=question, account_id="cli")
        )
    _print_one(view, json_output)


@annotate.command("feedback")
def from_feedback(
    app_id: AppOpt,
    rating: Annotated[str, typer.Option(help="The rating whose messages become annotations.")] = "like",
    limit: Annotated[
        int, typer.Option(min=1, max=1000, help="How many of the newest ratings to read.")
    ] = 100,
    json_output: JsonOpt = False,
) -> None:
    """Annotate every message end users rated (``like`` by default) that has no annotation yet."""
    with reported_errors(plain=json_output):
        views = _run(lambda s: s.from_feedback(app_id, rating, limit))
    if not json_output:
        typer.secho(f"{len(views)} annotation(s) added", err=True)
    _show(views, json_output)


@annotate.command("list")
def list_annotations(
    app_id: AppOpt,
    keyword: Annotated[str, typer.Option(help="Only those whose question or answer has this.")] = "",
    page: Annotated[int, typer.Option(min=1)] = 1,
    limit: Annotated[int, typer.Option(min=1, max=100)] = 20,
    json_output: JsonOpt = False,
) -> None:
    """List the app's annotations, newest first."""
    with reported_errors(plain=json_output):
        views, total = _run(lambda s: s.page(app_id, page, limit, keyword))
    if not json_output:
        typer.secho(f"{total} annotation(s)", err=True)
    _show(views, json_output)


@annotate.command("delete")
def delete(
    annotation_id: Annotated[str, typer.Argument(help="The annotation's id.")], app_id: AppOpt
) -> None:
    """Delete an annotation and its hits."""
    with reported_errors():
        _run(lambda s: s.delete(app_id, annotation_id))
    typer.secho("deleted", err=True)


def _print_one(view: AnnotationView, json_output: bool) -> None:
    body: dict[str, Any] = view.body()
    typer.echo(json.dumps(body, ensure_ascii=False) if json_output else view.id)
