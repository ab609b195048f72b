"""Evals: an app's behaviour pinned like code. Eval sets are files of cases (one or several turns,
each with what it expects of the answer, the tool trajectory, the structured output and the limits);
they run through the same run pipeline as every request, live or replaying recorded model replies,
and their reports compare across configuration versions and models (docs/evals.md)."""

from loopwright.evals.results import CaseResult, Check, Report, ToolCall, TurnTrace
from loopwright.evals.schema import Case, EvalSet, EvalSetError, Expect, Turn, load_eval_set, parse_eval_set

__all__ = [
    "Case",
    "CaseResult",
    "Check",
    "EvalSet",
    "EvalSetError",
    "Expect",
    "Report",
    "ToolCall",
    "Turn",
    "TurnTrace",
    "load_eval_set",
    "parse_eval_set",
]
