"""Dify-compatible ReAct output parsing: :class:`DifyReactParser` (``parser_mode="dify"``).

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

Every piece of state survives between :meth:`DifyReactParser.feed` calls, so the output does
not depend on how the reply is chunked.  Where Dify raises (a pydantic ``ValidationError`` for a
non-string name or an input that is neither a string nor an object, an ``AttributeError`` for a
list of several actions) a :class:`DifyParserError` is raised whose message starts with the
original exception type name.  Dify also yields empty strings here and
there; this engine never emits empty text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from enum import IntEnum
from typing import Any

from loopwright.agent.react_events import Action, ParserEvent, merge_events
from loopwright.errors import ModelError

__all__ = ["DifyParserError", "DifyReactParser"]

# Dify's code-block extraction: the JSON between a fence (optionally tagged with letters from
# "json", in any case) and the closing fence; greedy, so it runs to the *last* bracket.
_BLOCK_RE = re.compile(r"```[json]*\s*([\[{].*[]}])\s*```", re.DOTALL | re.IGNORECASE)
# Applied to the block with MULTILINE: drops *every* line made only of letters.
_LANG_LINE_RE = re.compile(r"^[a-zA-Z]+\n", re.MULTILINE)

_ACTION_LABEL = "action:"
_THOUGHT_LABEL = "thought:"
_LABEL_OK_BEFORE = frozenset(("\n", " ", ""))
_LABEL_FIRST = frozenset("aAtT")  # the only characters whose lower() starts a label
# Where plain text stops being plain: a backtick, a brace, or a possible label start.
_PLAIN_STOP = re.compile(r"[`{}]|(?<=[ \n])[aAtT]")
_BRACE = re.compile(r"[{}]")

Event = ParserEvent


class DifyParserError(ModelError, ValueError):
    """Raised by :class:`DifyReactParser` where Dify 1.12.1's parser raises.  The message starts
    with the name of the exception Dify raises (``ValidationError: ...``, ``AttributeError: ...``);
    ``events`` holds what the failing call had produced before the error."""

    def __init__(self, message: str, events: list[Event] | None = None) -> None:
        super().__init__(message)
        self.events: list[Event] = events or []


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


class _Mode(IntEnum):
    """Where the engine is: Dify's ``in_code_block`` / ``in_json`` flags as one value."""

    TEXT = 0  # neither: labels are matched, braces and fences start JSON and code blocks
    CODE = 1  # inside a code block (after three backticks), buffering until a closing fence
    JSON = 2  # inside an inline ``{...}``, counting braces


