"""Streaming parsers for ReAct replies: thought text and actions, fed delta by delta.

:class:`ReactParser` (the default, "robust" mode) reads what Dify's parser reads and fixes its
quirks; :class:`DifyReactParser` reproduces Dify 1.12.1's output exactly (see ``_dify_parser``).
Both have ``feed``/``flush``, ``problems`` and ``log``; :func:`new_parser` picks one by mode.

Robust mode understands, anywhere in a reply:

* JSON action objects, inline or in fences (```` ```json ````, ```` ``` ````, any tag), several
  per reply, back to back, or as a JSON list; braces and fences inside JSON strings are fine;
* the keys Dify understands (a key containing "input" is the input; ``action``/``tool``/
  ``name``/``function`` is the name), ``{"name": ..., "arguments": ...}``, and one-key wrappers
  such as ``{"tool_call": {...}}``; near-JSON (trailing commas, single quotes, bare keys) is
  repaired with ``json_repair`` when the blob looks like an action;
* line-leading labels (start of reply or after a newline, optional spaces/tabs, any case):
  ``Thought:`` and ``Action:`` are dropped (the text around them is kept); the classic
  ``Action: name`` + ``Action Input: ...`` pair becomes one action; ``Final Answer: text`` makes
  ``Action("Final Answer", text)`` with everything to the end of the reply (resolved at flush).
  Labels inside prose ("this action: x") are plain text.

Everything that is not part of an action comes out as text, in order, as soon as it can no
longer be part of a label or an action.  Nothing raises.  Attempts at an action that cannot be
read are reported in :attr:`ReactParser.problems` and their text is emitted as thought text.

Accounting: every input character is either emitted as text or *consumed* (a dropped label, the
raw text of an action).  With ``record=True`` the parser keeps :attr:`ReactParser.log`, a list of
``("text", s)`` / ``("consumed", s)`` in input order whose strings concatenate to the input.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import IntEnum
from typing import Any, Final, Literal, overload

from loopwright.agent._action_json import (
    FORMAT_HINT,
    NAME_LIMIT,
    all_actions,
    convert,
    loads_lenient,
    plain_input,
    snip,
)
from loopwright.agent._dify_parser import DifyParserError, DifyReactParser
from loopwright.agent.react_events import Action, ParserEvent, merge_events

__all__ = [
    "Action",
    "DifyParserError",
    "DifyReactParser",
    "ParserEvent",
    "ReactParser",
    "is_final_answer",
    "new_parser",
]


Event = ParserEvent


def is_final_answer(name: str) -> bool:
    """True for "Final Answer" in any case, with ``_``/``-``/extra spaces: ``final_answer``..."""
    return " ".join(name.lower().replace("_", " ").replace("-", " ").split()) == "final answer"


# --------------------------------------------------------------------------------------------
# Scanning tables

_TEXT_STOP1: Final = "`{[\n"  # for a one-character delta: `delta in _TEXT_STOP1`
_text_stop_search = re.compile(r"[`{\[\n]").search
_NAME_STOP = re.compile(r"[`{\[\n]")
_JSON_STOP = re.compile(r"""[{}\[\]"']""")
_SPACES = re.compile(r"[ \t]*")
_WS = re.compile(r"\s*")
_SEP = re.compile(r"[\s,]*")
_TICKS = re.compile(r"`+")
_FENCE_INFO = re.compile(r"[ \t]*([\w+#.-]*)\s*")

_LABEL = re.compile(r"([ \t]*)(thought|action[ _]input|action|final[ _]answer):", re.IGNORECASE)
_TERMINATOR = re.compile(
    r"[ \t]*(?:thought|action[ _]input|action|final[ _]answer|observation):", re.IGNORECASE
)
_INPUT_LABEL = re.compile(r"action[ _]input:", re.IGNORECASE)
_LABEL_FIRST: Final = frozenset(" \ttTaAfF")


def _prefixes(*words: str) -> frozenset[str]:
    return frozenset(w[:k] for w in words for k in range(len(w) + 1))


