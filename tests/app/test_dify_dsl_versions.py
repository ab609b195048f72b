"""Dify exports of every DSL version up to the newest import, each with its warnings; the ``agent`` app
mode (DSL 0.7.0) imports from its agent package, skills found by name."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from loopwright.app.config import ConfigImportError, import_dify_dsl, load_app_yaml
from loopwright.app.dify.dsl_version import NEWEST_DSL_VERSION
from loopwright.app.dify.tools import ImportOptions

FIXTURES = Path(__file__).parents[1] / "fixtures" / "dify-dsl"
AGENT_EXPORT = FIXTURES / "dify-0.7.0-agent.yml"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("version", "warning"),
    [
        ("0.4.0", "knowledge bases (dataset_configs) are not imported"),
        ("0.5.0", "more like this is enabled in the export but not supported"),
        ("0.6.0", "tool 'forecast' (api '0d5b5a4c-1f0a-4b8e-9d51-3e1c2b7a9f10') was left out"),
        ("0.7.0", None),
    ],
)
def test_an_agent_chat_export_of_each_newer_version_imports_with_its_warnings(
    version: str, warning: str | None
) -> None:
    text = fixture(f"dify-{version}-agent-chat.yml")
    assert yaml.safe_load(text)["version"] == version
    report = import_dify_dsl(text)
    assert report.config.mode == "agent-chat"
    assert report.config.tools[0].name == "current_time"
    assert [f.variable for f in report.config.user_input_form] == ["city"]
    if warning is None:
        assert report.warnings == []
    else:
        assert [w for w in report.warnings if w.startswith(warning)], report.warnings


def _with_version(text: str, version: object) -> str:
    data = yaml.safe_load(text)
    data["version"] = version
    return yaml.safe_dump(data, allow_unicode=True)


def test_a_newer_dsl_than_the_newest_known_is_read_with_a_warning() -> None:
    report = import_dify_dsl(_with_version(fixture("dify-0.7.0-agent-chat.yml"), "0.8.1"))
    assert report.warnings == [
        f"the export is DSL 0.8.1, newer than the newest known here ({NEWEST_DSL_VERSION}): it was "
        f"read as {NEWEST_DSL_VERSION}, and parts added since may be missing"
    ]
    major = import_dify_dsl(_with_version(fixture("dify-0.7.0-agent-chat.yml"), "1.0.0"))
    assert "a newer major version" in major.warnings[0]


@pytest.mark.parametrize("version", ["latest", "0.7.x", [0, 7]])
def test_an_unreadable_version_is_a_clear_error(version: object) -> None:
    with pytest.raises(ConfigImportError, match="is not a version"):
        import_dify_dsl(_with_version(fixture("dify-0.7.0-agent-chat.yml"), version))


def test_an_export_of_another_kind_is_refused_by_its_kind() -> None:
    data = yaml.safe_load(fixture("dify-0.7.0-agent-chat.yml"))
    data["kind"] = "rag_pipeline"
    with pytest.raises(ConfigImportError, match="'rag_pipeline' export, not an app export"):
        import_dify_dsl(yaml.safe_dump(data))


def test_the_agent_export_imports_as_an_agent_app() -> None:
    report = import_dify_dsl(AGENT_EXPORT.read_text(encoding="utf-8"))
    config = report.config
    assert report.name == "Release Scribe"
    assert config.mode == "agent"
    assert config.model == "openai:gpt-4o-mini"
    assert config.model_params == {"temperature": 0.3, "max_tokens": 1024}
    # Dify's mentions become the names the agent sees here
    assert "Check the date with current_time and follow changelog-style." in config.instruction
    assert [(f.variable, f.type, f.required) for f in config.user_input_form] == [
        ("product", "text-input", True),
        ("entries", "number", False),
    ]
    assert [t.name for t in config.tools] == ["current_time"]
    assert config.toolsets[0]["plugin"] == "langgenius/json_process"
    assert config.toolsets[0]["tools"] == ["parse"]
    assert config.opening_statement == "Paste release notes, or ask what changed."
    assert config.suggested_questions_after_answer is True
    assert config.file_upload.enabled and config.file_upload.number_limits == 2
    assert config.moderation[0].keywords == ["password"]
    assert config.skills == []
    assert report.warnings == [
        "skill 'changelog-style': Dify exports a skill's name but not its files; put its folder (with "
        "SKILL.md) or zip in a folder given with --skills-dir, or add its path to the app's skills",
        "CLI tool 'gh-release' runs commands in Dify's sandbox, which loopwright does not have; "
        "it was left out",
        "file 'style-guide.md': Dify exports a file's name but not its content; it was left out",
        "sandbox environment variable 'GITHUB_TOKEN' is not imported",
    ]


def test_an_agent_exports_skill_is_found_by_name_in_the_skills_folders(tmp_path: Path) -> None:
    skill = tmp_path / "changelog-style"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: changelog-style\ndescription: Our style\n---\nBe brief.\n")
    options = ImportOptions(skill_dirs=[str(tmp_path / "elsewhere"), str(tmp_path)])
    report = import_dify_dsl(AGENT_EXPORT.read_text(encoding="utf-8"), options)
    assert report.config.skills == [str(skill.resolve())]
    assert not [w for w in report.warnings if w.startswith("skill ")]


def test_load_app_yaml_knows_an_agent_export_by_its_package() -> None:
    name, config = load_app_yaml(AGENT_EXPORT.read_text(encoding="utf-8"))
    assert (name, config.mode) == ("Release Scribe", "agent")


def _agent_export() -> dict[str, object]:
    data = yaml.safe_load(AGENT_EXPORT.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_an_agent_export_without_its_package_is_a_clear_error() -> None:
    data = _agent_export()
    del data["agent_packages"]
    with pytest.raises(ConfigImportError, match="has no agent_packages"):
        import_dify_dsl(yaml.safe_dump(data, allow_unicode=True))
    data = _agent_export()
    data["agent"] = {"package_ref": "agent_9"}
    with pytest.raises(ConfigImportError, match="'agent_9' names no entry"):
        import_dify_dsl(yaml.safe_dump(data, allow_unicode=True))


def test_the_agent_packages_other_parts_are_each_reported() -> None:
    data = _agent_export()
    package = data["agent_packages"]["agent_1"]  # type: ignore[index]
    soul = package["soul"]
    soul["knowledge"] = {"sets": [{"id": "s1", "name": "Handbook", "datasets": [{"id": "d1"}]}]}
    soul["human"] = {"contacts": [{"name": "Ops"}], "tools": []}
    soul["sandbox"] = {"provider": "e2b"}
    soul["tools"]["dify_tools"].append({"plugin_id": "langgenius/mcp", "provider": "docs", "tool_name": None})
    soul["app_variables"].append({"name": "when", "type": "datetime"})
    package["schema_version"] = 2
    report = import_dify_dsl(yaml.safe_dump(data, allow_unicode=True))
    said = "\n".join(report.warnings)
    for part in (
        "the agent package is schema 2, newer than the newest known here (1)",
        "knowledge set 'Handbook' is not imported",
        "human contacts (ask a person) are not imported",
        "the sandbox (e2b) is not imported",
        "tool provider 'langgenius/mcp/docs' is offered whole",
        "app variable {'name': 'when', 'type': 'datetime'} is not supported",
    ):
        assert part in said
