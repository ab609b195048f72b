"""A llama.cpp grammar (GBNF) that makes every ReAct reply well formed.

The reply is ``Thought: <one line>``, then ``Action:`` and a JSON blob on one line (the form in which
the scratchpad shows actions back to the model): ``{"action": <name>, "action_input": <input>}``,
where the name is one of the offered tools (its input following that tool's JSON schema) or
``Final Answer`` (its input a string). ``tool_choice`` narrows
the choice as in the OpenAI API: ``required`` (a tool), ``none`` (the final answer), or a tool name.
Without tools (the last round) only the final answer is allowed.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from loopwright.model._local_words import is_number, is_word_problem, written_expression_pattern
from loopwright.model.entities import ToolSchema
from loopwright.zones import zones_named_in

THOUGHT_MAX_CHARS = 160
ANSWER_MAX_CHARS = 300
STRING_MAX_CHARS = 200
# After a short result that is not a number (a time, a word), the answer is one of these sentences
# around it, whole: a tiny model let to write around it invented the rest ("Sydney is today's Tokyo
# on Monday at …" for the time in Tokyo on a Saturday) and ran on past it.
STATING_LEADS = ("It is ", "The answer is ")
CHAR_RULE = re.compile(r"^char ::= .*$", re.MULTILINE)
STRING_RULE = re.compile(r"^string ::= .*$", re.MULTILINE)
_SAFE_CHAR = r'char ::= [^"\\\n`{}] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})'
# The decision comes first and names the tool: small models copy a tool's name from the question
# (or from what it asks for) far more reliably than they choose between abstract options.
DECISION_PREFIX = "Tool needed:"
FINAL_DECISION = DECISION_PREFIX + " none."
_INPUT_KEY = ', "action_input": '
_TO_ACTION = '\n\nAction: {"action": '
OBSERVATION_MAX_CHARS = 60
_THOUGHT_CHARS = re.compile(r"[^\n`{}]+")


def answering_thought(observation: str) -> str:
    """The thought that answers after a tool's result, as the prompt's worked examples write it."""
    return f"{FINAL_DECISION} The observation {observation} answers the question."


def observation_fits(observation: str | None) -> bool:
    """Whether an observation is short and plain enough to be quoted in a thought (one line, none of
    the characters a thought may not hold)."""
    return bool(
        observation and len(observation) <= OBSERVATION_MAX_CHARS and _THOUGHT_CHARS.fullmatch(observation)
    )


def react_grammar(
    tools: Sequence[ToolSchema],
    tool_choice: str = "auto",
    *,
    prefix: str = "Thought: ",
    observation: str | None = None,
    answer_schema: dict[str, Any] | None = None,
    question: str | None = None,
    subjects: Sequence[str] = (),
    units: Sequence[str] = (),
) -> str:
    """The grammar for one reply. The thought opens with the decision — "Tool needed: <tool>." or
    "Tool needed: none." — so the model makes its choice first, in words it can weigh against the
    question (as the prompt's examples do), and the action that follows must match it.

    ``observation``: the short result of the tool just called, if any. Deciding to answer after it,
    the thought is then fixed to the prompt examples' "The observation <it> answers the question."
    A tiny model left to write that thought freely goes on past it ("… and gives a final answer of
    402." after the calculator said 391) and then copies its own invention into the answer.

    ``answer_schema``: the JSON Schema the final answer follows (structured output); the answer is
    then a JSON value generated from it instead of a string, so it always parses.

    ``question``: the user's question, when this round asks it. A tool's ``from_question``
    parameters must then be a part of it (a clause, or a clause's last words): a small model copies
    "12% of 250" far more reliably than it writes it anew (a round after a failed call writes
    freely). An ``expression`` parameter of a word problem is written over the question's numbers
    instead (model._local_words).

    ``subjects`` and ``units``: after a tool returned a number, the answer is the plain sentence
    "<subject> is <number>[ <unit>]." (model._local_words.answer_subjects, unit_words)."""
    # llama.cpp's own JSON-schema-to-grammar converter (imported late: llama_cpp is an optional extra).
    converter: Any = importlib.import_module("llama_cpp.llama_grammar").SchemaConverter(
        prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False
    )
    allowed = _allowed(tools, tool_choice)
    answer = "answer"
    if answer_schema is not None:
        answer = converter.visit(_input_schema(answer_schema), "answer-value")
    branches: list[str] = []
    for index, tool in enumerate(allowed):
        schema = _input_schema(tool.parameters)
        if question:
            schema = _copying(schema, tool.from_question, question)
        input_rule = converter.visit(schema, f"tool-{index}-input")
        decision = _literal(f"{DECISION_PREFIX} {tool.name}.")
        action = _literal(json.dumps(tool.name) + _INPUT_KEY)
        branches.append(f"{decision} rest {action} {input_rule}")
    if not allowed or tool_choice in ("auto", "none"):
        action = _literal(json.dumps("Final Answer") + _INPUT_KEY)
        if observation_fits(observation):
            assert observation is not None
            thought = answering_thought(observation) + _TO_ACTION
            if answer_schema is None:
                # The answer states the result: a tiny model that copied the question into the
                # tool's argument went on to copy it into the answer too ("What is 7 squared"), or
                # wrote "12, which is 2" for 15% of 80; a number is stated in a plain sentence.
                answer = "answer-sentence" if subjects and is_number(observation) else "answer-stating"
            branches.append(f"{_literal(thought)} {action} {answer}")
        else:
            branches.append(f"{_literal(FINAL_DECISION)} rest {action} {answer}")
    head = (
        f"root ::= {_literal(prefix)} ( " + " | ".join(branches) + ' ) "}"\n'
        f"rest ::= [^\\n`{{}}]{{0,{THOUGHT_MAX_CHARS}}} {_literal(_TO_ACTION)}\n"
        f'answer ::= "\\"" char{{1,{ANSWER_MAX_CHARS}}} "\\""\n'
        + (
            "answer-stating ::= " + " | ".join(_literal(json.dumps(s)) for s in stated(observation)) + "\n"
            if observation is not None and observation_fits(observation)
            else ""
        )
        + (_sentence_rule(observation, subjects, units) if subjects and observation else "")
        + f"{_SAFE_CHAR}\n"
    )
    # JSON strings may not hold a newline, a backtick or a brace here, and are never empty: a small
    # model that drifts into writing the closing fence inside a string would otherwise never leave
    # it, and one allowed an empty string closes it at once instead of copying from the question.
    rules = CHAR_RULE.sub("", str(converter.format_grammar()))
    string_rule = f'string ::= "\\"" char{{1,{STRING_MAX_CHARS}}} "\\"" space'
    rules = STRING_RULE.sub(lambda _: string_rule, rules)
    grammar = head + rules
    missing = undefined_rules(grammar)
    if missing:  # llama.cpp does not reject such a grammar: it crashes when sampling with it
        raise ValueError(f"react grammar refers to undefined rules: {', '.join(sorted(missing))}")
    return grammar


_LITERALS = re.compile(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|\{[0-9,]*\}')
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9-]*")


def undefined_rules(grammar: str) -> set[str]:
    """Rule names a GBNF grammar uses but does not define."""
    defined: set[str] = set()
    used: set[str] = set()
    for line in grammar.splitlines():
        name, sep, body = line.partition(" ::= ")
        if not sep:
            continue
        defined.add(name.strip())
        used.update(_IDENTIFIER.findall(_LITERALS.sub(" ", body)))
    return used - defined


def _allowed(tools: Sequence[ToolSchema], tool_choice: str) -> list[ToolSchema]:
    if tool_choice == "none":
        return []
    if tool_choice in ("auto", "required"):
        return list(tools)
    chosen = [t for t in tools if t.name == tool_choice]
    return chosen or list(tools)  # an unknown name: fall back to every tool rather than none


def _input_schema(parameters: dict[str, Any]) -> dict[str, Any]:
    # Descriptions do not constrain decoding; strip them so the grammar stays small.
    def strip(node: Any) -> Any:
        if isinstance(node, list):
            return [strip(x) for x in node]
        if not isinstance(node, dict):
            return node
        out = {
            k: strip(v)
            for k, v in node.items()
            if k not in ("description", "title", "examples", "properties")
        }
        if "properties" in node:  # property names are data, not keywords
            out["properties"] = {k: strip(v) for k, v in node["properties"].items()}
        return out

    schema: dict[str, Any] = strip(parameters) or {"type": "object"}
    if schema.get("type") == "object" and schema.get("properties"):
        # Every declared property is written, in order: a tiny model otherwise closes the object early.
        schema["required"] = list(schema["properties"])
    return schema


SPAN_MAX_WORDS = 12


_CLAUSE_END = re.compile(r"[.,;:!?](?:\s+|$)")


def question_spans(question: str, kind: str = "phrase") -> list[str]:
    """The parts of the question a copied argument may be: each clause whole (``clause``), or the
    last 1 to SPAN_MAX_WORDS words of each (``phrase``); clauses end at . , ; : ! ?. Ending where
    the clause ends keeps a small model from stopping after the first number ("7" for "7 squared");
    a whole clause keeps it from starting at the last one ("250" for "Subtract 89 from 250")."""
    spans: dict[str, None] = {}
    for clause in _CLAUSE_END.split(question):
        words = clause.split()
        starts = [0] if kind == "clause" else range(max(0, len(words) - SPAN_MAX_WORDS), len(words))
        for start in starts:
            span = " ".join(words[start:])
            if not span or span.count(")") > span.count("("):
                continue  # "27) * 3" is no expression
            spans[span] = None
    return list(spans)


def answer_sentences(
    tools: Sequence[ToolSchema],
    tool_choice: str = "auto",
    *,
    prefix: str = "Thought: ",
    observation: str | None = None,
    answer_schema: dict[str, Any] | None = None,
    subjects: Sequence[str] = (),
    units: Sequence[str] = (),
) -> list[str] | None:
    """Every reply ``react_grammar`` allows for the same arguments when it allows nothing but the
    answer sentence after a short result (the fixed thought, then "<subject> is <number>[ <unit>]."
    after a number, :func:`stated` after anything else) — a few replies that differ only in a few
    words — or None when it allows more."""
    if _allowed(tools, tool_choice):
        return None  # a tool may still be called
    if answer_schema is not None or observation is None or not observation_fits(observation):
        return None
    thought = answering_thought(observation) + _TO_ACTION
    head = f"{prefix}{thought}{json.dumps('Final Answer')}{_INPUT_KEY}"
    if not (subjects and is_number(observation)):
        return [head + json.dumps(sentence) + "}" for sentence in stated(observation)]
    number = observation.strip()
    return [
        head + json.dumps(f"{subject} is {number}{unit}.") + "}"
        for subject in subjects
        for unit in ["", *(" " + u for u in units)]
    ]


def stated(observation: str) -> list[str]:
    """The answers that state a short result as it is: "It is <result>.", "The answer is <result>."."""
    result = observation.strip()
    end = "" if result.endswith((".", "!", "?")) else "."
    return [f"{lead}{result}{end}" for lead in STATING_LEADS]


ACTION_REPLIES_MAX = 32


def action_replies(tool: ToolSchema, question: str) -> list[str] | None:
    """What may follow the thought of a reply that calls ``tool`` on the round that asks
    ``question``, when ``react_grammar`` leaves nothing to write but a choice among copies of the
    question — every parameter a string taken from a list (``from_question``: a clause, a time
    zone): the action, once per combination of values, in the form the prompt's examples show. None
    when a parameter is written freely (a word problem's expression, a number) or the combinations
    are too many to list."""
    schema = _copying(_input_schema(tool.parameters), tool.from_question, question)
    properties = schema.get("properties") or {}
    if not properties or schema.get("type") != "object":
        return None
    choices: list[tuple[str, list[str]]] = []
    for name, prop in properties.items():
        values = prop.get("enum") if isinstance(prop, dict) else None
        if prop.get("type") != "string" or not values or not all(isinstance(v, str) for v in values):
            return None
        choices.append((name, list(values)))
    combinations: list[dict[str, str]] = [{}]
    for name, values in choices:
        combinations = [{**c, name: v} for c in combinations for v in values]
        if len(combinations) > ACTION_REPLIES_MAX:
            return None
    head = _TO_ACTION + json.dumps(tool.name) + _INPUT_KEY
    return [head + json.dumps(arguments) + "}" for arguments in combinations]


def _sentence_rule(observation: str, subjects: Sequence[str], units: Sequence[str]) -> str:
    """``answer-sentence``: "<subject> is <number>[ <unit>]." as a JSON string."""
    subject = " | ".join(_literal(json.dumps(s)[1:-1]) for s in subjects)
    unit = " | ".join(_literal(" " + json.dumps(u)[1:-1]) for u in units)
    number = _literal(json.dumps(observation.strip())[1:-1])
    after = f"( {unit} )?" if units else ""
    return f'answer-sentence ::= "\\"" ( {subject} ) " is " {number} {after} ".\\""\n'


def _copying(schema: dict[str, Any], kinds: Mapping[str, str], question: str) -> dict[str, Any]:
    props = schema.get("properties") or {}
    properties = {**props}
    for name, kind in kinds.items():
        if kind == "expression" and props.get(name, {}).get("type") == "string" and is_word_problem(question):
            pattern = written_expression_pattern(question)
            if pattern is not None:  # the model writes the calculation over the question's numbers
                properties[name] = {"type": "string", "pattern": pattern}
                continue
        if kind == "place" and props.get(name, {}).get("type") == "string":
            zones = zones_named_in(question)
            if zones:  # "the time in Berlin": Europe/Berlin, not UTC nor "Berlin" copied with its neighbours
                properties[name] = {"type": "string", "enum": zones}
                continue
        spans = question_spans(question, {"expression": "clause", "place": "phrase"}.get(kind, kind))
        if props.get(name, {}).get("type") != "string" or not spans:
            continue
        # A parameter with a default keeps it as a choice ("UTC" when the question names no place).
        default = props[name].get("default")
        extra = [default] if isinstance(default, str) and default not in spans else []
        properties[name] = {"type": "string", "enum": [*extra, *spans]}
    return {**schema, "properties": properties}


def _literal(text: str) -> str:
    return json.dumps(text)
