"""Built-in tools that need no configuration, and Dify's core built-ins (``time``, ``webscraper``,
``audio``, ``code``) under their Dify names."""

from loopwright.tools.base import Tool
from loopwright.tools.builtin.ask_user import ASK_USER, Asker, ask_user_tool, terminal_asker
from loopwright.tools.builtin.audio import AudioEndpoint, asr_tool, tts_tool
from loopwright.tools.builtin.calculator import calculator_tool
from loopwright.tools.builtin.code import code_tool
from loopwright.tools.builtin.current_time import current_time_tool
from loopwright.tools.builtin.time_tools import time_tools
from loopwright.tools.builtin.web_fetch import web_fetch_tool
from loopwright.tools.builtin.webscraper import webscraper_tool
from loopwright.tools.net import DEFAULT_POLICY, NetworkPolicy
from loopwright.tools.sandbox import Sandbox


def builtin_tools(
    policy: NetworkPolicy = DEFAULT_POLICY,
    *,
    audio: AudioEndpoint | None = None,
    sandbox: Sandbox | None = None,
    ask: Asker | None = None,
) -> list[Tool]:
    """All built-in tools, fresh instances; ``policy`` is the network allow-list ``web_fetch``,
    ``webscraper`` and ``asr`` use, ``audio`` the speech endpoint of ``tts``/``asr``, ``sandbox`` where
    ``simple_code`` runs code, ``ask`` who answers ``ask_user`` (None: a call pauses the run for a
    person, as an approval does)."""
    endpoint = audio or AudioEndpoint()
    return [
        calculator_tool(),
        current_time_tool(),
        web_fetch_tool(policy),
        *time_tools(),
        webscraper_tool(policy),
        tts_tool(endpoint),
        asr_tool(endpoint, policy),
        code_tool(sandbox),
        ask_user_tool(ask),
    ]


__all__ = [
    "ASK_USER",
    "Asker",
    "AudioEndpoint",
    "ask_user_tool",
    "builtin_tools",
    "calculator_tool",
    "code_tool",
    "current_time_tool",
    "time_tools",
    "web_fetch_tool",
    "terminal_asker",
    "webscraper_tool",
]