_LABEL_PREFIXES = _prefixes(
    "thought:", "action:", "action input:", "action_input:", "final answer:", "final_answer:"
)
_TERMINATOR_PREFIXES = _LABEL_PREFIXES | _prefixes("observation:")
_INPUT_PREFIXES = _prefixes("action input:", "action_input:")
_MAX_LABEL = max(len(p) for p in _TERMINATOR_PREFIXES)

# A '{' starts a JSON candidate only if what follows can start an object (a quote, '}', or a bare
# key and a colon); '[' only if an object follows it.  "PART" patterns: undecided yet.
_OBJ_START = re.compile(r"""\{\s*(?:["'}]|[A-Za-z_][\w-]*\s*:)""")
_OBJ_PART = re.compile(r"\{\s*(?:[A-Za-z_][\w-]*\s*)?\Z")
_LIST_START = re.compile(r"""\[\s*\{\s*(?:["'}]|[A-Za-z_][\w-]*\s*:)""")
_LIST_PART = re.compile(r"\[\s*(?:\{\s*(?:[A-Za-z_][\w-]*\s*)?)?\Z")

# Text that suggests an action attempt (for unreadable blobs and unclosed fences).
_ACTION_HINT = re.compile(r"action|tool|function|arguments", re.IGNORECASE)


class _State(IntEnum):
    """What the parser is reading; indexes ``_HANDLERS``."""

    TEXT = 0  # thought text (labels are recognised at line starts)
    AFTER_ACTION = 1  # after an "Action:" label
    NAME = 2  # the tool name of a classic "Action: name" line
    AWAIT_INPUT = 3  # between that line and its "Action Input:" label
    INPUT_START = 4  # after "Action Input:"
    INPUT_PLAIN = 5  # a non-JSON action input, up to the next label line
    JSON = 6  # a JSON object or list (inline, or a classic action input)
    FENCE_JSON = 7  # a fenced block of JSON values so far
    FENCE_PLAIN = 8  # a fenced block of anything else
    FINAL = 9  # after "Final Answer:", to the end of the reply


(
    _TEXT,
    _AFTER_ACTION,
    _NAME,
    _AWAIT_INPUT,
    _INPUT_START,
    _INPUT_PLAIN,
    _JSON,
    _FENCE_JSON,
    _FENCE_PLAIN,
    _FINAL,
) = _State

# Fast paths of feed(), by situation (see _set_fast).  Plain ints, not an enum: feed() compares
# them on every delta, and the interpreter's int fast path does not apply to enum members.
_FAST_NONE, _FAST_TEXT, _FAST_LINE, _FAST_VALUE = range(4)
_JSON_SKIP_STOP: Final = {"": "{}[]\"'", '"': '"\\', "'": "'\\"}


def _end(m: re.Match[str] | None, default: int) -> int:
    return m.end() if m is not None else default


def _maybe_label(s: str, k: int) -> bool:
    """Could a line starting at ``s[k]`` begin with a label (now or once more text comes)?"""
    if s[k] not in _LABEL_FIRST:
        return False
    if _LABEL.match(s, k) is not None:
        return True
    p = _end(_SPACES.match(s, k), k)
    return len(s) - p <= _MAX_LABEL and s[p:].lower() in _LABEL_PREFIXES


# --------------------------------------------------------------------------------------------


@overload
def new_parser(mode: Literal["robust"] = "robust", *, record: bool = False) -> ReactParser: ...
@overload
def new_parser(mode: Literal["dify"], *, record: bool = False) -> DifyReactParser: ...
@overload
def new_parser(mode: Literal["robust", "dify"], *, record: bool = False) -> ReactParser | DifyReactParser: ...
def new_parser(
    mode: Literal["robust", "dify"] = "robust", *, record: bool = False
) -> ReactParser | DifyReactParser:
    """A parser for one reply: :class:`ReactParser` for "robust", :class:`DifyReactParser` for
    "dify" (Dify 1.12.1's exact output)."""
    if mode == "dify":
        return DifyReactParser(record=record)
    return ReactParser(mode, record=record)


