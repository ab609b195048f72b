"""Every exception class loopwright defines derives from the one root, ``LoopwrightError``.

Each class says its Dify error body (``app.dify.errors.error_fields`` reads it for the server), the CLI
prints them as one line, and callers catch the branch that says whose fault it was; a class outside the
root escapes all three. The few that stay outside are listed with their reason.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import loopwright
from loopwright.app.dify.errors import INTERNAL_MESSAGE, error_fields
from loopwright.errors import LoopwrightError, ModelError, StorageError, ToolError, UserInputError

# Modules that are not importable as library modules: the CLI's entry point and Alembic's scripts.
NOT_LIBRARY_MODULES = ("loopwright.__main__", "loopwright.store.migrations.")

# Exceptions outside the root on purpose, with why.
OUTSIDE_THE_ROOT = {
    # Control flow: it ends a run from inside the pipeline and is caught there, never reported as an
    # error.
    "loopwright.app.guards.steps.OutputFlagged": "control flow: moderation replacing the answer",
    # The edge's own type: an HTTP status and Dify code already decided, answered as it is.
    "loopwright.server.errors.ApiError": "the HTTP edge's already-classified answer",
    # A2A's edge: a JSON-RPC error (code, message) or an HTTP refusal before any method runs, already
    # in the wire's shape.
    "loopwright.app.wires.a2a.A2AError": "A2A's already-classified JSON-RPC error",
    "loopwright.server.routes_a2a.Refused": "A2A's HTTP refusal before a method runs",
    # Control flow: a plan the model wrote that cannot run; the plan loop tells the model and asks again.
    "loopwright.agent.planning.PlanProblem": "control flow: a plan sent back to the model",
}


def all_modules() -> list[str]:
    names = ["loopwright"]
    for info in pkgutil.walk_packages(loopwright.__path__, "loopwright."):
        if not info.name.startswith(NOT_LIBRARY_MODULES) and info.name != "loopwright.__main__":
            names.append(info.name)
    return names


def exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in all_modules():
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__ == name:
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return found


def test_every_exception_class_is_under_the_root() -> None:
    classes = exception_classes()
    assert len(classes) > 60  # the walk found them (there are 70-odd)
    outside = sorted(name for name, cls in classes.items() if not issubclass(cls, LoopwrightError))
    assert outside == sorted(OUTSIDE_THE_ROOT)


def test_the_allow_list_names_classes_that_exist() -> None:
    assert set(OUTSIDE_THE_ROOT) <= exception_classes().keys()


def _cls(path: str) -> type[BaseException]:
    module, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    assert isinstance(cls, type) and issubclass(cls, BaseException)
    return cls


# Each class that joined the root, its branch, the built-in its callers may still catch it as, and
# what the server answers when one escapes a request (code, status; None: Dify's generic 500).
INVALID_PARAM = ("invalid_param", 400)
MODEL_FAILED = ("completion_request_error", 400)
JOINED = [
    ("loopwright.config.ConfigError", UserInputError, ValueError, INVALID_PARAM),
    ("loopwright.app.config.ConfigImportError", UserInputError, ValueError, INVALID_PARAM),
    ("loopwright.app.dify.dsl_import.DifyImportError", UserInputError, ValueError, INVALID_PARAM),
    (
        "loopwright.knowledge.kb.DatasetExistsError",
        UserInputError,
        ValueError,
        ("dataset_name_duplicate", 409),
    ),
    ("loopwright.knowledge.kb.DatasetNotFoundError", UserInputError, LookupError, ("not_found", 404)),
    ("loopwright.knowledge.extract.ExtractError", UserInputError, ValueError, INVALID_PARAM),
    ("loopwright.cli._common.UsageError", UserInputError, ValueError, INVALID_PARAM),
    (
        "loopwright.knowledge.embeddings.EmbeddingError",
        ModelError,
        RuntimeError,
        MODEL_FAILED,
    ),
    (
        "loopwright.app.guards.moderation.ModerationProviderError",
        ModelError,
        RuntimeError,
        MODEL_FAILED,
    ),
    (
        "loopwright.agent._dify_parser.DifyParserError",
        ModelError,
        ValueError,
        MODEL_FAILED,
    ),
    ("loopwright.tools.openapi.spec.SpecError", ToolError, ValueError, None),
    ("loopwright.tools.files.manager.ToolFileError", ToolError, ValueError, None),
    ("loopwright.tools.sandbox.SandboxUnavailableError", ToolError, RuntimeError, None),
    ("loopwright.tools.dify_plugins.storage.PluginStorageError", ToolError, ValueError, None),
    ("loopwright.tools.dify_plugins.backwards.BackwardsError", ToolError, Exception, None),
    ("loopwright.app.guards.extension_api.ExtensionError", ToolError, RuntimeError, None),
    ("loopwright.knowledge.connection.KnowledgeSetupError", StorageError, RuntimeError, None),
    ("loopwright.app.run.durable.DurableRunError", StorageError, RuntimeError, None),
]


@pytest.mark.parametrize(("path", "branch", "builtin", "answer"), JOINED, ids=[j[0] for j in JOINED])
def test_a_class_that_joined_the_root(
    path: str, branch: type[Exception], builtin: type[Exception], answer: tuple[str, int] | None
) -> None:
    cls = _cls(path)
    assert issubclass(cls, branch) and issubclass(cls, builtin)
    code, status, message = error_fields(cls("what happened"))
    if answer is None:  # an operational failure: Dify's generic 500, the detail is logged, not shown
        assert (code, status, message) == ("internal_server_error", 500, INTERNAL_MESSAGE)
    else:
        assert (code, status) == answer
        assert message == (cls.fixed_message or "what happened")  # type: ignore[attr-defined]
