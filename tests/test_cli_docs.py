"""docs/cli.md's shell examples hold, as its Python blocks do (tests/test_docs.py): the scripted run's
block runs as written, in a shell, and prints the output block below it (times aside); every command
line of its ```bash blocks names a real command and real options; the ``--tool`` list names every
built-in tool. Each run gets an empty working directory and its own data directory, never the
reader's. The blocks are read with markdown-it-py, a CommonMark parser.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token
from typer.testing import CliRunner

from loopwright.cli import app
from loopwright.cli.run import DEFAULT_TOOLS
from loopwright.tools.builtin import builtin_tools

ROOT = Path(__file__).resolve().parent.parent
CLI_MD = ROOT / "docs" / "cli.md"
SHELL = ("bash", "sh", "shell")


def fences() -> list[Token]:
    tokens = MarkdownIt("commonmark").parse(CLI_MD.read_text(encoding="utf-8"))
    return [t for t in tokens if t.type == "fence"]


def scripted_example() -> tuple[str, str]:
    """The block that runs the scripted model, and the output block right after it."""
    blocks = fences()
    index = next(i for i, t in enumerate(blocks) if "scripted:calc.json" in t.content)
    return blocks[index].content, blocks[index + 1].content


def normalized(text: str) -> list[str]:
    """Lines without what differs between runs and terminals: times, the panel's width."""
    lines = []
    for line in text.strip().splitlines():
        line = re.sub(r"\d+(\.\d+)? (ms|s)\b", "T", line)
        line = re.sub(r"─+", "─", line)
        line = re.sub(r"\s+│$", " │", line.rstrip())
        lines.append(line)
    return lines


def test_the_scripted_run_prints_what_the_docs_show(tmp_path: Path) -> None:
    script, shown = scripted_example()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LOOPWRIGHT_"))}
    env.pop("DATABASE_URL", None)
    # `loopwright` as the reader has it: the virtual environment's command, this tree's code.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT / "src")
    env["LOOPWRIGHT_DATA_DIR"] = str(tmp_path / "data")
    env["COLUMNS"] = "200"  # the metrics line on one line, as the docs show it
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        ["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert normalized(done.stdout) == normalized(shown)


def command_lines() -> list[list[str]]:
    """Each ``loopwright …`` line of the ```bash blocks, as words, without its comment."""
    lines = []
    for block in fences():
        if block.info.strip() not in SHELL:
            continue
        for line in block.content.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("loopwright "):
                lines.append(shlex.split(line.split("|", 1)[0]))
    return lines


@pytest.mark.parametrize("words", command_lines(), ids=lambda words: " ".join(words[:3]))
def test_each_command_line_names_a_real_command_and_real_options(words: list[str]) -> None:
    command = []
    for word in words[1:]:
        if not re.fullmatch(r"[a-z][a-z-]*", word):
            break
        command.append(word)
    shown = CliRunner().invoke(
        app, [*command, "--help"], env={"COLUMNS": "300", "NO_COLOR": "1"}, terminal_width=300
    )
    assert shown.exit_code == 0, f"`loopwright {' '.join(command)}` is not a command:\n{shown.output}"
    options = {option for word in words for option in re.findall(r"(?<![\w-])--[a-z][a-z-]*", word)}
    for option in options:
        assert option in shown.output, f"`loopwright {' '.join(command)}` has no option {option}"


def test_the_tool_option_lists_every_built_in_tool() -> None:
    row = next(
        line for line in CLI_MD.read_text(encoding="utf-8").splitlines() if line.startswith("| `--tool")
    )
    listed, default = row.split("Default:", 1)
    assert set(re.findall(r"`([a-z_]+)`", listed)) == {t.name for t in builtin_tools()}
    assert set(re.findall(r"`([a-z_]+)`", default)) == set(DEFAULT_TOOLS)
