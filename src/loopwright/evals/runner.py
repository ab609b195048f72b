"""Running an eval set against an app, in-process, through the same run pipeline as every request
(:class:`~loopwright.app.run.runtime.AppRuntime`): each turn is a stored message, its trajectory read
back from its agent log; cases run in parallel up to a bound.

The app is one in the database (by id, ``version`` pinning one of its configuration versions), or an
app YAML file, which is created in a scratch database that goes away with the run — what CI uses. A
``model`` spec replaces the app's model; ``replay`` replaces it with the recorded replies
(:mod:`loopwright.evals.replay`).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopwright._threads import run_sync
from loopwright.app.admin import apps as admin
from loopwright.app.admin.agent_log import message_log
from loopwright.app.config import AppConfig
from loopwright.app.run.plan import MessageRequest
from loopwright.app.run.runtime import AppRuntime, Database, migrate
from loopwright.config import Settings, build_model, load_settings
from loopwright.errors import LoopwrightError
from loopwright.evals.judges import Graders
from loopwright.evals.matchers import check_turn
from loopwright.evals.replay import ReplayModel, replayed_tools, replaying
from loopwright.evals.results import CaseResult, Check, Report, ToolCall, TurnTrace
from loopwright.evals.schema import Case, EvalSet, Expect
from loopwright.evals.target import EVAL_USER, EvalTargetError, Target, load_model
from loopwright.model.base import Model

if TYPE_CHECKING:
    from loopwright.knowledge.embeddings import Embedder

DEFAULT_CONCURRENCY = 4
APP_FILE_SUFFIXES = (".yaml", ".yml", ".json")

Progress = Callable[[CaseResult, int, int], None]  # (result, done, total)


@dataclass
class EvalTarget:
    """An app ready to run cases on: its runtime, id, pinned configuration and what replaces its model."""

    runtime: AppRuntime
    app_id: str
    app_label: str
    config_id: str
    config: AppConfig
    version: int | None
    model: str | None
    replay: bool
    replay_tools: bool = False
    user: str = EVAL_USER
    judge_models: dict[str, Model] = field(default_factory=dict)

    @property
    def default_judge(self) -> str | None:
        """The judge of LLM-judge checks that name none: the model the app runs on (none in a replay)."""
        return None if self.replay else self.model or self.config.model

    async def turn(
        self, query: str, inputs: dict[str, Any], files: list[dict[str, Any]], conversation: str | None
    ) -> tuple[TurnTrace, str | None]:
        return await run_turn(self, query, inputs, files, conversation)

    def embedder_for(self, spec: str) -> Embedder | None:
        from loopwright.knowledge.embeddings import embedder_for

        return embedder_for(spec, self.runtime.settings)

    async def judge_model(self, spec: str) -> Model:
        model = self.judge_models.get(spec)
        if model is None:
            model = self.runtime.model(spec)  # built once per spec, as the apps' models
            await load_model(model)
            self.judge_models[spec] = model
        return model


@asynccontextmanager
async def open_target(
    app: str,
    *,
    version: int | None = None,
    model: str | None = None,
    replay: bool = False,
    replay_tools: bool = False,
    settings: Settings | None = None,
    database_url: str | None = None,
    runtime: AppRuntime | None = None,
) -> AsyncIterator[EvalTarget]:
    """The app to evaluate (see the module's docstring): ``app`` is an app's id, or the path of an
    app YAML file (created in a scratch database). ``runtime`` runs on a caller's runtime instead of
    one of its own (a server's, a test's); it is left open."""
    settings = settings or load_settings()
    app_file = await run_sync(read_app_file, app)
    async with AsyncExitStack() as stack:
        if runtime is None:
            if app_file is not None:
                scratch = await run_sync(tempfile.mkdtemp, "", "loopwright-eval-")
                stack.push_async_callback(run_sync, shutil.rmtree, scratch, True)
                database_url = f"sqlite+aiosqlite:///{Path(scratch) / 'eval.db'}"
            db = Database(database_url) if database_url else Database()
            stack.push_async_callback(db.close)
            await migrate(db)
            runtime = AppRuntime.with_builtin_tools(db, settings)
            stack.push_async_callback(runtime.shutdown)
            if replay and replay_tools:  # before any agent takes them up
                runtime.tools = replayed_tools(runtime.tools)
        if app_file is not None:
            report = admin.read_app_file(app_file[1])
            app_id = await admin.create_app(report.name, report.config, db=runtime.db)
            label = app_file[0]
        else:
            app_id, label = app, app
        config_id, config, number = await _version(runtime, app_id, version)
        if replay:
            runtime.use_model(config.model, ReplayModel())
        elif model:
            runtime.use_model(config.model, build_model(model, settings))
        yield EvalTarget(
            runtime, app_id, label, config_id, config, number, model, replay, replay and replay_tools
        )


def read_app_file(app: str) -> tuple[str, str] | None:
    """``(file name, text)`` when ``app`` is the path of an app file, None when it is an app's id."""
    file = Path(app).expanduser()
    if file.suffix not in APP_FILE_SUFFIXES or not file.is_file():
        return None
    return file.name, file.read_text(encoding="utf-8")


async def _version(
    runtime: AppRuntime, app_id: str, version: int | None
) -> tuple[str, AppConfig, int | None]:
    try:
        versions = await admin.list_versions(app_id, db=runtime.db)
    except admin.AppNotFoundError:
        raise EvalTargetError(
            f"no app {app_id!r} (give an app's id, or the path of an app YAML file)"
        ) from None
    if not versions:
        raise EvalTargetError(f"app {app_id!r} has no configuration")
    chosen = versions[0] if version is None else next((v for v in versions if v.version == version), None)
    if chosen is None:
        have = ", ".join(str(v.version) for v in reversed(versions))
        raise EvalTargetError(f"app {app_id!r} has no version {version} (it has {have})")
    config = await admin.get_version(app_id, chosen.version, db=runtime.db)
    return chosen.id, config, chosen.version if version is not None else None


# --- running ---------------------------------------------------------------------------------------


async def run_set(
    target: Target,
    eval_set: EvalSet,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: Progress | None = None,
    judge_model: str | None = None,
) -> list[CaseResult]:
    """Every case of the set, ``concurrency`` at a time, in the set's order."""
    if target.replay:
        missing = [c.name for c in eval_set.cases if not c.replayable]
        if missing:
            raise EvalTargetError(
                f"--replay needs recorded replies in every turn; {len(missing)} case(s) have none: "
                f"{', '.join(missing[:5])}"
            )
    graders = Graders(target.embedder_for, target.judge_model)
    gate = asyncio.Semaphore(max(1, concurrency))
    done = 0

    async def one(case: Case) -> CaseResult:
        nonlocal done
        async with gate:
            result = await run_case(target, case, graders, judge_model)
        done += 1
        if progress is not None:
            progress(result, done, len(eval_set.cases))
        return result

    return list(await asyncio.gather(*(one(c) for c in eval_set.cases)))


async def run_case(
    target: Target, case: Case, graders: Graders, judge_model: str | None = None
) -> CaseResult:
    """One case: its turns in one conversation, then every expectation checked."""
    started = time.perf_counter()
    react = target.config is not None and target.config.strategy == "react"
    replies = [r for t in case.turns for r in t.replies]
    outputs = [o for t in case.turns for o in t.tool_outputs] if target.replay_tools else []
    replay = replaying(replies, react=react, tool_outputs=outputs) if target.replay else nullcontext()
    traces: list[TurnTrace] = []
    with replay:
        conversation: str | None = None
        for turn in case.turns:
            trace, conversation = await target.turn(turn.query, turn.inputs, turn.files, conversation)
            traces.append(trace)
            if conversation is None:  # refused before it started: no conversation to go on with
                break
    checks: list[Check] = []
    judge_default = judge_model or target.default_judge
    for index, expect in case.expectations():
        if index >= len(traces):
            checks.append(Check(name="turn", passed=False, turn=index, detail="the turn did not run"))
            continue
        checks += await score_turn(expect, traces[index], index, target, graders, judge_default)
    expected = [
        {"turn": index + 1, **expect.model_dump(mode="json", exclude_defaults=True, by_alias=True)}
        for index, expect in case.expectations()
    ]
    return CaseResult(
        name=case.name,
        passed=all(c.passed for c in checks),
        checks=checks,
        turns=traces,
        seconds=time.perf_counter() - started,
        expected=expected,
    )


async def score_turn(
    expect: Expect, trace: TurnTrace, index: int, target: Target, graders: Graders, judge: str | None
) -> list[Check]:
    schema = target.config.output_schema if target.config is not None else None
    checks = check_turn(expect, trace, index, schema)
    graded: list[Awaitable[Check]] = []
    if expect.answer is not None and expect.answer.similar is not None:
        graded.append(graders.similar(expect.answer.similar, trace))
    if expect.answer is not None and expect.answer.judge is not None:
        graded.append(graders.judge(expect.answer.judge, trace, judge))
    for check in await asyncio.gather(*graded, return_exceptions=True):
        if isinstance(check, BaseException):
            if not isinstance(check, Exception):
                raise check
            checks.append(Check(name="answer.graded", passed=False, turn=index, detail=_one_line(check)))
        else:
            check.turn = index
            checks.append(check)
    return checks


async def run_turn(
    target: EvalTarget,
    query: str,
    inputs: dict[str, Any],
    files: list[dict[str, Any]],
    conversation: str | None,
) -> tuple[TurnTrace, str | None]:
    """One message through the runtime; its trace and the conversation it is in (None when refused)."""
    runtime = target.runtime
    request = MessageRequest(
        target.app_id,
        target.user,
        query,
        inputs,
        conversation_id=conversation,
        files=files,
        response_mode="blocking",
        config_id=target.config_id if conversation is None else None,
    )
    started = time.perf_counter()
    try:
        run = await runtime.start(request)
    except LoopwrightError as exc:
        return TurnTrace(query=query, error=_one_line(exc)), conversation
    outcome = await run.outcome()
    seconds = time.perf_counter() - started
    head = run.head
    usage = outcome.usage
    error = _one_line(outcome.error) if outcome.error is not None else None
    if outcome.approval is not None:
        error = "waiting for approval of its tool calls"
    trace = TurnTrace(
        query=query,
        answer=outcome.answer,
        tokens=usage.total_tokens,
        cost=float(usage.total_price),
        currency=usage.currency,
        seconds=seconds,
        error=error,
        citations=list((outcome.end.metadata.get("retriever_resources") or []) if outcome.end else []),
        message_id=head.message_id,
    )
    await runtime.db.writer.settled(head.conversation_id)
    try:
        log = await message_log(runtime.db, head.message_id)
    except LoopwrightError:  # not stored (refused by a guard before the agent ran)
        return trace, head.conversation_id
    trace.tool_calls = [
        ToolCall(name=c["tool_name"], args=c["tool_input"], output=str(c["tool_output"]), error=c["error"])
        for it in log["iterations"]
        for c in it["tool_calls"]
    ]
    trace.rounds = int(log["meta"].get("metrics", {}).get("rounds") or log["meta"]["iterations"])
    return trace, head.conversation_id


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


async def evaluate(
    eval_set: EvalSet,
    app: str,
    *,
    name: str = "",
    version: int | None = None,
    model: str | None = None,
    replay: bool = False,
    replay_tools: bool = False,
    threshold: float = 1.0,
    concurrency: int = DEFAULT_CONCURRENCY,
    judge_model: str | None = None,
    progress: Progress | None = None,
    settings: Settings | None = None,
    database_url: str | None = None,
    server: str | None = None,
) -> Report:
    """Run the set on the app (see :func:`open_target` and :func:`run_set`) into its report; with
    ``server`` (a base URL), on the app behind that server whose API key ``app`` is
    (:mod:`loopwright.evals.remote`)."""
    started = time.perf_counter()
    opened: AbstractAsyncContextManager[Target]
    if server is not None:
        from loopwright.evals.remote import open_remote

        if replay or version is not None or model is not None:
            raise EvalTargetError("a server runs its app as configured: no --replay, --version or --model")
        opened = open_remote(server, app, settings=settings)
    else:
        opened = open_target(
            app,
            version=version,
            model=model,
            replay=replay,
            replay_tools=replay_tools,
            settings=settings,
            database_url=database_url,
        )
    async with opened as target:
        results = await run_set(
            target, eval_set, concurrency=concurrency, progress=progress, judge_model=judge_model
        )
    return Report(
        set=eval_set.name or name,
        app=target.app_label,
        version=target.version,
        model=model,
        replay=replay,
        threshold=threshold,
        seconds=time.perf_counter() - started,
        cases=results,
    )
