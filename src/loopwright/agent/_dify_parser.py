"""Dify-compatible ReAct output parsing: the engine behind ``ReactParser(mode="dify")``.

This reproduces, output for output, the streaming parser of Dify 1.12.1
(``CotAgentOutputParser.handle_react_stream_output``): a character-level state machine with

* a backtick counter: three consecutive backticks toggle a code block; on the closing fence the
  buffered block is searched for JSON with Dify's regex, and when nothing usable is found the
  closing fence is *not* honoured (the block keeps buffering until the end of the stream);
* a brace counter that ignores JSON string quoting; a balanced ``{...}`` is parsed while the
  *next* character is processed;
* ``action:`` / ``thought:`` label matching, one character at a time, that starts only after a
  newline, a space or at the very beginning (``last_character`` rule), and drops a full match;
* Dify's ``parse_action`` key heuristic (a key containing "input" is the input, any other key is
  the name, the last one winning), with a 1-element list unwrapped.

Every piece of state survives between :meth:`DifyEngine.feed` calls, so the output does not
depend on how the reply is chunked.  Where Dify raises (a pydantic ``ValidationError`` for a
non-string name or an input that is neither a string nor an object, an ``AttributeError`` for a
list of several actions) a :class:`~loopwright.agent.react_parser.DifyParserError` is raised whose
message starts with the original exception type name.  Dify also yields empty strings here and
there; this engine never emits empty text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from loopwright.agent.react_parser import Action, DifyParserError, _merge

__all__ = ["DifyEngine"]

# Dify's code-block extraction: the JSON between a fence (optionally tagged with letters from
# "json", in any case) and the closing fence; greedy, so it runs to the *last* bracket.
_BLOCK_RE = re.compile(r"```[json]*\s*([\[{].*[]}])\s*```", re.DOTALL | re.IGNORECASE)
# Applied to the block with MULTILINE: drops *every* line made only of letters.
_LANG_LINE_RE = re.compile(r"^[a-zA-Z]+\n", re.MULTILINE)

_ACTION_LABEL = "action:"
_THOUGHT_LABEL = "thought:"
_LABEL_OK_BEFORE = frozenset(("\n", " ", ""))

Event = str | Action


def _make_action(name: Any, value: Any) -> Action:
    """Dify builds a pydantic ``Action(action_name: str, action_input: dict | str)`` here."""
    errors = 0
    if not isinstance(name, str):
        errors += 1
    if not isinstance(value, dict | str):
        errors += 2  # one error per member of the union
    if errors:
        plural = "s" if errors > 1 else ""
        raise DifyParserError(f"ValidationError: {errors} validation error{plural} for Action")
    return Action(name, value)


def _parse_action(raw: Any) -> str | Action:
    """Dify's ``parse_action``: a string is decoded first (undecodable text is returned as is)."""
    obj = raw
    if isinstance(raw, str):
        try:
            obj = json.loads(raw, strict=False)
        except json.JSONDecodeError:
            return raw
        except (ValueError, RecursionError) as e:  # not caught by Dify either
            raise DifyParserError(f"{type(e).__name__}: {e}") from e
    if isinstance(obj, list) and len(obj) == 1:
        obj = obj[0]  # "cohere always returns a list"
    if not isinstance(obj, dict):
        raise DifyParserError(f"AttributeError: '{type(obj).__name__}' object has no attribute 'items'")
    name: Any = None
    value: Any = None
    for key, item in obj.items():
        if "input" in key.lower():
            value = item
        else:
            name = item
    if name is not None and value is not None:
        return _make_action(name, value)
    return json.dumps(obj)


def _json_from_code_block(block: str) -> list[Any]:
    """Dify's ``extra_json_from_code_block``: all matches decoded, or ``[]`` if any fails."""
    found = _BLOCK_RE.findall(block)
    if not found:
        return []
    try:
        return [json.loads(_LANG_LINE_RE.sub("", text.strip()), strict=False) for text in found]
    except Exception:  # Dify uses a bare except here
        return []