class DifyReactParser:
    """Dify 1.12.1's parser, with :class:`~loopwright.agent.react_parser.ReactParser`'s interface:
    :meth:`feed` returns text (merged, never empty) and actions, :meth:`flush` ends the reply.
    ``problems`` and ``log`` exist for that interface and stay empty: Dify reports nothing and
    raises :class:`DifyParserError` where it fails.

    Dify's generator keeps ``last_character``; here it is always the character before the one
    being read, so it is kept only between calls (``last``).  In TEXT mode the code-block cache
    holds only the pending backticks, in JSON mode it is empty and no backtick is pending.
    """

    __slots__ = (
        "act_cache",
        "act_idx",
        "code_cache",
        "depth",
        "got_json",
        "json_cache",
        "last",
        "log",
        "mode",
        "problems",
        "th_cache",
        "th_idx",
        "ticks",
    )

    def __init__(self, *, record: bool = False) -> None:
        """``record`` is accepted for the shared interface; nothing is logged in Dify's mode."""
        self.problems: list[str] = []
        self.log: list[tuple[str, str]] = []
        self.reset()

    def reset(self) -> None:
        self.mode = _Mode.TEXT
        self.code_cache = ""  # Dify's code_block_cache
        self.ticks = 0  # consecutive backticks
        self.json_cache = ""
        self.depth = 0  # brace depth
        self.got_json = False  # a balanced object waits to be parsed on the next character
        self.act_cache = ""  # matched part of "action:"
        self.act_idx = 0
        self.th_cache = ""  # matched part of "thought:"
        self.th_idx = 0
        self.last = ""  # the last character of the previous feed ("" at the start)

    def feed(self, text: str) -> list[Event]:
        if (
            len(text) == 1  # the common one-character delta of plain text, with nothing pending
            and self.mode is _Mode.TEXT
            and text not in "`{}"
            and not (self.ticks or self.act_idx or self.th_idx or self.got_json)
            and (text not in _LABEL_FIRST or self.last not in _LABEL_OK_BEFORE)
        ):
            self.last = text
            return [text]
        out: list[Event] = []
        buf: list[str] = []  # pending text, merged into one string before an action or at the end
        i = 0
        n = len(text)
        handlers = _HANDLERS
        try:
            while i < n:
                i = handlers[self.mode](self, text, i, buf, out)
        except DifyParserError as e:
            # Dify raises mid-stream, after yielding what came before: keep that for the caller.
            if buf:
                out.append("".join(buf))
            e.events = merge_events(out)
            raise
        if text:
            self.last = text[-1]
        if buf:
            out.append("".join(buf))
        return merge_events(out)

    # Handlers, one per mode: read from text[i:] while the mode lasts, return the next index.

    def _h_text(self, text: str, i: int, buf: list[str], out: list[Event]) -> int:
        n = len(text)
        while i < n and self.mode is _Mode.TEXT:
            last = text[i - 1] if i else self.last
            if not (self.ticks or self.act_idx or self.th_idx or self.got_json):
                # Nothing pending: plain characters go straight to the text.
                if i == 0 and last in _LABEL_OK_BEFORE and text[0] in _LABEL_FIRST:
                    k = 0
                else:
                    m = _PLAIN_STOP.search(text, i)
                    k = m.start() if m is not None else n
                if k > i:
                    buf.append(text[i:k])
                    i = k
                    continue
            self._text_char(text[i], last, buf, out)
            i += 1
        return i

    def _text_char(self, ch: str, last: str, buf: list[str], out: list[Event]) -> None:
        """One character outside code blocks and JSON, in the order of Dify's loop body."""
        if ch == "`":
            self.code_cache += ch
            self.ticks += 1
        elif self.ticks:
            buf.append(self.code_cache)
            self.code_cache = ""
            self.ticks = 0
        if self._label_step(ch, last, buf):
            return
        if self.ticks == 3:  # an opening fence
            self.mode = _Mode.CODE
            self.ticks = 0
            return
        if ch == "{":
            self.depth += 1
            self.mode = _Mode.JSON
            self.json_cache += ch
        elif ch == "}":
            self.json_cache += ch  # Dify keeps a stray closing brace in the JSON cache
        if self.got_json:  # the object closed on the previous character
            self.got_json = False
            if buf:
                out.append("".join(buf))
                buf.clear()
            out.append(_parse_action(self.json_cache))
            self.json_cache = ""
            self.depth = 0
            self.mode = _Mode.TEXT
        if self.mode is _Mode.TEXT and ch != "`":
            buf.append(ch)

    def _label_step(self, ch: str, last: str, buf: list[str]) -> bool:
        """Dify's "action:" / "thought:" matching; True when the character is used up."""
        low = ch.lower()
        emit_now = False
        idx = self.act_idx
        if low == _ACTION_LABEL[idx]:
            if idx == 0 and last not in _LABEL_OK_BEFORE:
                emit_now = True
            else:
                self._match(ch, idx, is_action=True)
                return True
        elif idx:
            buf.append(self.act_cache)
            self.act_cache = ""
            self.act_idx = 0
        idx = self.th_idx
        if low == _THOUGHT_LABEL[idx]:
            # After a dropped "action:" prefix the character before is a letter either way.
            if idx == 0 and last not in _LABEL_OK_BEFORE:
                emit_now = True
            else:
                self._match(ch, idx, is_action=False)
                return True
        elif idx:
            buf.append(self.th_cache)
            self.th_cache = ""
            self.th_idx = 0
        if emit_now:
            buf.append(ch)
        return emit_now

    def _match(self, ch: str, idx: int, *, is_action: bool) -> None:
        """One more character of a label; a complete label is dropped."""
        if is_action:
            if idx + 1 == len(_ACTION_LABEL):
                self.act_cache = ""
                self.act_idx = 0
            else:
                self.act_cache += ch
                self.act_idx = idx + 1
        elif idx + 1 == len(_THOUGHT_LABEL):
            self.th_cache = ""
            self.th_idx = 0
        else:
            self.th_cache += ch
            self.th_idx = idx + 1

    def _h_code(self, text: str, i: int, buf: list[str], out: list[Event]) -> int:
        """Inside a code block: everything is cached; the third backtick of a run is a closing
        fence only if the cache holds JSON Dify can find, else buffering goes on."""
        n = len(text)
        while i < n:
            k = text.find("`", i)
            if k < 0:
                self.code_cache += text[i:]
                self.ticks = 0
                return n
            ticks = 1 if k > i else self.ticks + 1
            self.ticks = ticks
            self.code_cache += text[i : k + 1]
            i = k + 1
            if ticks == 3:
                found = _json_from_code_block(self.code_cache)
                if found:
                    for obj in found:
                        if buf:
                            out.append("".join(buf))
                            buf.clear()
                        out.append(_parse_action(obj))
                    self.code_cache = ""
                    self.ticks = 0
                    self.mode = _Mode.TEXT
                    return i
        return n

    def _h_json(self, text: str, i: int, buf: list[str], out: list[Event]) -> int:
        """Inside inline JSON: braces are counted (string quoting is ignored, as in Dify); the
        balanced object is parsed while the next character is handled."""
        n = len(text)
        search = _BRACE.search
        while i < n:
            m = search(text, i)
            if m is None:
                self.json_cache += text[i:]
                return n
            k = m.end()
            self.json_cache += text[i:k]
            i = k
            if text[k - 1] == "{":
                self.depth += 1
            else:
                self.depth -= 1
                if self.depth == 0:
                    self.mode = _Mode.TEXT
                    self.got_json = True
                    return i
        return n

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
                e.events = merge_events(out)
                raise
        return merge_events(out)


# Mode -> handler(engine, text, i, buf, out), returning the index after what it read.
_HANDLERS: tuple[Callable[[DifyReactParser, str, int, list[str], list[Event]], int], ...] = (
    DifyReactParser._h_text,
    DifyReactParser._h_code,
    DifyReactParser._h_json,
)
