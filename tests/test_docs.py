"""Every Python block in README.md and docs/*.md runs as written, and what it prints is what the block
says it prints (the ``#>`` lines under a ``print``) — checked by pytest-examples, which reads the code
blocks out of the Markdown (no parser of our own).

A block is a complete program: its imports, a model it defines (the embedded one or a scripted one),
``asyncio.run(...)``. Each runs in a fresh namespace, in an empty working directory, with its own data
directory and no API key in the environment.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_examples import CodeExample, EvalExample, find_examples

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = list(find_examples(str(ROOT / "README.md"), str(ROOT / "docs")))


def _id(example: CodeExample) -> str:
    return f"{example.path.relative_to(ROOT)}:{example.start_line}"


def test_the_docs_have_python_examples() -> None:
    files = {example.path.name for example in EXAMPLES}
    assert {"README.md", "quickstart.md", "tools.md", "knowledge.md", "http-api.md"} <= files


@pytest.mark.parametrize("example", EXAMPLES, ids=_id)
def test_python_block_runs_and_prints_what_it_says(
    example: CodeExample,
    eval_example: EvalExample,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOOPWRIGHT_DATA_DIR", str(tmp_path / "data"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "LOOPWRIGHT_MODEL", "DATABASE_URL", "LOOPWRIGHT_DB"):
        monkeypatch.delenv(name, raising=False)
    eval_example.set_config(line_length=110, target_version="py311")
    # A failure is reported as plain text, raised outside the handler (no exception chained to it):
    # the traceback of the block's code points into a file whose code positions Python 3.11's
    # traceback module cannot map, and pytest's report then dies with an INTERNALERROR that hides
    # which block failed and why.
    problem = None
    try:
        eval_example.run_print_check(example)
    except pytest.fail.Exception as failure:
        problem = f"{_id(example)}:\n{failure.msg}"
    except Exception as error:
        problem = f"{_id(example)}: {type(error).__name__}: {error}\n{_frames(error)}"
    if problem is not None:
        pytest.fail(problem, pytrace=False)


def _frames(error: BaseException) -> str:
    lines, tb = [], error.__traceback__
    while tb is not None:
        lines.append(f"  {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno} in {tb.tb_frame.f_code.co_name}")
        tb = tb.tb_next
    return "\n".join(lines)
