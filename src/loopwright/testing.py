"""Test helpers that ship with the package: a scripted model for deterministic agents."""

from loopwright.model.scripted import ModelRequest, Reply, ScriptedModel, ScriptExhaustedError

__all__ = ["ModelRequest", "Reply", "ScriptExhaustedError", "ScriptedModel"]