class ReactParser:
    """Feed the reply's deltas to :meth:`feed`, then call :meth:`flush` once at the end.

    Each call returns text fragments (``str``, never empty) and :class:`Action` objects in reply
    order; the output, merged, does not depend on how the reply is split into deltas.  After
    :meth:`flush` the stream state is reset (``problems`` and ``log`` are kept); use one parser
    per reply.

    ``problems``: one human-readable sentence per
    action *attempt* that could not be read, meant to be sent back to the model.  The text of
    such an attempt is still emitted as thought text.  An attempt is: a JSON object or list whose
    keys name an action/tool/input but that is not a usable action (no input, no name, a name
    that is not a string, an unknown ``{"tool_call": ...}`` wrapper, a list mixing actions and
    other values); an unreadable JSON blob (even after repair) mentioning action/tool/function/
    arguments; an unclosed fenced block tagged ``json`` or holding such a blob; a fence mixing
    action JSON with other text; an unclosed JSON object mentioning an action; a classic
    ``Action Input:`` whose JSON is cut off.  "Soft" problems (an ``Action:`` label with nothing
    readable after it, ``Action: name`` without an ``Action Input:`` line, an ``Action Input:``
    without ``Action:``) are kept pending and dropped if an action or another problem follows;
    :meth:`flush` appends those still pending.  Plain prose never produces a problem.

    ``log`` (``record=True`` only): ``("text" | "consumed", piece)`` in input order;
    the pieces concatenate to the input exactly, and the "text" pieces to the emitted text.
    "consumed" pieces are dropped labels (``Thought:``, ``Action:``, ``Final Answer:``) and the
    raw text of whatever produced actions (a JSON object, a whole fence, a classic
    ``name``/``Action Input:`` block, the final answer text).  With ``record=False`` (default)
    nothing is logged and the fast paths are used.
    """

    __slots__ = (
        "_capture",
        "_classic_len",
        "_classic_raw",
        "_ctx",
        "_depth",
        "_esc",
        "_fast",
        "_fence_has_text",
        "_in_value",
        "_line",
        "_name",
        "_out",
        "_quote",
        "_record",
        "_soft",
        "_state",
        "_tag",
        "_ticks",
        "_undecided",
        "_value_start",
        "_value_stops",
        "_values",
        "log",
        "mode",
        "problems",
    )

    def __init__(self, mode: Literal["robust"] = "robust", *, record: bool = False) -> None:
        """``mode`` can only be "robust"; Dify's exact output is :class:`DifyReactParser`'s (or
        ``new_parser("dify")``'s)."""
        if mode != "robust":
            hint = " (use DifyReactParser or new_parser('dify'))" if mode == "dify" else ""
            raise ValueError(f"unknown parser mode {mode!r}{hint}")
        self.mode = mode
        self.problems: list[str] = []
        self.log: list[tuple[str, str]] = []
        self._record = record
        self._out: list[Event] = []
        self._soft: list[str] = []  # soft problems: dropped if an action is read after them
        self._reset()

    def _reset(self) -> None:
        self._state = _TEXT
        self._line = True  # at the start of a line (the reply's start counts)
        self._undecided = ""  # the tail whose meaning needs more input: re-scanned with the next delta
        self._classic_raw: list[str] = []  # raw text of a classic Action/Action Input being read
        self._classic_len = 0  # characters of the tool name so far (bounded by NAME_LIMIT)
        self._name = ""
        self._capture: list[str] = []  # raw text of the JSON object / fence / capture being read
        self._ctx = _TEXT  # what a JSON object belongs to: _TEXT (inline) or _INPUT_START
        self._depth = 0
        self._quote = ""
        self._esc = False
        self._tag = ""  # a fence's info string ("json", "python", ...)
        self._values: list[tuple[bool, Any, str]] = []  # a fence's JSON values: (ok, value, raw)
        self._value_start = 0  # where in _capture the fence's current JSON value starts
        self._in_value = False  # inside one of a fence's JSON values
        self._fence_has_text = False  # a fence holds something besides JSON values
        self._ticks = 0  # backticks at the end of a plain fence so far (a closing fence may be split)
        self._fast = _FAST_NONE
        self._value_stops = ""  # inside a JSON value, the characters the scanner must look at

    # ---------------------------------------------------------------- public API

    def feed(self, delta: str) -> list[Event]:
        """Reads the next delta of the reply; returns what can be decided so far."""
        fast = self._fast
        if fast == _FAST_TEXT:  # plain text in the middle of a line
            if len(delta) == 1:
                if delta not in _TEXT_STOP1:
                    return [delta]
                if delta == "\n":
                    self._line = True
                    self._fast = _FAST_LINE
                    return [delta]
            elif "{" not in delta and "`" not in delta and "[" not in delta:
                if "\n" not in delta:
                    return [delta] if delta else []
                if self._plain_lines(delta):
                    return [delta]
        elif fast == _FAST_LINE:  # a line starts with a character that cannot start a label
            if delta and not _maybe_label(delta, 0):
                self._line = False
                self._fast = _FAST_TEXT
                return self.feed(delta)
        elif fast == _FAST_VALUE:
            return self._feed_value(delta)
        return self._feed_slow(delta)

    def _feed_value(self, delta: str) -> list[Event]:
        """Inside a JSON value (no held-back tail): scan the delta directly."""
        if len(delta) == 1 and delta not in self._value_stops:
            self._capture.append(delta)  # a character the scanner skips
            return []
        k = self._scan(delta, 0)
        if k < 0:
            if delta:
                self._capture.append(delta)
            self._set_fast()
            return []
        self._capture.append(delta[:k])
        out: list[Event] = []
        self._out = out
        self._value_closed()
        if k < len(delta):
            self._run(delta[k:], False)
        self._set_fast()
        return merge_events(out) if len(out) > 1 else out

    def _feed_slow(self, delta: str) -> list[Event]:
        if not delta:
            return []
        buf = self._undecided + delta if self._undecided else delta
        self._undecided = ""
        out: list[Event] = []
        self._out = out
        self._run(buf, False)
        self._set_fast()
        return merge_events(out) if len(out) > 1 else out

    def _plain_lines(self, delta: str) -> bool:
        """A text delta (mid-line, no fence or JSON start) with newlines: True (and line state
        updated) if no line in it can start with a label."""
        n = len(delta)
        k = delta.find("\n")
        while k >= 0:
            k += 1
            if k == n:
                self._line = True
                self._fast = _FAST_LINE
                return True
            if _maybe_label(delta, k):
                return False
            k = delta.find("\n", k)
        return True

    def _set_fast(self) -> None:
        state = self._state
        if self._undecided or self._record:
            self._fast = _FAST_NONE
        elif state == _TEXT:
            self._fast = _FAST_LINE if self._line else _FAST_TEXT
        elif (state == _JSON or (state == _FENCE_JSON and self._in_value)) and not self._esc:
            self._fast = _FAST_VALUE
            self._value_stops = _JSON_SKIP_STOP[self._quote]
        else:
            self._fast = _FAST_NONE

    def flush(self) -> list[Event]:
        """Ends the reply: settles everything still held and resets the stream state (the
        ``problems`` and ``log`` stay)."""
        out: list[Event] = []
        self._out = out
        if self._undecided:
            buf, self._undecided = self._undecided, ""
            self._run(buf, True)
        self._finish()
        if self._soft:
            self.problems.extend(self._soft)
            self._soft.clear()
        self._reset()
        return merge_events(out)

    # ---------------------------------------------------------------- plumbing

    def _run(self, buf: str, eof: bool) -> None:
        i = 0
        n = len(buf)
        handlers = _HANDLERS
        while i < n:
            state = self._state
            j = handlers[state](self, buf, i, eof)
            if j == i and self._state == state:
                if eof:  # cannot happen: at the end every handler decides
                    self._emit(buf[i:])
                    return
                self._undecided = buf[i:]
                return
            i = j

    def _emit(self, text: str) -> None:
        if text:
            self._out.append(text)
            if self._record:
                self.log.append(("text", text))

    def _consume(self, raw: str) -> None:
        if self._record and raw:
            self.log.append(("consumed", raw))

    def _act(self, actions: list[Action], raw: str) -> None:
        self._consume(raw)
        self._out.extend(actions)
        self._soft.clear()

    def _problem(self, problem: str) -> None:
        """A hard problem; it supersedes the soft ones before it (usually the same attempt)."""
        self._soft.clear()
        self.problems.append(problem)

    def _set_soft(self, problem: str) -> None:
        self._soft.append(problem)

    def _release_held(self) -> str:
        """Emits the held classic-format text; returns it (for messages)."""
        text = "".join(self._classic_raw)
        self._classic_raw.clear()
        self._classic_len = 0  # characters of the tool name so far (bounded by NAME_LIMIT)
        self._emit(text)
        return text

    # ---------------------------------------------------------------- TEXT

    def _h_text(self, buf: str, i: int, eof: bool) -> int:
        if self._line:
            j = self._line_start(buf, i, eof)
            if j >= 0:
                return j
        m = _text_stop_search(buf, i)
        if m is None:
            self._emit(buf[i:])
            return len(buf)
        j = m.start()
        c = buf[j]
        if c == "\n":
            self._emit(buf[i : j + 1])
            self._line = True
            return j + 1
        self._emit(buf[i:j])
        if c == "`":
            return self._open_fence(buf, j, eof)
        return self._open_json(buf, j, eof, _TEXT)

    def _line_start(self, buf: str, i: int, eof: bool) -> int:
        """At a line start: a label (returns the index after it), undecided (returns ``i``), or
        no label (clears the line flag, returns -1)."""
        if buf[i] not in _LABEL_FIRST:
            self._line = False
            return -1
        m = _LABEL.match(buf, i)
        if m is None:
            k = _end(_SPACES.match(buf, i), i)
            if not eof and len(buf) - k <= _MAX_LABEL and buf[k:].lower() in _LABEL_PREFIXES:
                return i
            self._line = False
            return -1
        self._line = False
        self._emit(m.group(1))
        label = m.group(2)
        kind = label[0].lower()
        raw = label + ":"
        if kind == "t":
            self._consume(raw)
        elif kind == "f":
            self._consume(raw)
            self._state = _FINAL
            self._capture = []
        elif len(label) == len("action"):
            self._consume(raw)
            self._state = _AFTER_ACTION
        else:  # "Action Input:" without an "Action:" line before it
            self._emit(raw)
            self._set_soft('An "Action Input:" line has no "Action:" line before it.')
        return m.end()

    def _open_json(self, buf: str, j: int, eof: bool, ctx: _State) -> int:
        """At '{' or '[': starts a JSON candidate, or emits the bracket as text; ``j`` if undecided."""
        if buf[j] == "{":
            start, part = _OBJ_START, _OBJ_PART
        else:
            start, part = _LIST_START, _LIST_PART
        if start.match(buf, j) is None:
            if not eof and part.match(buf, j) is not None:
                return j
            if ctx != _TEXT:
                self._state = _INPUT_PLAIN
                self._capture = []
                return j
            self._emit(buf[j])
            return j + 1
        self._state = _JSON
        self._ctx = ctx
        self._capture = [buf[j]]
        self._depth = 1
        self._quote = ""
        self._esc = False
        return j + 1

    # ---------------------------------------------------------------- classic format

    def _h_after_action(self, buf: str, i: int, eof: bool) -> int:
        j = _end(_SPACES.match(buf, i), i)
        if j > i:
            self._classic_raw.append(buf[i:j])
        if j == len(buf):
            return j
        if buf[j] in "\r\n{[`":
            self._release_held()
            self._set_soft('An "Action:" label is not followed by a readable action. ' + FORMAT_HINT)
            self._state = _TEXT
            return j
        self._state = _NAME
        return j

    def _classic_failed(self, line: bool) -> None:
        name = snip(self._release_held(), 60)
        self._set_soft(f'The action {name!r} has no "Action Input:" line. ' + FORMAT_HINT)
        self._state = _TEXT
        self._line = line

    def _h_name(self, buf: str, i: int, eof: bool) -> int:
        m = _NAME_STOP.search(buf, i)
        end = m.start() if m is not None else len(buf)
        if end > i:
            self._classic_raw.append(buf[i:end])
            self._classic_len += end - i
        if self._classic_len > NAME_LIMIT or (m is not None and buf[end] != "\n"):
            self._classic_failed(False)
            return end
        if m is None:
            return end
        self._name = "".join(self._classic_raw).strip()
        self._classic_raw.append("\n")
        self._state = _AWAIT_INPUT
        return end + 1

    def _h_await_input(self, buf: str, i: int, eof: bool) -> int:
        j = _end(_WS.match(buf, i), i)
        if j > i:
            self._classic_raw.append(buf[i:j])
        n = len(buf)
        if j == n:
            return j
        m = _INPUT_LABEL.match(buf, j)
        if m is not None:
            self._classic_raw.append(m.group())
            self._state = _INPUT_START
            return m.end()
        if not eof and n - j <= _MAX_LABEL and buf[j:].lower() in _INPUT_PREFIXES:
            return j
        self._classic_failed(True)
        return j

    def _h_input_start(self, buf: str, i: int, eof: bool) -> int:
        j = _end(_SPACES.match(buf, i), i)
        if j > i:
            self._classic_raw.append(buf[i:j])
        if j == len(buf):
            return j
        if buf[j] in "{[":
            return self._open_json(buf, j, eof, _INPUT_START)
        self._state = _INPUT_PLAIN
        self._capture = []
        return j

    def _h_input_plain(self, buf: str, i: int, eof: bool) -> int:
        n = len(buf)
        k = i
        while True:
            nl = buf.find("\n", k)
            if nl < 0:
                self._capture.append(buf[i:])
                return n
            start = nl + 1
            m = _TERMINATOR.match(buf, start)
            if m is None:
                p = _end(_SPACES.match(buf, start), start)
                if eof or n - p > _MAX_LABEL or buf[p:].lower() not in _TERMINATOR_PREFIXES:
                    k = start
                    continue
            # a label (or maybe one) starts the next line: the input ends at this newline
            self._capture.append(buf[i:nl])
            if m is None:
                return nl  # undecided
            self._finish_plain_input()
            return nl

    def _finish_plain_input(self) -> None:
        text = "".join(self._capture)
        raw = "".join(self._classic_raw) + text
        self._classic_raw.clear()
        self._classic_len = 0  # characters of the tool name so far (bounded by NAME_LIMIT)
        self._capture = []
        self._state = _TEXT
        self._act([Action(self._name, plain_input(text))], raw)

    # ---------------------------------------------------------------- JSON objects

    def _scan(self, s: str, i: int) -> int:
        """Advances the string-aware bracket scanner; the index after the closing bracket, or -1."""
        n = len(s)
        depth = self._depth
        q = self._quote
        if self._esc:
            self._esc = False
            i += 1
        while i < n:
            if q:  # inside a string: find its end, skipping escaped characters
                j = s.find(q, i)
                b = s.find("\\", i, n if j < 0 else j)
                if b >= 0:
                    if b + 1 >= n:
                        self._esc = True
                        break
                    i = b + 2
                    continue
                if j < 0:
                    break
                q = ""
                i = j + 1
                continue
            m = _JSON_STOP.search(s, i)
            if m is None:
                break
            j = m.start()
            c = s[j]
            i = j + 1
            if c in "{[":
                depth += 1
            elif c in "}]":
                depth -= 1
                if depth == 0:
                    self._depth = 0
                    self._quote = ""
                    return i
            else:
                q = c
        self._depth = depth
        self._quote = q
        return -1

    def _h_json(self, buf: str, i: int, eof: bool) -> int:
        k = self._scan(buf, i)
        if k < 0:
            self._capture.append(buf[i:])
            return len(buf)
        self._capture.append(buf[i:k])
        self._value_closed()
        return k

    def _value_closed(self) -> None:
        """The JSON value being scanned (inline, classic input or fenced) has just closed."""
        if self._state == _FENCE_JSON:
            raw = "".join(self._capture[self._value_start :])
            ok, value = loads_lenient(raw, repair=_ACTION_HINT.search(raw) is not None)
            self._values.append((ok, value, raw))
            self._in_value = False
            return
        raw = "".join(self._capture)
        self._capture = []
        self._state = _TEXT
        if self._ctx == _INPUT_START:
            ok, value = loads_lenient(raw, repair=True)
            held = "".join(self._classic_raw)
            self._classic_raw.clear()
            self._classic_len = 0  # characters of the tool name so far (bounded by NAME_LIMIT)
            self._act([Action(self._name, value if ok else raw.strip())], held + raw)
        else:
            self._resolve(raw)

    def _resolve(self, raw: str) -> None:
        """A complete inline JSON candidate: actions, or text (with a problem if it tried)."""
        ok, value = loads_lenient(raw, repair=_ACTION_HINT.search(raw) is not None)
        if ok:
            result = convert(value)
        else:
            result = _unreadable(raw)
        if isinstance(result, list):
            self._act(result, raw)
            return
        if result is not None:
            self._problem(result)
        self._emit(raw)

    # ---------------------------------------------------------------- fences

    def _open_fence(self, buf: str, j: int, eof: bool) -> int:
        n = len(buf)
        run = _end(_TICKS.match(buf, j), j) - j
        if j + run == n and not eof:
            return j
        if run < 3:
            self._emit(buf[j : j + run])
            return j + run
        m = _FENCE_INFO.match(buf, j + run)
        e = _end(m, j + run)
        if e == n and not eof:
            return j
        self._tag = m.group(1).lower() if m is not None else ""
        self._capture = [buf[j:e]]
        self._values = []
        self._in_value = False
        self._fence_has_text = False
        self._ticks = 0
        self._state = _FENCE_JSON if e < n and buf[e] in "{[" else _FENCE_PLAIN
        return e

    def _h_fence_json(self, buf: str, i: int, eof: bool) -> int:
        blob = self._capture
        if self._in_value:
            return self._h_json(buf, i, eof)
        n = len(buf)
        j = _end(_SEP.match(buf, i), i)
        if j > i:
            blob.append(buf[i:j])
        if j == n:
            return j
        c = buf[j]
        if c in "{[":
            self._value_start = len(blob)
            blob.append(c)
            self._in_value = True
            self._depth = 1
            self._quote = ""
            self._esc = False
            return j + 1
        if c == "`":
            run = _end(_TICKS.match(buf, j), j) - j
            if run >= 3:
                blob.append("```")
                self._close_fence(True)
                return j + 3
            if j + run == n and not eof:
                return j
        self._fence_has_text = True
        self._state = _FENCE_PLAIN
        return j

    def _h_fence_plain(self, buf: str, i: int, eof: bool) -> int:
        n = len(buf)
        if self._ticks:
            need = 3 - self._ticks
            lead = _TICKS.match(buf, i, i + need)
            got = lead.end() - i if lead is not None else 0
            if got == need:
                self._capture.append(buf[i : i + need])
                self._close_fence(False)
                return i + need
            if i + got == n:
                self._capture.append(buf[i:])
                self._ticks += got
                return n
            self._ticks = 0
        k = buf.find("```", i)
        if k >= 0:
            self._capture.append(buf[i : k + 3])
            self._close_fence(False)
            return k + 3
        seg = buf[i:]
        self._capture.append(seg)
        self._ticks = len(seg) - len(seg.rstrip("`"))
        return n

    def _close_fence(self, pure: bool) -> None:
        raw = "".join(self._capture)
        self._capture = []
        self._state = _TEXT
        if pure:
            results = [convert(v) if ok else _unreadable(r) for ok, v, r in self._values]
            actions = all_actions(results)
            if actions is not None:
                self._act(actions, raw)
                return
            problem = next((r for r in results if isinstance(r, str)), None)
            if problem is None and any(isinstance(r, list) for r in results):
                problem = f"The fenced block {snip(raw)} mixes actions with other JSON values. {FORMAT_HINT}"
        elif self._jsonish() and _ACTION_HINT.search(raw):
            problem = f"The fenced block {snip(raw)} holds text besides the action JSON. {FORMAT_HINT}"
        else:
            problem = None
        if problem is not None:
            self._problem(problem)
        self._emit(raw)

    def _jsonish(self) -> bool:
        return self._tag == "json" or self._fence_has_text or bool(self._values)

    def _unclosed_fence(self) -> None:
        raw = "".join(self._capture)
        if self._state == _FENCE_JSON and not self._in_value and self._values:
            actions = all_actions([convert(v) if ok else None for ok, v, _ in self._values])
            if actions is not None:  # only the closing fence is missing
                self._act(actions, raw)
                return
        if self._tag == "json" or (self._state == _FENCE_JSON and _ACTION_HINT.search(raw)):
            self._problem(f"The fenced block {snip(raw)} is not closed: the action is incomplete.")
        self._emit(raw)

    # ---------------------------------------------------------------- final answer

    def _h_final(self, buf: str, i: int, eof: bool) -> int:
        self._capture.append(buf[i:])
        return len(buf)

    # ---------------------------------------------------------------- end of reply

    def _finish(self) -> None:
        state = self._state
        if state == _TEXT:
            return
        if state == _AFTER_ACTION:
            self._release_held()
            self._set_soft('An "Action:" label is not followed by a readable action. ' + FORMAT_HINT)
        elif state in (_NAME, _AWAIT_INPUT):
            self._classic_failed(False)
        elif state == _INPUT_START:
            self._capture = []
            self._finish_plain_input()
        elif state == _INPUT_PLAIN:
            self._finish_plain_input()
        elif state == _JSON:
            self._unclosed_json()
        elif state in (_FENCE_JSON, _FENCE_PLAIN):
            self._unclosed_fence()
        else:  # _FINAL
            text = "".join(self._capture)
            self._act([Action("Final Answer", text.strip())], text)

    def _unclosed_json(self) -> None:
        raw = "".join(self._capture)
        if self._ctx == _INPUT_START:
            name = self._name
            self._release_held()
            self._problem(f"The Action Input of {name!r} is incomplete JSON: {snip(raw)}")
        elif _ACTION_HINT.search(raw):
            self._problem(f"The action JSON {snip(raw)} is incomplete.")
        self._emit(raw)


# State -> handler(parser, buf, i, eof): consumes from buf[i:] and returns the next index; returning
# ``i`` with the state unchanged means "undecided: wait for more input" (never at eof).
_HANDLERS: tuple[Callable[[ReactParser, str, int, bool], int], ...] = (
    ReactParser._h_text,
    ReactParser._h_after_action,
    ReactParser._h_name,
    ReactParser._h_await_input,
    ReactParser._h_input_start,
    ReactParser._h_input_plain,
    ReactParser._h_json,
    ReactParser._h_fence_json,
    ReactParser._h_fence_plain,
    ReactParser._h_final,
)


def _unreadable(raw: str) -> str | None:
    if _ACTION_HINT.search(raw):
        return f"Could not read the action {snip(raw)}: it is not valid JSON. {FORMAT_HINT}"
    return None
