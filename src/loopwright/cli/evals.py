"""``loopwright eval …``: run an eval set against an app (``run``), record a case from a stored
conversation (``record``), and compare two versions or two models on one set (``compare``).

``run`` exits 0 when the set passes its threshold, 1 when it falls below, 2 on a usage error (a bad set
file, an unknown app or version, ``--replay`` on cases without recordings) — a CI step as it is. The
work is :mod:`loopwright.evals`'.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from loopwright.cli._common import UsageError, new_console, reported_errors

if TYPE_CHECKING:
    from rich.console import Console

    from loopwright.evals.compare import Comparison
    from loopwright.evals.results import CaseResult, Report
    from loopwright.evals.schema import Case, EvalSet

evals = typer.Typer(
    help="Evals: run eval sets against apps, record cases, compare versions.", no_args_is_help=True
)

SetArg = Annotated[
    Path, typer.Argument(metavar="SET", help="The eval set (YAML or JSON; see docs/evals.md).")
]
AppOpt = Annotated[str, typer.Option("--app", help="The app: its id, or the path of an app YAML file.")]
ReplayOpt = Annotated[
    bool, typer.Option("--replay", help="Play the replies recorded with each case: no model is called.")
]
JsonOut = Annotated[Path | None, typer.Option("--json", metavar="OUT", help="Write the report as JSON.")]
HtmlOut = Annotated[Path | None, typer.Option("--html", metavar="OUT", help="Write the report as HTML.")]
ConcurrencyOpt = Annotated[int, typer.Option("--concurrency", "-j", min=1, help="Cases run at once.")]
JudgeOpt = Annotated[
    str | None,
    typer.Option("--judge-model", metavar="SPEC", help="The model of LLM judges that name none."),
]


@evals.command("run")
def run(
    eval_set: SetArg,
    app: AppOpt,
    version: Annotated[
        int | None, typer.Option("--version", help="Run this configuration version (default: the newest).")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", metavar="SPEC", help="Run on this model instead of the app's."),
    ] = None,
    replay: ReplayOpt = False,
    replay_tools: Annotated[
        bool,
        typer.Option("--replay-tools", help="With --replay: tools give back their recorded outputs too."),
    ] = False,
    json_out: JsonOut = None,
    html_out: HtmlOut = None,
    threshold: Annotated[
        float, typer.Option("--threshold", min=0.0, max=1.0, help="The share of cases that must pass.")
    ] = 1.0,
    concurrency: ConcurrencyOpt = 4,
    judge_model: JudgeOpt = None,
    server: Annotated[
        str | None,
        typer.Option(
            "--server", metavar="URL", help="Run against this server; --app is then the app's API key."
        ),
    ] = None,
) -> None:
    """Run every case of the set through the app and check what it expects; exit 1 below the threshold."""
    with reported_errors():
        if replay and model:
            raise UsageError("--replay and --model exclude each other: a replay calls no model")
        if replay_tools and not replay:
            raise UsageError("--replay-tools goes with --replay")
        cases = _load(eval_set)
        console = new_console()
        report = asyncio.run(
            _run_report(
                eval_set,
                cases,
                app,
                version,
                model,
                replay,
                threshold,
                concurrency,
                judge_model,
                server,
                replay_tools,
            )
        )
        print_report(console, report)
        _write(report.to_json(), json_out)
        if html_out is not None:
            from loopwright.evals.html import report_html

            _write(report_html(report), html_out)
        if not report.ok:
            raise typer.Exit(1)


def _load(path: Path) -> EvalSet:
    from loopwright.evals.schema import EvalSetError, load_eval_set

    try:
        return load_eval_set(path)
    except EvalSetError as exc:
        raise UsageError(str(exc)) from None


def _write(text: str, out: Path | None) -> None:
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")


async def _run_report(
    path: Path,
    cases: EvalSet,
    app: str,
    version: int | None,
    model: str | None,
    replay: bool,
    threshold: float,
    concurrency: int,
    judge_model: str | None,
    server: str | None = None,
    replay_tools: bool = False,
) -> Report:
    from loopwright.evals.runner import evaluate
    from loopwright.evals.target import EvalTargetError

    try:
        with _ProgressBar(len(cases.cases)) as progress:
            return await evaluate(
                cases,
                app,
                name=path.stem,
                version=version,
                model=model,
                replay=replay,
                replay_tools=replay_tools,
                threshold=threshold,
                concurrency=concurrency,
                judge_model=judge_model,
                progress=progress,
                server=server,
            )
    except EvalTargetError as exc:
        raise UsageError(str(exc)) from None


class _ProgressBar:
    """A progress bar on stderr while the cases run (transient: the table replaces it)."""

    def __init__(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self._bar = Progress(
            TextColumn("eval"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            console=Console(stderr=True),
            transient=True,
        )
        self._task = self._bar.add_task("", total=total)
        self._failed = 0

    def __enter__(self) -> _ProgressBar:
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()

    def __call__(self, result: CaseResult, done: int, total: int) -> None:
        self._failed += not result.passed
        self._bar.update(self._task, completed=done, description=f"{self._failed} failed · {result.name}")


def print_report(console: Console, report: Report) -> None:
    """The table of cases, then the summary line."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(f"eval {report.set} · {report.label}"), title_justify="left")
    for header in ("case", "result", "tools", "tokens", "seconds", "failed checks"):
        table.add_column(header, overflow="fold")
    for case in report.cases:
        tools = ", ".join(t for turn in case.turns for t in turn.tools) or "-"
        failed = "; ".join(f"{c.name}: {c.detail}" for c in case.failed_checks)
        verdict = Text("pass", "green") if case.passed else Text("FAIL", "red")
        table.add_row(
            Text(case.name), verdict, Text(tools), str(case.tokens), f"{case.seconds:.2f}", Text(failed)
        )
    console.print(table)
    s = report.summary()
    colour = "green" if report.ok else "red"
    console.print(
        f"[{colour}]{s['passed']}/{s['cases']} passed ({s['pass_rate']:.0%}, threshold "
        f"{report.threshold:.0%})[/{colour}] · {s['tokens']} tokens · cost {s['cost']:g} · "
        f"{s['seconds']:.2f} s"
    )


