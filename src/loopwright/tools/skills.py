"""Skills: a folder (or a zip) with a ``SKILL.md`` — the Agent Skills format — disclosed on demand.

``SKILL.md`` opens with YAML front matter (``name``, ``description``) and goes on with the skill's
instructions; the other files of the folder are its resources, those under ``scripts/`` its scripts.
An agent's prompt carries only each skill's name and description (:func:`skills_instruction`); the
model reads a skill's instructions with the ``load_skill`` tool when a task needs it, its resources with
``read_skill_resource``, and runs its scripts with ``run_skill_script`` — only through the code sandbox
(:mod:`loopwright.tools.sandbox`), and only when one is given; otherwise scripts can be read, not run.

A skill is read whole into memory when loaded (its files are small: limits below). A zip is never
extracted: its members are read by name, and one whose name could reach outside the skill (absolute,
``..``, a drive, a backslash) or that is a link makes the whole zip refused.
"""

from __future__ import annotations

import os
import stat
import zipfile
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from loopwright.errors import UserInputError
from loopwright.tools.base import (
    TextMessage,
    Tool,
    ToolContext,
    ToolInvokeError,
    ToolOutput,
    ToolParameter,
)
from loopwright.tools.sandbox import Sandbox

SKILL_FILE = "SKILL.md"
MAX_FILES = 200
MAX_FILE_BYTES = 1024 * 1024
MAX_TOTAL_BYTES = 8 * 1024 * 1024
SCRIPT_LANGUAGES = {".py": "python3", ".js": "javascript"}


class SkillError(UserInputError):
    """A skill that cannot be loaded (the message says which and why)."""


@dataclass(frozen=True)
class Skill:
    """One skill: its name, description and instructions, and its other files by relative path."""

    name: str
    description: str
    instructions: str
    files: Mapping[str, bytes] = field(default_factory=dict, repr=False)
    source: str = ""

    @property
    def resources(self) -> list[str]:
        return sorted(self.files)

    @property
    def scripts(self) -> list[str]:
        return [p for p in self.resources if p.startswith("scripts/") and Path(p).suffix in SCRIPT_LANGUAGES]


def load_skill(path: str | os.PathLike[str]) -> Skill:
    """The skill in a folder or a zip (blocking file reads: call it off the event loop in async code)."""
    where = Path(path)
    if where.is_dir():
        return _skill(_folder_files(where), str(where))
    if where.is_file() and zipfile.is_zipfile(where):
        return _skill(_zip_files(where), str(where))
    raise SkillError(f"no skill at {str(where)!r}: expected a folder or a zip with a {SKILL_FILE}")


def load_skills(paths: Sequence[str | os.PathLike[str] | Skill]) -> list[Skill]:
    """Each skill (paths loaded, skills kept); two skills of one name are refused."""
    skills = [p if isinstance(p, Skill) else load_skill(p) for p in paths]
    names = [s.name for s in skills]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SkillError(f"two skills are named {twice[0]!r}")
    return skills


def _folder_files(root: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    base = root.resolve()
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            real = path.resolve()
            if not real.is_relative_to(base):
                raise SkillError(f"{path} links outside the skill's folder")
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in PurePosixPath(rel).parts):
            continue  # hidden files (.git, editors' files) are not the skill's
        _count(files, rel, path.stat().st_size)
        files[rel] = path.read_bytes()
    return files


