"""Native tool calls of local instruct models, in the format their chat template teaches.

A GGUF's chat template (``tokenizer.chat_template``) renders the offered tools into the prompt and
shows how the model writes a call; three formats cover the common small instruct models:

- ``hermes`` (Qwen2.5, Hermes, SmolLM3…): ``<tool_call>{"name": …, "arguments": {…}}</tool_call>``,
  one block per call;
- ``llama3`` (Llama 3.1–3.3): a JSON object ``{"name": …, "parameters": {…}}`` as the whole reply,
  after the ``<|python_tag|>`` token or without it;
- ``mistral`` (Mistral Nemo, Small…): ``[TOOL_CALLS]`` and a JSON list of ``{"name": …, "arguments":
  {…}}``.

A template that teaches none of them leaves the model on the ReAct strategy and its grammar.
Special tokens (``<|python_tag|>``, ``[TOOL_CALLS]``) may or may not reach the text, depending on
how the tokenizer marks them: the parsers accept both.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from enum import StrEnum
from typing import Any

from loopwright.model.entities import ToolCall, ToolSchema


class ToolFormat(StrEnum):
    HERMES = "hermes"
    LLAMA3 = "llama3"
    MISTRAL = "mistral"


def detect(template: str | None) -> ToolFormat | None:
    """The tool-call format a chat template teaches, or None (the template renders no tools, or in a
    form not known here)."""
    if not template or "tools" not in template:
        return None
    if "<tool_call>" in template:
        return ToolFormat.HERMES
    if "[TOOL_CALLS]" in template:
        return ToolFormat.MISTRAL
    if "<|python_tag|>" in template or ("<|start_header_id|>" in template and '"parameters"' in template):
        return ToolFormat.LLAMA3
    return None


# The stop strings after a call: a Hermes model may go on to write the tool's response itself.
STOPS: dict[ToolFormat, list[str]] = {
    ToolFormat.HERMES: ["<tool_response>"],
    ToolFormat.LLAMA3: ["<|eom_id|>"],
    ToolFormat.MISTRAL: [],
}


def template_tools(tools: list[ToolSchema]) -> list[dict[str, Any]]:
    """The tools as chat templates take them (the OpenAI API's form)."""
    return [{"type": "function", "function": tool.to_dict()} for tool in tools]


def call_id(seed: str | None = None) -> str:
    """A tool call id every template accepts (Mistral's insist on nine letters and digits): a new
    one, or the same one for the same ``seed`` (an id from elsewhere, rendered again)."""
    if seed is None:
        return uuid.uuid4().hex[:9]
    if len(seed) == 9 and seed.isalnum():
        return seed
    return hashlib.sha256(seed.encode()).hexdigest()[:9]


_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


def parse(fmt: ToolFormat, text: str) -> tuple[str, list[ToolCall]]:
    """The reply's text and its tool calls. A reply whose call does not parse is text: the model
    said something rather than calling."""
    if fmt is ToolFormat.HERMES:
        blocks = _HERMES.findall(text)
        calls = _calls([_json(b) for b in blocks], "arguments")
        if not calls:
            return text, []
        return text[: text.index("<tool_call>")].strip(), calls
    if fmt is ToolFormat.MISTRAL:
        body = text.strip().removeprefix("[TOOL_CALLS]").strip()
        if not body.startswith("["):
            return text, []
        found = _json(body)
        calls = _calls(found if isinstance(found, list) else [], "arguments")
        return ("", calls) if calls else (text, [])
    body = text.strip().removeprefix("<|python_tag|>").strip()
    if not body.startswith("{"):
        return text, []
    # several calls are joined by ";" (Llama 3.2's parallel form): split there, braces kept
    calls = _calls([_json(p) for p in _split_calls(body)], "parameters")
    return ("", calls) if calls else (text, [])


def _split_calls(body: str) -> list[str]:
    pieces = re.split(r"\}\s*;\s*\{", body)
    return [("" if i == 0 else "{") + p + ("" if i == len(pieces) - 1 else "}") for i, p in enumerate(pieces)]


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _calls(objects: list[Any], arguments_key: str) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for obj in objects:
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            return []  # one unreadable call: the reply is not a clean set of calls
        arguments = obj.get(arguments_key, obj.get("arguments", obj.get("parameters", {})))
        if isinstance(arguments, str):
            arguments = _json(arguments) if arguments.strip() else {}
        if not isinstance(arguments, dict):
            return []
        text = json.dumps(arguments, ensure_ascii=False)
        calls.append(ToolCall(call_id(), obj["name"], text))
    return calls
