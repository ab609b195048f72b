"""A2A tools: a remote A2A agent (protocol 1.0, JSON-RPC binding), found by its agent card, as one tool
of an app, called through the network guard (see docs/tools.md, "A2A agents")."""

from loopwright.tools.a2a.agent import A2AAgent
from loopwright.tools.a2a.source import A2ASource

__all__ = ["A2AAgent", "A2ASource"]
