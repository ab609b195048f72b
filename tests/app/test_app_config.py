"""App configuration: loopwright YAML and the import of a Dify agent-chat DSL export."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright.app.config import AppConfig, ConfigImportError, import_dify_dsl, load_app_yaml

DSL = (Path(__file__).parent / "fixtures" / "dify-agent-app.yml").read_text(encoding="utf-8")


def test_dify_export_maps_model_prompt_tools_form_and_settings() -> None:
    report = import_dify_dsl(DSL)
    c = report.config
    assert report.name == "Time Helper"
    assert c.model == "openai:gpt-4o-mini" and c.model_params == {"temperature": 0.2}
    assert c.strategy == "function-calling" and c.max_iterations == 5
    assert c.instruction == "You help {{name}} with times."
    assert [(t.name, t.form_values) for t in c.tools] == [("current_time", {"timezone": "Europe/Paris"})]
    assert [(f.variable, f.type, f.required) for f in c.user_input_form] == [
        ("name", "text-input", True),
        ("style", "select", False),
    ]
    assert c.user_input_form[0].max_length == 48 and c.user_input_form[1].options == ["short", "long"]
    assert c.file_upload.enabled and c.file_upload.number_limits == 2
    assert c.file_upload.transfer_methods == ["remote_url"]
    assert c.opening_statement == "Hi! Ask me the time." and c.suggested_questions == [
        "What time is it in Paris?"
    ]


def test_dify_export_reports_what_it_cannot_map() -> None:
    report = import_dify_dsl(DSL)
    warnings = "\n".join(report.warnings)
    assert [(t.tool, t.became) for t in report.tools] == [
        ("current_time", "built-in current_time"),
        ("google_search", "Dify plugin langgenius/google (provider google)"),  # kept, as a plugin
    ]
    assert "annotation reply is on; the export carries no annotations" in warnings
    assert "knowledge bases" in warnings
    assert "external_data_tool" in warnings


def test_other_providers_become_openai_compatible_with_a_warning() -> None:
    text = DSL.replace("langgenius/openai/openai", "langgenius/ollama/ollama").replace(
        "gpt-4o-mini", "qwen2.5"
    )
    report = import_dify_dsl(text)
    assert report.config.model == "openai-compatible:qwen2.5"
    assert any("OPENAI_BASE_URL" in w for w in report.warnings)


def test_not_an_agent_app_is_refused() -> None:
    with pytest.raises(ConfigImportError, match="Dify workflow app export: a graph of nodes"):
        import_dify_dsl(DSL.replace("mode: agent-chat", "mode: workflow"))


def test_loopwright_yaml() -> None:
    name, config = load_app_yaml(
        "name: Calc\nmodel: scripted:/tmp/x.json\nstrategy: react\ntools:\n  - name: calculator\n"
    )
    assert name == "Calc" and config.model == "scripted:/tmp/x.json" and config.tools[0].name == "calculator"
    assert config == AppConfig(model="scripted:/tmp/x.json", strategy="react", tools=[{"name": "calculator"}])  # type: ignore[list-item]


def test_load_app_yaml_also_takes_a_dify_export() -> None:
    name, config = load_app_yaml(DSL)
    assert name == "Time Helper" and config.model == "openai:gpt-4o-mini"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "must be a YAML mapping"),
        ("name: x\nmax_iterations: 500\n", "max_iterations"),
        ("name: x\nmodle: local\n", "modle"),
        ("model: local\n", "no name"),
        ("name: [unclosed\n", "not valid YAML"),
    ],
)
def test_bad_app_yaml_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(ConfigImportError, match=message):
        load_app_yaml(text)


def test_null_sections_of_a_dify_export_mean_their_defaults() -> None:
    text = DSL.replace("  opening_statement: Hi! Ask me the time.\n", "  opening_statement:\n").replace(
        "  model:\n    completion_params:\n      stop: []\n      temperature: 0.2\n",
        "  model:\n    completion_params:\n",
    )
    report = import_dify_dsl(text)
    assert report.config.opening_statement == "" and report.config.model_params == {}
    assert report.config.model == "openai:gpt-4o-mini"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("app: {mode: agent-chat}\nmodel_config: [1]\n", "not a usable Dify export: model_config"),
        ("app: {mode: agent-chat}\nmodel_config: {agent_mode: {max_iteration: lots}}\n", "max_iteration"),
        ("app: {mode: agent-chat}\nmodel_config: {agent_mode: {max_iteration: -1}}\n", "max_iterations"),
    ],
)
def test_a_malformed_dify_export_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(ConfigImportError, match=message):
        import_dify_dsl(text)


def test_dify_export_speech_features_are_imported() -> None:
    text = DSL.replace(
        "  opening_statement: Hi! Ask me the time.\n",
        "  opening_statement: Hi! Ask me the time.\n"
        "  speech_to_text:\n    enabled: true\n"
        "  text_to_speech:\n    enabled: true\n    voice: nova\n    language: en-US\n    autoPlay: enabled\n",
    )
    report = import_dify_dsl(text)
    assert report.config.speech_to_text.enabled and report.config.speech_to_text.model == "openai:whisper-1"
    tts = report.config.text_to_speech
    assert (tts.enabled, tts.voice, tts.language, tts.autoPlay) == (True, "nova", "en-US", "enabled")
    assert any("speech to text uses openai:whisper-1" in w for w in report.warnings)
    assert not any("speech" in w and "not supported" in w for w in report.warnings)
    plain = import_dify_dsl(DSL).config
    assert not plain.speech_to_text.enabled and not plain.text_to_speech.enabled


def test_speech_and_file_extensions_go_to_dify_and_back() -> None:
    from loopwright.app.dify.dsl_export import export_dify_dsl

    config = AppConfig(
        model="openai:gpt-4o-mini",
        speech_to_text={"enabled": True},
        text_to_speech={"enabled": True, "voice": "nova", "language": "de-DE", "autoPlay": "enabled"},
        file_upload={"enabled": True, "allowed_types": ["custom"], "allowed_file_extensions": [".json"]},
    )
    exported = export_dify_dsl("Voice", config)
    back = import_dify_dsl(exported.text).config
    assert back.speech_to_text == config.speech_to_text and back.text_to_speech == config.text_to_speech
    assert back.file_upload.allowed_file_extensions == [".json"]
    assert not any("speech" in w for w in exported.warnings)
    own = AppConfig.model_validate(
        {**config.model_dump(), "speech_to_text": {"enabled": True, "model": "openai-compatible:whisper"}}
    )
    assert any(
        "speech to text uses 'openai-compatible:whisper'" in w for w in export_dify_dsl("V", own).warnings
    )
