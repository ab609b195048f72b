"""Dify-compatible HTTP Service API (``/v1/chat-messages``, conversations, messages, parameters…)."""

from loopwright.server.app import create_app, run_server, serve

__all__ = ["create_app", "run_server", "serve"]