@evals.command("record")
def record(
    app: Annotated[str, typer.Option("--app", help="The app's id.")],
    conversation: Annotated[str, typer.Option("--conversation", help="The stored conversation's id.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The eval set to add the case to (made if new).")],
    name: Annotated[
        str | None, typer.Option("--name", help="The case's name (default: the conversation's).")
    ] = None,
    expect: Annotated[
        str, typer.Option("--expect", help="What becomes the expectation: both, answer or trajectory.")
    ] = "both",
    replace: Annotated[bool, typer.Option("--replace", help="Replace a case of the same name.")] = False,
) -> None:
    """Add a stored conversation to an eval set as a case: its turns, the model replies behind them (for
    --replay), and its answers and tool calls as what is expected (edit them as you see fit)."""
    from loopwright.evals.record import add_case
    from loopwright.evals.schema import EvalSetError

    with reported_errors():
        if expect not in ("both", "answer", "trajectory"):
            raise UsageError(f"--expect takes both, answer or trajectory, not {expect!r}")
        case = asyncio.run(_record(app, conversation, name, expect))
        try:
            updated = add_case(out, case, replace=replace)
        except EvalSetError as exc:
            raise UsageError(str(exc)) from None
        turns = len(case.turns)
        typer.echo(
            f"recorded {case.name!r} ({turns} turn{'s' if turns != 1 else ''}) in {out}: "
            f"{len(updated.cases)} cases"
        )


async def _record(app: str, conversation: str, name: str | None, expect: str) -> Case:
    from loopwright.app.run.runtime import Database, migrate
    from loopwright.errors import NotFoundError
    from loopwright.evals.record import record_case

    db = Database()
    try:
        await migrate(db)
        return await record_case(db, app, conversation, name=name, expect=expect)  # type: ignore[arg-type]
    except NotFoundError as exc:
        raise UsageError(f"{exc} (app {app}, conversation {conversation})") from None
    finally:
        await db.close()


