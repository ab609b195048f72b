"""Skills: SKILL.md folders and zips, disclosed only when loaded; zips checked for paths that leave."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from loopwright import Agent
from loopwright.model.entities import ToolMessage
from loopwright.testing import Reply, ScriptedModel
from loopwright.tools.skills import LOAD_SKILL, READ_RESOURCE, RUN_SCRIPT, SkillError, load_skill, skill_tools

FC = ["tool-call", "multi-tool-call", "stream-tool-call"]
SECRET_STEP = "Always convert miles with the factor 1.609344 and round to two places."
SKILL_MD = f"""---
name: units
description: Convert between metric and imperial units.
---
# Units

{SECRET_STEP}
"""


def make_skill(root: Path) -> Path:
    folder = root / "units"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL_MD, encoding="utf-8")
    (folder / "table.csv").write_text("mile,km\n1,1.609344\n", encoding="utf-8")
    (folder / "scripts" / "convert.py").write_text("print(round(3 * 1.609344, 2))\n", encoding="utf-8")
    return folder


def test_a_folder_is_read_with_its_resources_and_scripts(tmp_path: Path) -> None:
    skill = load_skill(make_skill(tmp_path))
    assert (skill.name, skill.description) == ("units", "Convert between metric and imperial units.")
    assert skill.instructions.endswith(SECRET_STEP)
    assert skill.resources == ["scripts/convert.py", "table.csv"] and skill.scripts == ["scripts/convert.py"]


def test_a_zipped_folder_is_read_without_extracting(tmp_path: Path) -> None:
    folder = make_skill(tmp_path)
    archive = tmp_path / "units.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in folder.rglob("*"):
            if path.is_file():
                z.write(path, f"units/{path.relative_to(folder).as_posix()}")
    skill = load_skill(archive)
    assert skill.name == "units" and "table.csv" in skill.resources


@pytest.mark.parametrize("name", ["../evil.py", "/etc/passwd", "a/../../b", "C:/x", "a\\..\\b"])
def test_a_zip_with_a_path_outside_the_skill_is_refused(tmp_path: Path, name: str) -> None:
    archive = tmp_path / "bad.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("SKILL.md", SKILL_MD)
        z.writestr(name, "x")
    with pytest.raises(SkillError, match="outside the skill"):
        load_skill(archive)


def test_a_zip_with_a_link_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "link.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("SKILL.md", SKILL_MD)
        info = zipfile.ZipInfo("passwd")
        info.external_attr = 0o120777 << 16  # a symbolic link
        z.writestr(info, "/etc/passwd")
    with pytest.raises(SkillError, match="link"):
        load_skill(archive)


def test_a_skill_without_front_matter_is_refused(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_text("# no front matter\n", encoding="utf-8")
    with pytest.raises(SkillError, match="front matter"):
        load_skill(tmp_path)


async def test_the_instructions_are_absent_from_the_prompt_until_loaded(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply.text("Hello."),  # first run: no skill needed
            Reply.tool_calls((LOAD_SKILL, {"name": "units"})),
            Reply.tool_calls((READ_RESOURCE, {"name": "units", "path": "table.csv"})),
            Reply.text("4.83 km"),
        ],
        features=FC,
    )
    agent = Agent(model=model, skills=[make_skill(tmp_path)])
    await agent.run("hi")
    result = await agent.run("3 miles in km?")
    assert result.text == "4.83 km"
    prompts = [str(r.messages) for r in model.requests]
    assert "units: Convert between metric and imperial units." in prompts[0]  # named and described
    assert SECRET_STEP not in prompts[0] and SECRET_STEP not in prompts[1]  # not before it was loaded
    assert SECRET_STEP in prompts[2]  # after load_skill
    tools = [t.name for t in model.requests[1].tools]
    assert tools == [LOAD_SKILL, READ_RESOURCE]  # no sandbox: scripts are not offered to run
    read = [m for m in model.requests[3].messages if isinstance(m, ToolMessage)][-1]
    assert read.content.startswith("mile,km")


async def test_unknown_skills_and_files_are_clear_errors(tmp_path: Path) -> None:
    skill = load_skill(make_skill(tmp_path))
    load, read = skill_tools([skill])
    with pytest.raises(Exception, match="no skill 'nope'"):
        [m async for m in load.invoke({"name": "nope"}, None)]  # type: ignore[arg-type]
    with pytest.raises(Exception, match="no file '../SKILL.md'"):
        [m async for m in read.invoke({"name": "units", "path": "../SKILL.md"}, None)]  # type: ignore[arg-type]


def test_scripts_run_only_with_a_sandbox(tmp_path: Path) -> None:
    from loopwright.tools.sandbox import Sandbox

    skill = load_skill(make_skill(tmp_path))
    assert RUN_SCRIPT not in [t.name for t in skill_tools([skill])]
    assert RUN_SCRIPT in [t.name for t in skill_tools([skill], Sandbox())]
