"""The eval-set file: cases of one or several turns, each with what it expects (docs/evals.md).

An eval set is YAML (or JSON) with ``cases:``; a case has ``turns:`` (``query``, ``inputs``, ``files``,
and the model ``replies`` recorded with it for a replay) and ``expect:`` — the answer, the tool
trajectory, the structured output and the limits of its last turn (a turn may have an ``expect`` of
its own). Unknown keys are refused, so a misspelt expectation fails loudly instead of passing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
import yaml

from loopwright.config import ScriptReplies
from loopwright.errors import UserInputError

Number = Annotated[float, pydantic.Field(allow_inf_nan=False)]


class EvalSetError(UserInputError):
    """An eval-set file that cannot be read or does not follow the schema; the message says where."""


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


def _listed(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


def _compiles(value: str | None) -> str | None:
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"the regex does not compile: {exc}") from None
    return value


class Similar(_Strict):
    """The answer means the same as ``to``: the cosine similarity of their embeddings (the packaged
    MiniLM model by default, or any embedding spec of a knowledge base) is at least ``min``."""

    to: str
    min: float = pydantic.Field(0.8, ge=-1.0, le=1.0)
    embedding: str = "minilm"


class Judge(_Strict):
    """An LLM judge: ``model`` (any model spec; default the app's own) reads the question, the answer
    and the ``rubric`` and gives a score from 0 to 1; the check passes at ``min`` or above."""

    rubric: str
    model: str | None = None
    min: float = pydantic.Field(0.5, ge=0.0, le=1.0)


class QuotesTool(_Strict):
    """The answer repeats part of what a tool returned: a capture group (or the whole match) of
    ``regex`` found in the output of ``tool`` (its whole output when there is no regex)."""

    tool: str
    regex: str | None = None

    _regex_compiles = pydantic.field_validator("regex")(_compiles)


class AnswerExpect(_Strict):
    """What the answer must be; every key given is one check, and all must pass."""

    contains: list[str] | None = None  # every one of these (a single string is one)
    not_contains: list[str] | None = None
    regex: str | None = None  # searched anywhere in the answer
    equals: str | None = None  # the whole answer, surrounding white space aside
    ignore_case: bool = False
    number: Number | None = None  # the answer states this number (commas ignored; 391.0 may read 391)
    quotes_tool: QuotesTool | None = None
    similar: Similar | None = None
    judge: Judge | None = None

    _list_contains = pydantic.field_validator("contains", "not_contains", mode="before")(_listed)

    _regex_compiles = pydantic.field_validator("regex")(_compiles)


class ValueMatch(_Strict):
    """A matcher of one value (a tool argument or output): ``equals``, ``contains``, ``regex``,
    ``number`` (equal as a number, to a relative 1e-6), or ``any: true`` (present, whatever it is)."""

    equals: Any = None
    contains: str | None = None
    regex: str | None = None
    number: Number | None = None
    any: bool = False

    _regex_compiles = pydantic.field_validator("regex")(_compiles)


def _value_match(value: Any) -> Any:
    """A plain value is an ``equals`` matcher; a mapping of matcher keys is a :class:`ValueMatch`."""
    keys = set(ValueMatch.model_fields)
    if isinstance(value, dict) and value and set(value) <= keys:
        return value
    return {"equals": value}


ArgMatch = Annotated[ValueMatch, pydantic.BeforeValidator(_value_match)]


class ToolExpect(_Strict):
    """One expected tool call: its name, and optionally matchers of its arguments (only those named
    are checked) and of its output."""

    name: str
    args: dict[str, ArgMatch] | None = None
    output: ArgMatch | None = None


def _tool_entry(value: Any) -> Any:
    return {"name": value} if isinstance(value, str) else value


class TrajectoryExpect(_Strict):
    """The tool calls of the turn. ``exact``: these calls and no others, in this order; ``in_order``:
    these in this order, others allowed between; ``any_order``: each of these at least once."""

    match: Literal["exact", "in_order", "any_order"] = "exact"
    tools: list[Annotated[ToolExpect, pydantic.BeforeValidator(_tool_entry)]] = []


class OutputExpect(_Strict):
    """Structured output: the answer is JSON that follows ``schema`` (default: the app's
    ``output_schema``), and its fields equal those of ``fields`` when given."""

    valid: bool = True
    json_schema: dict[str, Any] | None = pydantic.Field(None, alias="schema")
    fields: dict[str, Any] | None = None


class CitationsExpect(_Strict):
    """The answer's knowledge-base citations (``retriever_resources``): at least ``min`` of them,
    and from each document named in ``documents``."""

    min: int = pydantic.Field(1, ge=0)
    documents: list[str] = []


class LimitsExpect(_Strict):
    """Most model rounds, tokens, cost (in the model's currency) and seconds a turn may take."""

    rounds: int | None = pydantic.Field(None, ge=0)
    tokens: int | None = pydantic.Field(None, ge=0)
    cost: float | None = pydantic.Field(None, ge=0)
    seconds: float | None = pydantic.Field(None, gt=0)


class Expect(_Strict):
    answer: AnswerExpect | None = None
    trajectory: TrajectoryExpect | None = None
    output: OutputExpect | None = None
    citations: CitationsExpect | None = None
    limits: LimitsExpect | None = None
    error: bool = False  # the turn is expected to end in an error (a refused input, a guard)

    def is_empty(self) -> bool:
        return self == Expect()


class ToolOutputRecord(_Strict):
    """What one tool call returned, recorded (``--replay-tools`` gives it back instead of running)."""

    tool: str
    output: str


class Turn(_Strict):
    """One message of a case; ``replies`` are the model's replies recorded for it (``--replay``),
    in the form of a scripted model's script (docs/configuration.md); ``tool_outputs`` what its tool
    calls returned, in order."""

    query: str
    inputs: dict[str, Any] = {}
    files: list[dict[str, Any]] = []
    replies: ScriptReplies = []
    tool_outputs: list[ToolOutputRecord] = []
    expect: Expect | None = None


class Case(_Strict):
    name: str
    turns: list[Turn] = pydantic.Field(min_length=1)
    expect: Expect = Expect()
    tags: list[str] = []

    @pydantic.model_validator(mode="before")
    @classmethod
    def _one_query(cls, data: Any) -> Any:
        # ``query:`` (with ``inputs``/``files``) is a one-turn case written short.
        if isinstance(data, dict) and "query" in data and "turns" not in data:
            data = dict(data)
            keys = ("query", "inputs", "files", "replies", "tool_outputs")
            turn = {k: data.pop(k) for k in keys if k in data}
            data["turns"] = [turn]
        return data

    def expectations(self) -> list[tuple[int, Expect]]:
        """``(turn index, expectations)`` of every turn that has some: the case's ``expect`` is the
        last turn's."""
        out = [(i, t.expect) for i, t in enumerate(self.turns) if t.expect is not None]
        if not self.expect.is_empty():
            out.append((len(self.turns) - 1, self.expect))
        return out

    @property
    def replayable(self) -> bool:
        return all(t.replies for t in self.turns)


class EvalSet(_Strict):
    name: str = ""
    description: str = ""
    cases: list[Case] = pydantic.Field(min_length=1)

    @pydantic.model_validator(mode="after")
    def _unique_names(self) -> EvalSet:
        seen: set[str] = set()
        for case in self.cases:
            if case.name in seen:
                raise ValueError(f"two cases are named {case.name!r}")
            seen.add(case.name)
        return self

    def to_yaml(self) -> str:
        """The set as YAML, without the keys left at their defaults (what ``eval record`` writes)."""
        data = self.model_dump(mode="json", exclude_defaults=True, by_alias=True)
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def parse_eval_set(text: str, *, where: str = "eval set") -> EvalSet:
    """An eval set from YAML or JSON text; :class:`EvalSetError` names the first problem."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise EvalSetError(f"{where}: not YAML: {exc}") from None
    if not isinstance(data, dict):
        raise EvalSetError(f"{where}: expected a mapping with cases:, found {type(data).__name__}")
    try:
        return EvalSet.model_validate(data)
    except pydantic.ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        place = ".".join(str(p) for p in err["loc"]) or "the top level"
        raise EvalSetError(f"{where}: {place}: {err['msg']}") from None


def load_eval_set(path: str | Path) -> EvalSet:
    """The eval set of a file (``.yaml``, ``.yml`` or ``.json``)."""
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalSetError(f"cannot read the eval set {file}: {exc}") from None
    return parse_eval_set(text, where=str(file))