@evals.command("compare")
def compare_command(
    eval_set: Annotated[
        Path | None, typer.Argument(metavar="SET", help="The eval set (not with --reports).")
    ] = None,
    app: Annotated[str | None, typer.Option("--app", help="The app: its id, or an app YAML file.")] = None,
    version: Annotated[
        list[int] | None, typer.Option("--version", help="A configuration version (give two, base first).")
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option("--model", "-m", metavar="SPEC", help="A model (give two, base first)."),
    ] = None,
    reports: Annotated[
        list[Path] | None, typer.Option("--reports", help="Two saved --json reports instead of runs.")
    ] = None,
    replay: ReplayOpt = False,
    json_out: JsonOut = None,
    html_out: HtmlOut = None,
    concurrency: ConcurrencyOpt = 4,
    judge_model: JudgeOpt = None,
) -> None:
    """Run the set on two versions (or two models) of an app, or read two reports, and show what
    changed per case and overall; exit 1 when a case that passed fails."""
    from loopwright.evals.compare import compare

    with reported_errors():
        base, candidate = _sides(
            eval_set, app, version or [], model or [], reports or [], replay, concurrency, judge_model
        )
        comparison = compare(base, candidate)
        print_comparison(new_console(), comparison)
        _write(comparison.to_json(), json_out)
        if html_out is not None:
            from loopwright.evals.html import comparison_html

            _write(comparison_html(comparison), html_out)
        if any(c.status == "broken" for c in comparison.cases):
            raise typer.Exit(1)


def _sides(
    eval_set: Path | None,
    app: str | None,
    versions: list[int],
    models: list[str],
    reports: list[Path],
    replay: bool,
    concurrency: int,
    judge_model: str | None,
) -> tuple[Report, Report]:
    from loopwright.evals.results import Report

    if reports:
        if len(reports) != 2 or eval_set is not None or app is not None:
            raise UsageError("--reports takes two report files, and no eval set or app")
        try:
            a, b = (Report.model_validate_json(p.read_text(encoding="utf-8")) for p in reports)
        except ValueError as exc:
            raise UsageError(f"not an eval report: {exc}") from None
        return a, b
    if eval_set is None or app is None:
        raise UsageError("give an eval set and --app (or --reports A.json --reports B.json)")
    pairs: list[tuple[int | None, str | None]]
    if len(versions) == 2 and len(models) <= 1:
        pairs = [(v, models[0] if models else None) for v in versions]
    elif len(models) == 2 and len(versions) <= 1:
        pairs = [(versions[0] if versions else None, m) for m in models]
    else:
        raise UsageError("give two --version or two --model (the base first)")
    cases = _load(eval_set)

    async def both() -> tuple[Report, Report]:
        a = await _run_report(eval_set, cases, app, *pairs[0], replay, 1.0, concurrency, judge_model)
        b = await _run_report(eval_set, cases, app, *pairs[1], replay, 1.0, concurrency, judge_model)
        return a, b

    return asyncio.run(both())


def print_comparison(console: Console, comparison: Comparison) -> None:
    from rich.table import Table
    from rich.text import Text

    base, cand = comparison.base, comparison.candidate
    figures = Table(title="overall", title_justify="left")
    for header in ("run", "passed", "rate", "tokens", "cost", "seconds"):
        figures.add_column(header)
    for r in (base, cand):
        figures.add_row(
            Text(r.label),
            f"{r.passed}/{len(r.cases)}",
            f"{r.pass_rate:.0%}",
            str(r.tokens),
            f"{r.cost:g}",
            f"{r.seconds:.2f}",
        )
    cases = Table(title="cases", title_justify="left")
    for header in ("case", "status", "tools (base)", "tools (candidate)", "tokens", "cost"):
        cases.add_column(header, overflow="fold")
    styles = {"same": "", "changed": "yellow", "fixed": "green", "broken": "red"}
    for c in comparison.cases:
        cases.add_row(
            Text(c.name),
            Text(c.status, styles.get(c.status, "")),
            Text(", ".join(c.base_tools) or "-"),
            Text(", ".join(c.candidate_tools) or "-"),
            f"{c.base_tokens} → {c.candidate_tokens}",
            f"{c.base_cost:g} → {c.candidate_cost:g}",
        )
    console.print(figures)
    console.print(cases)
    s = comparison.summary()
    console.print(
        f"{s['changed']} changed · {s['fixed']} fixed · {s['broken']} broken · {s['same']} the same"
    )
