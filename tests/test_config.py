"""Configuration: environment, TOML file, model specs, and scripted models from JSON files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent
from loopwright import config as config_module
from loopwright.config import (
    OPENAI_API_BASE,
    ConfigError,
    Settings,
    build_model,
    load_scripted_model,
    load_settings,
    parse_model_spec,
)
from loopwright.model.base import ModelError
from loopwright.model.entities import content_text
from loopwright.model.local import LocalModel
from loopwright.model.openai_compat import OpenAICompatModel
from loopwright.model.scripted import ScriptedModel
from loopwright.tools.builtin import builtin_tools

SECRET = "sk-test-DO-NOT-PRINT-1234"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ./loopwright.toml from the working tree


def write_script(path: Path, replies: list[Any], **options: Any) -> Path:
    path.write_text(json.dumps({"replies": replies, **options}), encoding="utf-8")
    return path


# --- defaults ----------------------------------------------------------------------------------------


def test_no_key_means_the_local_model() -> None:
    s = load_settings({})
    assert s.model == "local"
    assert s.max_iterations == 10 and s.strategy == "auto"
    assert s.openai_api_key is None and s.openai_base_url is None and s.config_path is None


def test_a_key_means_openai() -> None:
    s = load_settings({"OPENAI_API_KEY": SECRET})
    assert s.model == "openai:gpt-4o-mini"
    assert s.openai_api_key is not None and s.openai_api_key.get_secret_value() == SECRET
    assert "OPENAI_API_KEY" in s.model_origin


def test_a_key_and_loopwright_openai_model() -> None:
    s = load_settings({"OPENAI_API_KEY": SECRET, "LOOPWRIGHT_OPENAI_MODEL": "gpt-4.1"})
    assert s.model == "openai:gpt-4.1"


def test_a_key_and_a_base_url_mean_openai_compatible() -> None:
    env = {
        "OPENAI_API_KEY": SECRET,
        "OPENAI_BASE_URL": "http://localhost:8000/v1",
        "LOOPWRIGHT_OPENAI_MODEL": "qwen",
    }
    s = load_settings(env)
    assert s.model == "openai-compatible:qwen"
    assert s.openai_base_url == "http://localhost:8000/v1"


def test_openai_compatible_default_requires_a_model_name() -> None:
    s = load_settings({"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": "http://localhost:8000/v1"})
    assert s.model == "openai-compatible:"
    with pytest.raises(ConfigError, match="LOOPWRIGHT_OPENAI_MODEL"):
        build_model(s.model, s)


def test_a_base_url_alone_keeps_the_local_model() -> None:
    assert load_settings({"OPENAI_BASE_URL": "http://localhost:8000/v1"}).model == "local"


def test_loopwright_model_wins_over_the_defaults() -> None:
    s = load_settings({"OPENAI_API_KEY": SECRET, "LOOPWRIGHT_MODEL": " local "})
    assert s.model == "local"
    assert s.model_origin == "environment LOOPWRIGHT_MODEL"


def test_empty_variables_count_as_unset() -> None:
    s = load_settings({"OPENAI_API_KEY": "", "LOOPWRIGHT_MODEL": "", "LOOPWRIGHT_MAX_ITERATIONS": ""})
    assert s.model == "local" and s.openai_api_key is None and s.max_iterations == 10


def test_iterations_and_strategy_from_the_environment() -> None:
    s = load_settings({"LOOPWRIGHT_MAX_ITERATIONS": "3", "LOOPWRIGHT_STRATEGY": "react"})
    assert (s.max_iterations, s.strategy) == (3, "react")


@pytest.mark.parametrize(
    ("env", "match"),
    [
        ({"LOOPWRIGHT_MAX_ITERATIONS": "many"}, "LOOPWRIGHT_MAX_ITERATIONS.*whole number"),
        ({"LOOPWRIGHT_MAX_ITERATIONS": "-1"}, "0 or more"),
        ({"LOOPWRIGHT_STRATEGY": "planning"}, "unknown strategy 'planning'.*react, plan"),
    ],
)
def test_bad_environment_values(env: dict[str, str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load_settings(env)


# --- the TOML file -----------------------------------------------------------------------------------


def test_the_environment_overrides_the_toml_file(tmp_path: Path) -> None:
    path = tmp_path / "conf.toml"
    path.write_text('model = "openai:gpt-4o"\nmax_iterations = 4\nstrategy = "react"\n', encoding="utf-8")
    s = load_settings({"LOOPWRIGHT_MODEL": "local", "LOOPWRIGHT_MAX_ITERATIONS": "7"}, path=path)
    assert (s.model, s.max_iterations, s.strategy) == ("local", 7, "react")
    assert s.config_path == path
    assert s.model_origin == "environment LOOPWRIGHT_MODEL"


def test_the_toml_file_sets_what_the_environment_leaves_unset(tmp_path: Path) -> None:
    path = tmp_path / "conf.toml"
    path.write_text('model = "openai:gpt-4o"\nmax_iterations = 4\n', encoding="utf-8")
    s = load_settings({"LOOPWRIGHT_MODEL": "", "LOOPWRIGHT_STRATEGY": "react"}, path=path)
    assert (s.model, s.max_iterations, s.strategy) == ("openai:gpt-4o", 4, "react")
    assert s.model_origin == f"config file {path}"


def test_toml_key_and_base_url_feed_the_default(tmp_path: Path) -> None:
    path = tmp_path / "conf.toml"
    path.write_text(
        f'openai_api_key = "{SECRET}"\nopenai_base_url = "http://127.0.0.1:9/v1"\nopenai_model = "m"\n',
        encoding="utf-8",
    )
    s = load_settings({}, path=path)
    assert s.model == "openai-compatible:m"
    assert s.openai_api_key is not None and s.openai_api_key.get_secret_value() == SECRET


def test_loopwright_config_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "elsewhere.toml"
    path.write_text("max_iterations = 2\n", encoding="utf-8")
    assert load_settings({"LOOPWRIGHT_CONFIG": str(path)}).max_iterations == 2


def test_loopwright_toml_in_the_working_directory_is_read(tmp_path: Path) -> None:
    (tmp_path / "loopwright.toml").write_text('strategy = "function-calling"\n', encoding="utf-8")
    s = load_settings({})
    assert s.strategy == "function-calling"
    assert s.config_path == tmp_path / "loopwright.toml"


def test_an_empty_toml_string_counts_as_unset(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('model = ""\nstrategy = ""\n', encoding="utf-8")
    s = load_settings({"LOOPWRIGHT_STRATEGY": "react"}, path=path)
    assert (s.model, s.strategy) == ("local", "react")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("modle = 'local'\n", "unknown key 'modle'.*model, openai_model"),
        ("max_iterations = '3'\n", "max_iterations must be an integer"),
        ("max_iterations = -2\n", "0 or more"),
        ("model = 3\n", "model must be a string"),
        ("strategy = 'fast'\n", "unknown strategy 'fast'"),
        ("model = [\n", "not valid TOML"),
    ],
)
def test_bad_toml(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=match):
        load_settings({}, path=path)


def test_a_bad_value_names_where_it_came_from(tmp_path: Path) -> None:
    path = tmp_path / "conf.toml"
    path.write_text("max_iterations = -2\nfiles_url_ttl = 0\n", encoding="utf-8")
    where = f"^config file {re.escape(str(path))}: "
    with pytest.raises(ConfigError, match=where + "max_iterations must be 0 or more"):
        load_settings({}, path=path)
    # the environment's good value wins over the file's bad one; the file's other bad value is reported
    with pytest.raises(ConfigError, match=where + "files_url_ttl must be"):
        load_settings({"LOOPWRIGHT_MAX_ITERATIONS": "3"}, path=path)
    with pytest.raises(ConfigError, match="^environment LOOPWRIGHT_FILES_URL_TTL: files_url_ttl"):
        load_settings({"LOOPWRIGHT_FILES_URL_TTL": "0"})


def test_a_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings({"LOOPWRIGHT_CONFIG": str(tmp_path / "nope.toml")})


# --- settings ------------------------------------------------------------------------------------------


def test_repr_masks_the_secrets() -> None:
    s = load_settings({"OPENAI_API_KEY": SECRET, "LOOPWRIGHT_SECRET_KEY": SECRET + "-signing"})
    assert SECRET not in repr(s) and SECRET not in str(s)
    assert SECRET not in s.model_dump_json()
    assert "openai_api_key=SecretStr('**********')" in repr(s)
    assert "secret_key=SecretStr('**********')" in repr(s)
    assert "openai_api_key=None" in repr(Settings())


def test_settings_alone_read_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("LOOPWRIGHT_MAX_ITERATIONS", "3")
    assert Settings() == Settings(openai_api_key=None, max_iterations=10)


def test_explicit_options_win() -> None:
    s = load_settings({"LOOPWRIGHT_MODEL": "local", "LOOPWRIGHT_MAX_ITERATIONS": "5"})
    o = s.with_overrides(model="openai:gpt-4o", strategy="react", max_iterations=1)
    assert (o.model, o.strategy, o.max_iterations, o.model_origin) == (
        "openai:gpt-4o",
        "react",
        1,
        "option --model",
    )
    assert s.with_overrides() is s
    with pytest.raises(ConfigError, match="--strategy"):
        s.with_overrides(strategy="nope")


# --- model specs -----------------------------------------------------------------------------------------


def test_local_spec_builds_the_embedded_model_without_loading_it() -> None:
    model = build_model("local", Settings())
    assert isinstance(model, LocalModel)
    assert model.path is None  # nothing is loaded (or even looked up) yet


def test_local_spec_with_a_path(tmp_path: Path) -> None:
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    model = build_model(f"local:{gguf}", Settings())
    assert isinstance(model, LocalModel)
    assert model.path == gguf


def test_the_local_model_keeps_its_prompt_cache_in_the_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPWRIGHT_DATA_DIR", str(tmp_path))
    model = build_model("local", load_settings({"LOOPWRIGHT_PROMPT_CACHE_MB": "64"}))
    assert isinstance(model, LocalModel) and model.prompt_cache is not None
    assert model.prompt_cache.directory == tmp_path / "prompt-cache"
    assert model.prompt_cache.max_bytes == 64 * 2**20
    off = build_model("local", load_settings({"LOOPWRIGHT_PROMPT_CACHE_MB": "0"}))
    assert isinstance(off, LocalModel) and off.prompt_cache is None
    with pytest.raises(ConfigError, match="LOOPWRIGHT_PROMPT_CACHE_MB"):
        load_settings({"LOOPWRIGHT_PROMPT_CACHE_MB": "-1"})


def test_local_spec_with_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"local model file not found: .*missing\.gguf"):
        build_model(f"local:{tmp_path / 'missing.gguf'}", Settings())


def test_openai_spec() -> None:
    model = build_model(
        "openai:gpt-4o", Settings(openai_api_key=SECRET, openai_base_url="http://127.0.0.1:9")
    )
    assert isinstance(model, OpenAICompatModel)
    assert model.model == "gpt-4o"
    # openai: is OpenAI's API even when OPENAI_BASE_URL points elsewhere
    assert model.base_url == OPENAI_API_BASE
    assert SECRET not in repr(model)


def test_openai_spec_needs_a_key() -> None:
    with pytest.raises(ConfigError, match="needs an API key: set OPENAI_API_KEY"):
        build_model("openai:gpt-4o", Settings())


def test_openai_compatible_spec() -> None:
    settings = Settings(openai_base_url="http://127.0.0.1:8000/v1")
    model = build_model("openai-compatible:qwen2.5", settings)
    assert isinstance(model, OpenAICompatModel)
    assert model.model == "qwen2.5"
    assert model.base_url == "http://127.0.0.1:8000/v1"


def test_openai_compatible_spec_needs_a_base_url() -> None:
    with pytest.raises(ConfigError, match="needs a server: set OPENAI_BASE_URL"):
        build_model("openai-compatible:qwen", Settings(openai_api_key=SECRET))


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        (
            "gpt-4o",
            "unknown model spec 'gpt-4o'; expected one of: local, local:/path/model.gguf, openai:<name>",
        ),
        ("ollama:llama3", "unknown model spec 'ollama:llama3'.*scripted:/path/script.json"),
        ("", "unknown model spec ''"),
        ("openai:", "needs a model name: openai:<name>"),
        ("openai-compatible:", "needs a model name: openai-compatible:<name>"),
        ("scripted:", "needs a path: scripted:/path/script.json"),
    ],
)
def test_bad_specs(spec: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as info:
        build_model(spec, Settings(openai_api_key=SECRET, openai_base_url="http://127.0.0.1:9"))
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


def test_parse_model_spec() -> None:
    assert parse_model_spec("local").kind == "local"
    spec = parse_model_spec(" OpenAI-Compatible: my-model ")
    assert (spec.kind, spec.arg, str(spec)) == ("openai-compatible", "my-model", "openai-compatible:my-model")


# --- scripted models -------------------------------------------------------------------------------------


def test_scripted_spec_reads_the_json_file(tmp_path: Path) -> None:
    path = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [["calculator", {"expression": "17 * 23"}]], "text": "Let me compute."},
            {"text": "391"},
            "plain string reply",
        ],
        features=["tool-call", "stream-tool-call"],
        mode="chat",
        chunk_size=2,
        delay=0,
    )
    model = build_model(f"scripted:{path}", Settings())
    assert isinstance(model, ScriptedModel)
    assert model.remaining == 3
    assert model.chunk_size == 2
    assert {str(f) for f in model.features} == {"tool-call", "stream-tool-call"}
    assert build_model(f"scripted:{path}", Settings()) is model  # one model per file and process


async def test_scripted_replies_are_consumed_across_runs(tmp_path: Path) -> None:
    path = write_script(
        tmp_path / "chat.json",
        [
            {"tool_calls": [["calculator", {"expression": "17 * 23"}]]},
            {"text": "It is 391."},
            {"text": "You asked about 17 * 23."},
        ],
        features=["tool-call"],
    )
    first = Agent(model=build_model(f"scripted:{path}", Settings()), tools=builtin_tools())
    result = await first.run("What is 17 * 23?")
    assert result.text == "It is 391."

    # a second agent (as a second CLI turn would build) gets the same model and the next reply
    second = Agent(model=build_model(f"scripted:{path}", Settings()), tools=builtin_tools())
    again = await second.run("What did I ask?", history=result.messages)
    assert again.text == "You asked about 17 * 23."

    model = load_scripted_model(path)
    assert isinstance(model, ScriptedModel) and model.remaining == 0
    last = [content_text(m.content) for m in model.requests[2].messages]
    assert any("What is 17 * 23?" in t for t in last) and any("It is 391." in t for t in last)


async def test_scripted_error_reply(tmp_path: Path) -> None:
    path = write_script(tmp_path / "e.json", [{"error": "the server fell over"}])
    agent = Agent(model=build_model(f"scripted:{path}", Settings()))
    with pytest.raises(ModelError, match="the server fell over"):
        await agent.run("hi")


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("{not json", "not a readable JSON script"),
        ("[]", "a JSON object with a 'replies' list"),
        ('{"replies": {}}', "'replies' must be a list"),
        ('{"replies": [], "speed": 1}', "unknown key 'speed'"),
        ('{"replies": [3]}', "reply #1 must be an object"),
        ('{"replies": [{"txt": "x"}]}', "reply #1: unknown key 'txt'"),
        ('{"replies": [{"text": 1}]}', "'text' must be a string"),
        ('{"replies": [{"tool_calls": [["calculator"]]}]}', r"each tool call is \[name, \{arguments\}\]"),
        ('{"replies": [], "features": ["telepathy"]}', "bad script option"),
        ('{"replies": [], "chunk_size": 0}', "bad script option: chunk_size"),
    ],
)
def test_bad_scripts(tmp_path: Path, content: str, match: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=match):
        build_model(f"scripted:{path}", Settings())


def test_a_missing_script(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="script file not found"):
        build_model(f"scripted:{tmp_path / 'none.json'}", Settings())


def test_service_api_settings_from_the_environment_and_the_toml_file(tmp_path: Path) -> None:
    env = {
        "LOOPWRIGHT_CORS_ALLOW_ORIGINS": "https://a.example, https://b.example/",
        "LOOPWRIGHT_DIFY_STRICT": "1",
    }
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    settings = load_settings(env=env, path=empty)
    assert settings.cors_allow_origins == ("https://a.example", "https://b.example")
    assert settings.dify_strict is True
    path = tmp_path / "loopwright.toml"
    path.write_text('cors_allow_origins = ["https://c.example"]\ndify_strict = true\n', encoding="utf-8")
    settings = load_settings(env={}, path=path)
    assert settings.cors_allow_origins == ("https://c.example",) and settings.dify_strict is True
    defaults = load_settings(env={}, path=empty)
    assert defaults.cors_allow_origins == ("*",) and defaults.dify_strict is False


async def test_a_script_files_model_keeps_only_its_first_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a script file may serve a server for days: what it remembers of the requests is bounded
    monkeypatch.setattr(config_module, "SCRIPT_FILE_RECORD", 3)
    path = tmp_path / "cycle.json"
    path.write_text(json.dumps({"replies": ["Hi."], "cycle": True}), encoding="utf-8")
    agent = Agent(model=build_model(f"scripted:{path}", Settings()))
    for n in range(5):
        assert (await agent.run(f"Question {n}")).text == "Hi."
    model = load_scripted_model(path)
    assert [content_text(r.messages[-1].content) for r in model.requests] == [
        "Question 0",
        "Question 1",
        "Question 2",
    ]