def _zip_files(path: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    with zipfile.ZipFile(path) as archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        for member in members:
            _check_member(member)
        names = [m.filename for m in members]
        prefix = _common_folder(names)
        for member in members:
            rel = member.filename[len(prefix) :]
            if any(part.startswith(".") or part == "__MACOSX" for part in PurePosixPath(rel).parts):
                continue
            _count(files, rel, member.file_size)
            data = archive.read(member)
            if len(data) > MAX_FILE_BYTES:  # the header's size may lie
                raise SkillError(f"{rel} is larger than {MAX_FILE_BYTES} bytes")
            files[rel] = data
    return files


def _check_member(member: zipfile.ZipInfo) -> None:
    """Refuse a member whose name could reach outside the skill, or that is a link."""
    name = member.filename
    pure = PurePosixPath(name)
    if (
        "\\" in name
        or name.startswith("/")
        or ".." in pure.parts
        or (len(name) > 1 and name[1] == ":")
        or "\x00" in name
    ):
        raise SkillError(f"the zip holds a path outside the skill: {name!r}")
    if stat.S_ISLNK(member.external_attr >> 16):
        raise SkillError(f"the zip holds a link: {name!r}")


def _common_folder(names: list[str]) -> str:
    """``top/`` when every member is under one folder and SKILL.md is in it (a zipped folder)."""
    if SKILL_FILE in names:
        return ""
    tops = {n.split("/", 1)[0] for n in names}
    if len(tops) == 1 and all("/" in n for n in names):
        return tops.pop() + "/"
    return ""


def _count(files: dict[str, bytes], rel: str, size: int) -> None:
    if len(files) >= MAX_FILES:
        raise SkillError(f"a skill may hold at most {MAX_FILES} files")
    if size > MAX_FILE_BYTES:
        raise SkillError(f"{rel} is larger than {MAX_FILE_BYTES} bytes")
    if sum(len(b) for b in files.values()) + size > MAX_TOTAL_BYTES:
        raise SkillError(f"a skill may hold at most {MAX_TOTAL_BYTES} bytes")


def _skill(files: dict[str, bytes], source: str) -> Skill:
    text = files.pop(SKILL_FILE, None)
    if text is None:
        raise SkillError(f"{source}: no {SKILL_FILE}")
    meta, body = _front_matter(text.decode("utf-8", errors="replace"), source)
    name = str(meta.get("name") or "").strip()
    description = str(meta.get("description") or "").strip()
    if not name or not description:
        raise SkillError(f"{source}: {SKILL_FILE} needs a name and a description in its front matter")
    return Skill(name, description, body.strip(), files, source)


def _front_matter(text: str, source: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        raise SkillError(f"{source}: {SKILL_FILE} must open with YAML front matter (---)")
    head, sep, body = text[3:].partition("\n---")
    if not sep:
        raise SkillError(f"{source}: the front matter of {SKILL_FILE} is not closed (---)")
    try:
        meta = yaml.safe_load(head)
    except yaml.YAMLError as e:
        raise SkillError(f"{source}: the front matter of {SKILL_FILE} is not valid YAML: {e}") from None
    if not isinstance(meta, dict):
        raise SkillError(f"{source}: the front matter of {SKILL_FILE} must be a mapping")
    return meta, body.partition("\n")[2]


# --- what the model sees --------------------------------------------------------------------------

LOAD_SKILL = "load_skill"
READ_RESOURCE = "read_skill_resource"
RUN_SCRIPT = "run_skill_script"


def skills_instruction(skills: Sequence[Skill]) -> str:
    """The prompt's part: each skill's name and description, and how to load one (never its text)."""
    lines = [
        f"You have skills: instructions for particular tasks. When a task matches a skill's "
        f"description, call {LOAD_SKILL} with its name first and follow what it says.",
    ]
    lines += [f"- {s.name}: {s.description}" for s in skills]
    return "\n".join(lines)


def skill_tools(skills: Sequence[Skill], sandbox: Sandbox | None = None) -> list[Tool]:
    """``load_skill`` and ``read_skill_resource``; ``run_skill_script`` when a sandbox is given and a
    skill has scripts."""
    by_name = {s.name: s for s in skills}
    names = tuple(by_name)

    def find(args: dict[str, Any]) -> Skill:
        skill = by_name.get(str(args.get("name") or "").strip())
        if skill is None:
            raise ToolInvokeError(
                f"there is no skill {args.get('name')!r}; the skills are: {', '.join(names)}"
            )
        return skill

    async def load(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        skill = find(args)
        text = f"# Skill: {skill.name}\n\n{skill.instructions}"
        if skill.resources:
            text += "\n\nResources (read with " + READ_RESOURCE + "): " + ", ".join(skill.resources)
        yield TextMessage(text)

    async def read(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        skill = find(args)
        path = str(args.get("path") or "").strip()
        data = skill.files.get(path)  # a lookup among the skill's own files: no path is ever opened
        if data is None:
            raise ToolInvokeError(f"the skill {skill.name!r} has no file {path!r}; it has: {skill.resources}")
        try:
            yield TextMessage(data.decode("utf-8"))
        except UnicodeDecodeError:
            yield TextMessage(f"{path} is a binary file of {len(data)} bytes")

    name_param = ToolParameter(
        "name", "select", required=True, description="The skill's name.", options=names
    )
    path_param = ToolParameter("path", "string", required=True, description="The file's path in the skill.")
    tools = [
        Tool(LOAD_SKILL, "Load a skill's instructions by its name.", (name_param,), load),
        Tool(READ_RESOURCE, "Read a file of a skill that was loaded.", (name_param, path_param), read),
    ]
    if sandbox is not None and any(s.scripts for s in skills):
        tools.append(_run_tool(find, name_param, sandbox))
    return tools


def _run_tool(find: Any, name_param: ToolParameter, sandbox: Sandbox) -> Tool:
    script_param = ToolParameter("script", "string", required=True, description="The script's path.")

    async def run(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        skill: Skill = find(args)
        path = str(args.get("script") or "").strip()
        if path not in skill.scripts:
            raise ToolInvokeError(f"the skill {skill.name!r} has no script {path!r}; it has: {skill.scripts}")
        language = SCRIPT_LANGUAGES[Path(path).suffix]
        result = await sandbox.run(language, skill.files[path].decode("utf-8", errors="replace"))  # type: ignore[arg-type]
        status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
        yield TextMessage(f"{status}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")

    return Tool(
        RUN_SCRIPT,
        "Run a script of a skill in the code sandbox (no network, limited time and memory).",
        (name_param, script_param),
        run,
        idempotent=False,
    )
