"""The Dify import keeps every tool: each provider type and id form, presets, early exports, the report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from loopwright.app.config import AppConfig, import_dify_dsl
from loopwright.app.dify.dsl_import import translate_export
from loopwright.app.dify.tools import ImportOptions, map_tools, native_provider, plugin_of

FIXTURES = Path(__file__).parents[1] / "fixtures" / "dify-dsl"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def plugin_entries(config: AppConfig) -> dict[str, dict[str, Any]]:
    return {t["plugin"]: t for t in config.toolsets if t["type"] == "dify_plugin"}


# --- published exports ---------------------------------------------------------------------------------


def test_investment_copilot_keeps_its_three_yahoo_tools_as_one_plugin_toolset() -> None:
    report = import_dify_dsl(fixture("investment-analysis-copilot.yml"))
    assert report.name == "Investment Analysis Report Copilot"
    assert report.config.tools == []
    assert report.config.toolsets == [
        {
            "type": "dify_plugin",
            "plugin": "langgenius/yahoo",
            "provider": "yahoo",
            "tools": ["yahoo_finance_analytics", "yahoo_finance_news", "yahoo_finance_ticker"],
            "parameters": {
                "yahoo_finance_analytics": {"end_date": "", "start_date": "", "symbol": ""},
                "yahoo_finance_news": {"symbol": ""},
                "yahoo_finance_ticker": {"symbol": ""},
            },
        }
    ]
    assert [t.became for t in report.tools] == ["Dify plugin langgenius/yahoo (provider yahoo)"] * 3
    assert report.warnings == []  # nothing of it is left out
    assert report.config.model == "openai:gpt-4-1106-preview"
    assert "{{company}}" in report.config.instruction
    assert [f.variable for f in report.config.user_input_form] == ["company"]


def test_svg_logo_design_finds_dalle_in_the_openai_tool_plugin() -> None:
    report = import_dify_dsl(fixture("svg-logo-design.yml"))
    plugins = plugin_entries(report.config)
    assert plugins["langgenius/openai_tool"]["provider"] == "openai"
    assert plugins["langgenius/openai_tool"]["tools"] == ["dalle3"]
    assert plugins["langgenius/vectorizer"]["tools"] == ["vectorizer"]
    assert all(t.kept for t in report.tools)


# --- one tool of each kind -----------------------------------------------------------------------------


def test_a_dify_1_export_maps_each_provider_type() -> None:
    options = ImportOptions(
        mcp_servers={
            "notes": {"type": "mcp", "transport": "streamable-http", "url": "http://127.0.0.1:9/mcp"}
        },
        workflows={"0f1e2d3c-0000-4000-8000-00000000c0de": "app-weekly"},
        api_specs={"petstore": "/specs/petstore.yaml"},
    )
    report = import_dify_dsl(fixture("dify1-all-kinds.yml"), options)
    config = report.config
    assert config.strategy == "react" and config.max_iterations == 8
    by_tool = {t.tool: t for t in report.tools}
    assert "wikipedia_search" not in by_tool  # enabled: false is left out silently
    assert all(t.kept for t in report.tools)
    assert [(t.name, t.form_values) for t in config.tools] == [
        ("current_time", {"timezone": "Asia/Tokyo"}),
        ("timezone_conversion", {}),
        ("tts", {"model": "tts-1", "voice": "nova"}),  # Dify's provider#model and voice#… composite key
        ("simple_code", {}),
        ("webscraper", {"user_agent": "research-desk/1.0"}),
    ]
    toolsets = {t["type"]: t for t in config.toolsets if t["type"] != "dify_plugin"}
    assert toolsets["mcp"] == {
        "type": "mcp",
        "transport": "streamable-http",
        "url": "http://127.0.0.1:9/mcp",
        "tools": ["search_notes"],
    }
    assert toolsets["app"] == {
        "type": "app",
        "app_id": "app-weekly",
        "name": "weekly_report",
        "description": "Weekly report",
    }
    assert toolsets["openapi"] == {"type": "openapi", "spec": "/specs/petstore.yaml", "include": ["listPets"]}
    assert by_tool["search_notes"].became == "MCP server 'notes'"
    assert by_tool["weekly_report"].became == "app app-weekly"


def test_presets_are_kept_as_exported_null_model_selector_and_all() -> None:
    report = import_dify_dsl(fixture("dify1-all-kinds.yml"))
    plugins = plugin_entries(report.config)
    assert plugins["langgenius/searxng"]["parameters"]["searxng_search"] == {
        "query": "",
        "search_type": "general",
        "time_range": None,
    }
    summarize = plugins["someone/summarizer"]["parameters"]["summarize"]
    assert summarize["text"] is None
    assert summarize["model"]["type"] == "model-selector" and summarize["model"]["model"] == "gpt-4o-mini"
    assert plugins["langgenius/jina_tool"] == {
        "type": "dify_plugin",
        "plugin": "langgenius/jina_tool",  # Dify's ToolProviderID: jina lives in jina_tool
        "provider": "jina",
        "tools": ["jina_reader"],
        "parameters": {},
    }


def test_tools_without_a_target_are_reported_with_what_to_give() -> None:
    report = import_dify_dsl(fixture("dify1-all-kinds.yml"))
    left = {t.tool: t.became for t in report.tools if not t.kept}
    assert left == {
        "search_notes": "left out: no MCP server is configured for 'notes' (give --mcp NAME=URL)",
        "weekly_report": "left out: workflow tool 'weekly_report' is mapped to no app "
        "(give --map-workflow 0f1e2d3c-0000-4000-8000-00000000c0de=APP)",
        "listPets": "left out: no OpenAPI spec is configured for 'petstore' (give --api-spec NAME=SPEC)",
    }
    assert sum(w.startswith("tool ") and "was left out" in w for w in report.warnings) == 3
    assert [r.type for r in report.config.moderation] == ["keywords"]  # today's moderation shape, kept


def test_workflow_tools_map_by_tool_name_too() -> None:
    report = import_dify_dsl(
        fixture("dify1-all-kinds.yml"), ImportOptions(workflows={"weekly_report": "app-7"})
    )
    assert {"type": "app", "app_id": "app-7", "name": "weekly_report", "description": "Weekly report"} in (
        report.config.toolsets
    )


def test_a_stdio_mcp_server_from_the_options() -> None:
    server = {"type": "mcp", "transport": "stdio", "command": "notes-mcp", "args": ["--ro"]}
    report = import_dify_dsl(
        fixture("dify1-all-kinds.yml"), ImportOptions(mcp_servers={"notes-server": server})
    )
    assert {**server, "tools": ["search_notes"]} in report.config.toolsets


# --- early exports -------------------------------------------------------------------------------------


def test_an_early_agent_assistant_is_an_agent_app() -> None:
    report = import_dify_dsl(fixture("early-assistant.yml"))
    config = report.config
    assert report.name == "Early Assistant"
    assert config.strategy == "function-calling"  # router
    assert [t.name for t in config.tools] == ["current_time", "webscraper"]  # current_datetime, web_reader
    assert plugin_entries(config)["langgenius/google"]["tools"] == ["google_search"]
    assert "wikipedia_search" not in {t.tool for t in report.tools}  # enabled: false
    assert any("knowledge bases" in w for w in report.warnings)
    assert not any("moderation" in w for w in report.warnings)  # the old shape, switched off


@pytest.mark.parametrize(
    ("strategy", "expected"), [("react_router", "react"), ("router", "function-calling")]
)
def test_router_strategies(strategy: str, expected: str) -> None:
    text = fixture("early-assistant.yml").replace("strategy: router", f"strategy: {strategy}")
    assert import_dify_dsl(text).config.strategy == expected


def test_a_chat_app_without_agent_mode_is_a_chat_app_and_its_tools_are_reported() -> None:
    data = yaml.safe_load(fixture("early-assistant.yml"))
    data["model_config"]["agent_mode"]["enabled"] = False
    translation = translate_export(data)
    assert translation.config["mode"] == "chat"
    assert translation.config["tools"] == [] and translation.config["toolsets"] == []
    assert any("agent mode is off" in w and "tool(s) were left out" in w for w in translation.warnings)


@pytest.mark.parametrize(
    "moderation",
    [True, {"enabled": True, "type": "", "configs": []}, {"enabled": True, "type": "api", "config": {}}],
)
def test_old_and_new_moderation_shapes_are_read(moderation: Any) -> None:
    data = yaml.safe_load(fixture("early-assistant.yml"))
    data["model_config"]["sensitive_word_avoidance"] = moderation
    warnings = translate_export(data).warnings
    assert sum("moderation" in w and "left out" in w for w in warnings) == 1  # read, and said why not kept


# --- the id tables -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider_id", "expected"),
    [
        ("langgenius/searxng/searxng", ("langgenius/searxng", "searxng")),
        ("searxng", ("langgenius/searxng", "searxng")),
        ("google", ("langgenius/google", "google")),
        ("jina", ("langgenius/jina_tool", "jina")),
        ("langgenius/siliconflow/siliconflow", ("langgenius/siliconflow_tool", "siliconflow")),
        ("fishaudio", ("langgenius/fish_audio_tool", "fishaudio")),
        ("whatsapp", ("langgenius/whatsapp-bot", "whatsapp")),
        ("dalle", ("langgenius/openai_tool", "openai")),
        ("aws", ("langgenius/aws_tools", "aws_tools")),
        ("someone/my_plugin/provider_a", ("someone/my_plugin", "provider_a")),
        ("searx-ng_2", ("langgenius/searx-ng_2", "searx-ng_2")),  # any id of Dify's pattern
        ("Not An Id", None),
        ("a/b", None),
    ],
)
def test_plugin_ids(provider_id: str, expected: tuple[str, str] | None) -> None:
    assert plugin_of(provider_id) == expected


def test_core_providers_are_native_whatever_their_id_form() -> None:
    assert native_provider("time") == native_provider("langgenius/time/time") == "time"
    assert native_provider("langgenius/searxng/searxng") is None
    assert native_provider("someone/time/time") is None  # someone else's plugin is a plugin


def test_an_unknown_tool_of_a_core_provider_and_an_unknown_type_are_reported() -> None:
    mapping = map_tools(
        [
            {"provider_type": "builtin", "provider_id": "time", "tool_name": "moon_phase"},
            {"provider_type": "dataset", "provider_id": "x", "tool_name": "y"},
            {"provider_type": "builtin", "provider_id": "Bad Id!", "tool_name": "z"},
        ],
        ImportOptions(),
    )
    assert [r.kept for r in mapping.report] == [False, False, False]
    assert "no tool 'moon_phase'" in mapping.report[0].became
    assert mapping.tools == [] and mapping.toolsets == []


def test_two_tools_of_one_plugin_share_one_entry_and_a_repeated_tool_is_listed_once() -> None:
    entries = [
        {
            "provider_id": "langgenius/duckduckgo/duckduckgo",
            "tool_name": "ddgo_search",
            "tool_parameters": {},
        },
        {"provider_id": "duckduckgo", "tool_name": "ddgo_img", "tool_parameters": {"size": None}},
        {"provider_id": "duckduckgo", "tool_name": "ddgo_search"},
    ]
    mapping = map_tools(entries, ImportOptions())
    assert mapping.toolsets == [
        {
            "type": "dify_plugin",
            "plugin": "langgenius/duckduckgo",
            "provider": "duckduckgo",
            "tools": ["ddgo_search", "ddgo_img"],
            "parameters": {"ddgo_img": {"size": None}},
        }
    ]


def test_the_imported_config_round_trips_through_validation() -> None:
    report = import_dify_dsl(fixture("dify1-all-kinds.yml"))
    again = AppConfig.model_validate(report.config.model_dump())
    assert again == report.config


# --- tool ranking of an imported app -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "model", "expected"),
    [
        ({}, "openai:gpt-4o", (16, 6)),
        ({}, "local", (3, 3)),
        ({"threshold": 40}, "openai:gpt-4o", (40, 6)),
        ({"threshold": 2}, "openai:gpt-4o", (2, 2)),
        ({"top_k": 10}, "local:/models/x.gguf", (3, 10)),
        ({"enabled": False}, "openai:gpt-4o", None),
    ],
)
def test_the_apps_tool_ranking(
    settings: dict[str, Any], model: str, expected: tuple[int, int] | None
) -> None:
    from loopwright.app.run.runtime import build_agent
    from loopwright.testing import ScriptedModel

    config = AppConfig(model=model, tool_ranking=settings)  # type: ignore[arg-type]
    agent = build_agent(config, ScriptedModel([]), [])
    ranker = agent.tool_selector
    assert (None if ranker is None else (ranker.threshold, ranker.top_k)) == expected  # type: ignore[attr-defined]


def test_an_imported_app_goes_back_to_dify_and_imports_the_same() -> None:
    from loopwright.app.dify.dsl_export import export_dify_dsl

    first = import_dify_dsl(fixture("dify1-all-kinds.yml")).config
    exported = export_dify_dsl("Research Desk", first)
    second = import_dify_dsl(exported.text).config
    assert second.tools == first.tools
    assert plugin_entries(second) == plugin_entries(first)


# --- chat and completion apps ---------------------------------------------------------------------------

EXAMPLES = Path(__file__).parent.parent.parent / "examples" / "dify"


def test_a_published_chat_app_imports_as_a_chat_app() -> None:
    report = import_dify_dsl((EXAMPLES / "website-generator.yml").read_text(encoding="utf-8"))
    config = report.config
    assert report.name == "Website Generator" and config.mode == "chat"
    assert config.tools == [] and config.toolsets == []
    assert config.instruction.startswith("Your task is to create a one-page website")
    assert config.model == "openai:gpt-3.5-turbo-0125" and config.model_params["temperature"] == 0
    assert report.warnings == []


def test_a_published_completion_app_imports_with_its_form() -> None:
    report = import_dify_dsl((EXAMPLES / "sql-creator.yml").read_text(encoding="utf-8"))
    config = report.config
    assert report.name == "SQL Creator" and config.mode == "completion"
    assert [(f.variable, f.type, f.required) for f in config.user_input_form] == [
        ("A", "select", True),
        ("default_input", "paragraph", True),
    ]
    assert config.user_input_form[0].options[:2] == ["MySQL", "SQL Server"]
    assert "{{A}}" in config.instruction and "{{default_input}}" in config.instruction


def test_a_completion_export_with_features_loopwright_lacks_says_so() -> None:
    data = yaml.safe_load((EXAMPLES / "sql-creator.yml").read_text(encoding="utf-8"))
    data["model_config"]["more_like_this"] = {"enabled": True}
    data["model_config"]["agent_mode"]["tools"] = [{"enabled": True, "provider_id": "time", "tool_name": "x"}]
    translation = translate_export(data)
    assert translation.config["mode"] == "completion"
    assert any("more like this" in w for w in translation.warnings)
    assert any("1 tool(s) were left out" in w for w in translation.warnings)


def test_an_exported_chat_app_imports_back_as_one() -> None:
    from loopwright.app.dify.dsl_export import export_dify_dsl

    config = AppConfig(mode="chat", instruction="Be brief.")
    exported = export_dify_dsl("Brief", config)
    again = import_dify_dsl(exported.text)
    assert again.config.mode == "chat" and again.config.instruction == "Be brief."
