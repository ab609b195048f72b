"""An app's callbacks, named in its configuration by import path (``package.module:Class``).

Each names an :class:`~loopwright.agent.AgentCallback` subclass importable in the server's Python;
it is made with no arguments, once per agent the runtime builds. Anything else is refused with an
error that names the path: an app configuration cannot make the server instantiate arbitrary classes.
"""

from __future__ import annotations

import pkgutil

from loopwright.agent import AgentCallback
from loopwright.errors import UserInputError


def load_callbacks(paths: list[str]) -> list[AgentCallback]:
    """The callback objects for ``paths``; raises ``UserInputError`` naming the first bad one."""
    out: list[AgentCallback] = []
    for path in paths:
        try:
            target = pkgutil.resolve_name(path)
        except (ImportError, AttributeError, ValueError) as e:
            raise UserInputError(f"the app's callback {path!r} cannot be imported: {e}") from e
        if not (isinstance(target, type) and issubclass(target, AgentCallback)):
            raise UserInputError(f"the app's callback {path!r} is not an AgentCallback subclass")
        out.append(target())
    return out