class DifyEngine:
    """The state machine; :meth:`feed` returns text (merged, never empty) and actions."""

    __slots__ = (
        "act_cache",
        "act_idx",
        "code_cache",
        "depth",
        "got_json",
        "in_code",
        "in_json",
        "json_cache",
        "last",
        "th_cache",
        "th_idx",
        "ticks",
    )

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.code_cache = ""
        self.ticks = 0
        self.in_code = False
        self.json_cache = ""
        self.depth = 0
        self.in_json = False
        self.got_json = False
        self.act_cache = ""
        self.act_idx = 0
        self.th_cache = ""
        self.th_idx = 0
        self.last = ""

    def feed(self, text: str) -> list[Event]:
        out: list[Event] = []
        buf: list[str] = []  # pending text, merged into one string before an action or at the end
        # The state lives in locals while the characters are processed, as in Dify's generator.
        code_cache = self.code_cache
        ticks = self.ticks
        in_code = self.in_code
        json_cache = self.json_cache
        depth = self.depth
        in_json = self.in_json
        got_json = self.got_json
        act_cache = self.act_cache
        act_idx = self.act_idx
        th_cache = self.th_cache
        th_idx = self.th_idx
        last = self.last

        try:
            for ch in text:
                # --- backticks and the code-block cache
                if ch == "`" and not in_json:
                    last = ch
                    code_cache += ch
                    ticks += 1
                else:
                    if in_code:
                        last = ch
                        code_cache += ch
                    else:
                        if ticks > 0:
                            last = ch
                            buf.append(code_cache)
                        code_cache = ""
                    ticks = 0

                # --- "action:" / "thought:" labels (outside code blocks and JSON)
                if not in_code and not in_json:
                    low = ch.lower()
                    emit_now = False
                    if low == _ACTION_LABEL[act_idx]:
                        if act_idx == 0 and last not in _LABEL_OK_BEFORE:
                            emit_now = True
                        else:
                            last = ch
                            act_cache += ch
                            act_idx += 1
                            if act_idx == len(_ACTION_LABEL):
                                act_cache = ""
                                act_idx = 0
                            continue
                    elif act_cache:
                        last = ch
                        buf.append(act_cache)
                        act_cache = ""
                        act_idx = 0

                    if low == _THOUGHT_LABEL[th_idx]:
                        if th_idx == 0 and last not in _LABEL_OK_BEFORE:
                            emit_now = True
                        else:
                            last = ch
                            th_cache += ch
                            th_idx += 1
                            if th_idx == len(_THOUGHT_LABEL):
                                th_cache = ""
                                th_idx = 0
                            continue
                    elif th_cache:
                        last = ch
                        buf.append(th_cache)
                        th_cache = ""
                        th_idx = 0

                    if emit_now:
                        last = ch
                        buf.append(ch)
                        continue

                # --- a third backtick toggles the code block
                if ticks == 3:
                    if in_code:
                        last = ch
                        found = _json_from_code_block(code_cache)
                        if not found:
                            continue  # closing fence not honoured: keep buffering
                        for obj in found:
                            if buf:
                                out.append("".join(buf))
                                buf.clear()
                            out.append(_parse_action(obj))
                        code_cache = ""
                    in_code = not in_code
                    ticks = 0

                # --- inline JSON, by brace depth (string quoting is ignored)
                if not in_code:
                    if ch == "{":
                        depth += 1
                        in_json = True
                        last = ch
                        json_cache += ch
                    elif ch == "}":
                        last = ch
                        json_cache += ch
                        if depth > 0:
                            depth -= 1
                            if depth == 0:
                                in_json = False
                                got_json = True
                                continue  # parsed while handling the next character
                    elif in_json:
                        last = ch
                        json_cache += ch

                    if got_json:
                        got_json = False
                        last = ch
                        if buf:
                            out.append("".join(buf))
                            buf.clear()
                        out.append(_parse_action(json_cache))
                        json_cache = ""
                        depth = 0
                        in_json = False

                if not in_code and not in_json:
                    last = ch
                    if ch != "`":
                        buf.append(ch)
        except DifyParserError as e:
            # Dify raises mid-stream, after yielding what came before: keep that for the caller.
            if buf:
                out.append("".join(buf))
            e.events = _merge(out)
            raise

        self.code_cache = code_cache
        self.ticks = ticks
        self.in_code = in_code
        self.json_cache = json_cache
        self.depth = depth
        self.in_json = in_json
        self.got_json = got_json
        self.act_cache = act_cache
        self.act_idx = act_idx
        self.th_cache = th_cache
        self.th_idx = th_idx
        self.last = last
        if buf:
            out.append("".join(buf))
        return _merge(out)

    def flush(self) -> list[Event]:
        """End of stream: the leftover code-block cache raw, the leftover JSON cache parsed.

        Pending label caches and a completed-but-unparsed JSON object are dropped or parsed
        exactly as Dify does (it only looks at the two caches).  The engine is reset.
        """
        out: list[Event] = []
        if self.code_cache:
            out.append(self.code_cache)
        json_cache = self.json_cache
        self.reset()
        if json_cache:
            try:
                out.append(_parse_action(json_cache))
            except DifyParserError as e:
                e.events = _merge(out)
                raise
        return _merge(out)
