"""What runs around the agent for one message: Dify's agent-chat runner steps 3–5 before it, output
moderation while it streams (reference §7.2).

Before the agent (:meth:`Guards.prepare`), in Dify's order:

1. input moderation (``app.guards.moderation``): flagged → the preset response is the answer; ``overridden``
   → the agent sees the provider's inputs and query;
2. annotation reply (``app.guards.annotations``), when on and there is a query: a match is the answer, the
   hit is recorded and ``message_end`` carries Dify's ``annotation_reply``; a failing embedding model
   is logged and the agent answers (as Dify);
3. external data tools (``app.guards.external_data``) fill their variables.

A direct answer (1 or 2) is streamed as Dify's direct output — ``message`` events, one character each,
then ``message_end`` — and saved as the message's answer; the model is not called.

While the agent streams (the run's pipeline, ``app.run.pipeline``): every ``agent_message`` text feeds the
:class:`~app.guards.moderation.OutputGuard`; a background check that flags the answer ends the run with
``message_replace`` (the preset response) and ``message_end``; at the end the final answer is checked
once more and, flagged, replaced the same way. The saved answer is the replacement.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loopwright.app.config import AppConfig
from loopwright.app.dify.events import TextMessage, WireEvent
from loopwright.app.dify.stream import DifyStream
from loopwright.app.guards.annotations import Annotations
from loopwright.app.guards.external_data import fill_inputs
from loopwright.app.guards.moderation import ModerationContext, OutputGuard, check_inputs
from loopwright.tools.net import NetworkPolicy

log = logging.getLogger("loopwright.app.guards.steps")

OUTPUT_MODERATION = "output_moderation"  # Dify's QueueMessageReplaceEvent reason


@dataclass(frozen=True, slots=True)
class Prelude:
    """What the agent runs with, or the answer given without it."""

    inputs: dict[str, Any]
    query: str
    answer: str | None = None
    annotation_reply: dict[str, Any] | None = None


class OutputFlagged(Exception):
    """Output moderation flagged the answer while it streamed."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class Guards:
    """The steps around the agent (see the module's docstring), for every app of a runtime.
    ``policy`` is the SSRF policy of outbound calls; ``openai`` gives the server's OpenAI-compatible
    base URL and key (the default of ``openai_moderation`` rules)."""

    def __init__(
        self,
        annotations: Annotations,
        policy: Callable[[], NetworkPolicy],
        openai: Callable[[], tuple[str | None, str | None]] = lambda: (None, None),
    ) -> None:
        self.annotations = annotations
        self._policy = policy
        self._openai = openai

    def context(self, app_id: str) -> ModerationContext:
        base_url, api_key = self._openai()
        return ModerationContext(app_id, self._policy(), base_url, api_key)

    async def prepare(
        self, config: AppConfig, app_id: str, inputs: dict[str, Any], query: str, message_id: str
    ) -> Prelude:
        """Steps 1–3 for a started message; raises ``ExternalDataError`` when a data tool fails."""
        inputs = dict(inputs)
        if any(r.inputs.enabled for r in config.moderation):
            verdict = await check_inputs(config.moderation, inputs, query, self.context(app_id))
            if verdict is not None and verdict.action == "direct_output":
                return Prelude(inputs, query, answer=verdict.preset_response)
            if verdict is not None:
                inputs, query = verdict.inputs, verdict.query
        setting = await self.annotations.setting(app_id, config.annotation_reply)
        if setting is not None and setting.enabled and query:
            try:
                match = await self.annotations.match(app_id, query, setting)
                if match is not None:
                    await self.annotations.record_hit(app_id, match, query, message_id)
                    return Prelude(
                        inputs, query, answer=match.answer, annotation_reply=match.reply_metadata()
                    )
            except Exception as exc:  # Dify: a failed annotation query is logged and the model answers
                log.warning("annotation reply of app %s failed: %s", app_id, exc)
        if config.external_data_tools:
            inputs = await fill_inputs(config.external_data_tools, app_id, inputs, query, self._policy())
        return Prelude(inputs, query)

    def output_guard(self, config: AppConfig, app_id: str) -> OutputGuard | None:
        rules = [r for r in config.moderation if r.outputs.enabled]
        return OutputGuard(rules, self.context(app_id)) if rules else None


def direct_answer(stream: DifyStream, prelude: Prelude) -> list[WireEvent]:
    """Dify's direct output of ``prelude.answer``: a ``message`` event per character, then
    ``message_end``; the stream's answer is set to it (what is saved)."""
    text = prelude.answer or ""
    stream.answer = text
    stream.annotation_reply = prelude.annotation_reply
    events: list[WireEvent] = [TextMessage(stream.head, c) for c in text]
    events.append(stream.message_end())
    return events
