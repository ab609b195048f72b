"""Agent-chat app configuration: what an app is, from loopwright YAML or a Dify DSL export.

``AppConfig`` is stored (versioned) with the app; a conversation stays pinned to the version it
started with. ``load_app_yaml`` reads loopwright's own YAML; ``import_dify_dsl`` maps a Dify
agent-chat app export and reports plainly what it could not map.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Any, Literal

import pydantic
import yaml

from loopwright.app._validation import first_error
from loopwright.app.dify.annotation_setting import AnnotationReply
from loopwright.app.dify.dsl_agent import is_agent_export, translate_agent_export
from loopwright.app.dify.dsl_import import DifyImportError, translate_export
from loopwright.app.dify.tools import ImportOptions, ToolImport
from loopwright.app.guards.external_data import ExternalDataTool
from loopwright.app.guards.moderation import ModerationRule
from loopwright.app.toolset_sources import check_source
from loopwright.errors import UserInputError

HOSTED_MODEL_KINDS = ("openai", "openai-compatible")  # model specs served by a provider over HTTP

FieldType = Literal[
    "text-input", "paragraph", "select", "number", "checkbox", "file", "file-list", "json_object"
]


class InputField(pydantic.BaseModel):
    """One field of the app's user input form (Dify's ``user_input_form`` entry)."""

    variable: str
    label: str = ""
    type: FieldType = "text-input"
    required: bool = False
    max_length: int | None = None
    options: list[str] = []
    default: Any = None
    # ``file`` and ``file-list`` fields only (Dify's names); empty: no restriction.
    allowed_file_types: list[str] = []
    allowed_file_extensions: list[str] = []
    allowed_file_upload_methods: list[str] = []


class ToolConfig(pydantic.BaseModel):
    """A tool the app offers, by name, with configured values for its ``form`` parameters."""

    name: str
    form_values: dict[str, Any] = {}


class FileUpload(pydantic.BaseModel):
    enabled: bool = False
    allowed_types: list[str] = ["image"]
    # for ``custom`` files (Dify's): their extensions, e.g. [".csv", ".json"]; empty: any
    allowed_file_extensions: list[str] = []
    number_limits: int = 3
    transfer_methods: list[Literal["local_file", "remote_url"]] = ["local_file", "remote_url"]


class ApprovalSettings(pydantic.BaseModel):
    """Tools whose calls wait for a person's approval (by name: built-ins, OpenAPI operations, MCP
    tools, …), and how long a decision may take before the calls count as denied (seconds)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    tools: list[str] = []
    timeout: float = pydantic.Field(default=3600.0, gt=0)


class EvidenceSettings(pydantic.BaseModel):
    """Evidence-backed answers: with knowledge bases attached, an answer must rest on a retrieved
    segment scoring ``min_score`` or more, else the app answers ``no_evidence_reply``."""

    model_config = pydantic.ConfigDict(extra="forbid")

    required: bool = False
    no_evidence_reply: str = "I could not find this in the knowledge base, so I cannot answer it."
    min_score: float = pydantic.Field(default=0.0, ge=0, le=1)


class SpeechToText(pydantic.BaseModel):
    """``POST /v1/audio-to-text`` (Dify's ``speech_to_text`` feature): ``model`` is a spec of a model on
    an OpenAI-compatible audio API, ``openai:<name>`` or ``openai-compatible:<name>`` (its server and
    key are the chat models', ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    enabled: bool = False
    model: str = "openai:whisper-1"


class TextToSpeech(pydantic.BaseModel):
    """``POST /v1/text-to-audio`` (Dify's ``text_to_speech`` feature), streamed as MP3. ``voice`` is
    used when the request names none (empty: ``alloy``, the first of OpenAI's voices); ``language``
    and ``autoPlay`` are reported by ``/v1/parameters`` for clients, as Dify does."""

    model_config = pydantic.ConfigDict(extra="forbid")

    enabled: bool = False
    model: str = "openai:tts-1"
    voice: str = ""
    language: str = ""
    autoPlay: Literal["enabled", "disabled"] = "disabled"  # noqa: N815 (Dify's name)


class SiteSettings(pydantic.BaseModel):
    """How the chat page shows the app (``GET /v1/site``, Dify's web-app settings): ``icon`` an emoji
    beside the name on ``icon_background`` (a CSS colour), and a ``footer`` line under the message box
    (Dify's ``custom_disclaimer``)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    icon: str = pydantic.Field(default="", max_length=16)
    icon_background: str = pydantic.Field(default="", max_length=32, pattern=r"^(#[0-9A-Fa-f]{3,8}|[a-z]+)?$")
    footer: str = pydantic.Field(default="", max_length=500)


class ToolRanking(pydantic.BaseModel):
    """Offer each round only the ``top_k`` tools most relevant to the question when the app has more
    than ``threshold`` (ranked by meaning with the packaged MiniLM; ``loopwright.tools.ranking``).
    Unset: 16 and 6, or 3 and 3 on the embedded local model, which chooses well only among a few."""

    model_config = pydantic.ConfigDict(extra="forbid")

    enabled: bool = True
    threshold: int | None = pydantic.Field(default=None, ge=1)
    top_k: int | None = pydantic.Field(default=None, ge=1)


class PlanConfig(pydantic.BaseModel):
    """Strategy ``plan``: how many new plans the model may write after failed steps, and how many
    steps a plan may have (agent.planning)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    max_replans: int = pydantic.Field(default=2, ge=0, le=10)
    max_steps: int = pydantic.Field(default=8, ge=1, le=32)


class Handoff(pydantic.BaseModel):
    """One app the conversation may be handed to (docs/multi-agent.md): ``app`` its id,
    ``description`` when to hand over; ``history``: what of the conversation before this message the
    target sees (``all``, the newest ``last_n`` messages, or ``none``) — what was done in this message
    so far is always carried."""

    model_config = pydantic.ConfigDict(extra="forbid")

    app: str = pydantic.Field(min_length=1, max_length=64)
    description: str = ""
    history: Literal["all", "last_n", "none"] = "all"
    last_n: int = pydantic.Field(default=4, ge=0, le=1000)


# Money in a configuration: exact, and stored as a decimal string (configurations are JSON).
Money = Annotated[Decimal, pydantic.Field(ge=0), pydantic.PlainSerializer(str, return_type=str)]
Tokens = Annotated[int, pydantic.Field(ge=0)]


class BudgetSettings(pydantic.BaseModel):
    """Hard caps on what the app spends (docs/memory-and-budgets.md); unset: no cap. ``run_*`` cap one
    run (a message); ``conversation_*`` a conversation's runs together; ``end_user_daily_*`` and
    ``app_daily_*`` an end user's and the app's runs of one UTC day. ``*_cost`` are in the currency of
    the model's prices. A run stops before the model call or tool calls that would cross a cap; the next
    request of a capped conversation, end user or app is refused (HTTP 429 ``budget_exceeded``)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    run_tokens: Tokens | None = None
    run_model_calls: Tokens | None = None
    run_tool_calls: Tokens | None = None
    run_cost: Money | None = None
    conversation_tokens: Tokens | None = None
    conversation_cost: Money | None = None
    end_user_daily_tokens: Tokens | None = None
    end_user_daily_cost: Money | None = None
    app_daily_tokens: Tokens | None = None
    app_daily_cost: Money | None = None


Compaction = Literal["off", "trim", "summarize"]


class MemorySettings(pydantic.BaseModel):
    """How a conversation's history fits the model's window, and memory across conversations
    (docs/memory-and-budgets.md).

    ``compaction``: ``off`` (history sent whole), ``trim`` (whole turns dropped, oldest first, until it
    fits: Dify's behaviour and the default), ``summarize`` (old tool results cut first, then older turns
    folded into a stored summary made by ``summary_model`` or the app's model). ``max_prompt_tokens``:
    the history's room (default: the model's window minus the reply's). ``summarize_at``: the share of
    that room past which a summary is made; ``keep_turns``: the newest turns always kept verbatim;
    ``tool_result_tokens``: what an old tool result keeps when cut."""

    model_config = pydantic.ConfigDict(extra="forbid")

    compaction: Compaction = "trim"
    max_prompt_tokens: int | None = pydantic.Field(default=None, ge=1)
    summary_model: str | None = None
    summarize_at: float = pydantic.Field(default=0.8, gt=0, le=1)
    keep_turns: int = pydantic.Field(default=4, ge=1)
    tool_result_tokens: int = pydantic.Field(default=64, ge=0)
    long_term: bool = False
    recall_tokens: int = pydantic.Field(default=400, ge=0)

    @pydantic.field_validator("compaction", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        # YAML 1.1 reads a bare ``off`` as false
        return "off" if value is False else value


AppMode = Literal["agent-chat", "agent", "chat", "completion"]
PLAIN_MODES = ("chat", "completion")  # a model with an instruction, no tools (Dify's chat and text generator)


class AppConfig(pydantic.BaseModel):
    """Everything that defines how an app answers. ``mode`` is Dify's kind of app: ``agent-chat`` (an
    agent with tools, the default), ``chat`` (a model with an instruction, no tools: a conversation)
    or ``completion`` (Dify's text generator: a form in, one answer out)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    # The Dify app mode the Service API answers as (fixed when the app is made): ``agent-chat``;
    # ``agent``, Dify 1.15+'s agent app (streaming only; the answer also comes whole as a ``message``
    # event before ``message_end``); ``chat`` and ``completion``, a model with an instruction, no tools.
    mode: AppMode = "agent-chat"
    model: str = "local"
    model_params: dict[str, Any] = {}
    strategy: Literal["auto", "function-calling", "react", "plan"] = "auto"
    instruction: str = ""
    user_input_form: list[InputField] = []
    tools: list[ToolConfig] = []
    # OpenAPI specs, MCP servers, other apps, knowledge bases: see loopwright.app.toolset_sources.
    toolsets: list[dict[str, Any]] = []
    max_iterations: int = pydantic.Field(10, ge=0, le=99)
    file_upload: FileUpload = FileUpload()
    opening_statement: str = ""
    suggested_questions: list[str] = []
    history_message_limit: int | None = None  # an optional window on top of the token budget
    max_active_requests: int | None = None  # messages of the app running at once (Dify's); none: no limit
    # Name new conversations with the app's model after their first answer. Unset: Dify's default
    # (on) for a hosted model; off for the embedded and scripted models, where a title costs a slow
    # local call (or a scripted reply) and a 135M model's title is rarely better than the query's start.
    generate_conversation_names: bool | None = None
    # ``GET /v1/messages/{id}/suggested`` answers with questions made by the app's model (Dify's feature).
    suggested_questions_after_answer: bool = False
    speech_to_text: SpeechToText = SpeechToText()
    text_to_speech: TextToSpeech = TextToSpeech()
    site: SiteSettings = SiteSettings()  # the chat page's icon and footer line (GET /v1/site)
    # AgentCallback subclasses by import path ("package.module:Class"), told of every run (app.callbacks)
    callbacks: list[str] = []
    # Trust and control (docs/trust.md): moderation rules, answers from annotations, variables from APIs
    moderation: list[ModerationRule] = []
    annotation_reply: AnnotationReply | None = None
    external_data_tools: list[ExternalDataTool] = []
    # Structured output: the answer is JSON following this JSON Schema (agent.output)
    output_schema: dict[str, Any] | None = None
    approval: ApprovalSettings = ApprovalSettings()
    evidence: EvidenceSettings = EvidenceSettings()

    @pydantic.field_validator("output_schema")
    @classmethod
    def _check_output_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            from loopwright.agent.output import output_spec

            output_spec(value)  # raises ValueError for a schema that is not valid
        return value

    tool_ranking: ToolRanking = ToolRanking()
    plan: PlanConfig = PlanConfig()  # strategy "plan" only
    # Skills: folders or zips with a SKILL.md, by path on the server (tools.skills)
    skills: list[str] = []
    memory: MemorySettings = MemorySettings()
    # Apps this one may hand the conversation to, and how many hand-overs one message may have
    handoffs: list[Handoff] = []
    max_handoffs: int = pydantic.Field(default=3, ge=0, le=10)
    budget: BudgetSettings = BudgetSettings()

    @pydantic.field_validator("toolsets")
    @classmethod
    def _check_toolsets(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [check_source(entry) for entry in value]

    @pydantic.model_validator(mode="after")
    def _plain_apps_have_no_tools(self) -> AppConfig:
        """A chat or completion app is a model and an instruction: what only an agent uses is refused,
        not silently left out."""
        if self.mode in PLAIN_MODES:
            used = [name for name in _AGENT_ONLY if getattr(self, name)]
            if used:
                raise ValueError(
                    f"a {self.mode} app has no tools: remove {', '.join(used)} (or use mode agent-chat)"
                )
        return self


# What only an agent-chat app has: its tools and what runs them.
_AGENT_ONLY = ("tools", "toolsets", "skills", "handoffs", "output_schema")


class ConfigImportError(UserInputError):
    """A file that is not a usable app definition; the message names the problem."""


def load_app_yaml(text: str) -> tuple[str, AppConfig]:
    """``(name, config)`` from loopwright's app YAML (``name:`` plus the AppConfig fields), or from a
    Dify DSL export (recognised by its ``app:`` section) — warnings of the latter are dropped here;
    use :func:`import_dify_dsl` to see them."""
    data = _yaml(text)
    if "app" in data and ("model_config" in data or is_agent_export(data)):
        report = import_dify_dsl(text)
        return report.name, report.config
    _refuse_graph_apps(data)
    name = str(data.pop("name", "") or "")
    if not name:
        raise ConfigImportError("the app YAML has no name")
    try:
        return name, AppConfig.model_validate(data)
    except pydantic.ValidationError as e:
        raise ConfigImportError(f"invalid app config: {first_error(e)}") from None


def _refuse_graph_apps(data: Mapping[str, Any]) -> None:
    """A Dify export of a workflow or chatflow (advanced-chat) app — an ``app:`` section with a
    ``workflow:`` graph and no ``model_config`` — said to be what it is, not "no name"."""
    app = data.get("app")
    if not isinstance(app, dict) or "workflow" not in data:
        return
    mode = app.get("mode") or "workflow"
    name = f" {app['name']!r}" if app.get("name") else ""
    kind = "chatflow (advanced-chat)" if mode == "advanced-chat" else str(mode)
    raise ConfigImportError(
        f"this is a Dify {kind} app export{name} (DSL {data.get('version', '?')}): a graph of nodes, "
        "which loopwright does not run — only chat-type apps import (agent-chat, or a chat app with "
        "agent mode on); export an agent app from Dify, or rebuild the flow as one agent's tools"
    )


@dataclass
class ImportReport:
    name: str
    config: AppConfig
    warnings: list[str] = field(default_factory=list)
    tools: list[ToolImport] = field(default_factory=list)  # a Dify import: what each tool became


def import_dify_dsl(text: str, options: ImportOptions | None = None) -> ImportReport:
    """Map a Dify agent-chat app export (DSL YAML) to an AppConfig, with what each tool became and a
    warning for each part that could not be mapped (the mapping: :mod:`loopwright.app.dify.dsl_import`;
    ``options`` say where the export's MCP servers, workflow apps and API specs are)."""
    data = _yaml(text)
    translate = translate_agent_export if is_agent_export(data) else translate_export
    try:
        translation = translate(data, options)
    except DifyImportError as e:
        raise ConfigImportError(str(e)) from None
    try:
        config = AppConfig.model_validate(translation.config)
    except pydantic.ValidationError as e:
        raise ConfigImportError(f"invalid app config: {first_error(e)}") from None
    return ImportReport(translation.name, config, translation.warnings, translation.tools)


# An app file is a few kilobytes (a Dify export with a long prompt, some hundred); past these it is
# not an app file but an attack on the parser: a "billion laughs" document is a few hundred bytes of
# aliases (*name) that expand into billions of nodes once walked.
MAX_APP_FILE_CHARS = 10_000_000
MAX_YAML_NODES = 1_000_000  # nodes of the document with every alias expanded


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses a document whose aliases expand past ``MAX_YAML_NODES``
    nodes — counted on the composed graph, where each alias is still one shared node."""

    def get_single_node(self) -> Any:
        node = super().get_single_node()
        if node is not None and _expanded_size(node, {}) > MAX_YAML_NODES:
            raise ConfigImportError(
                f"the app file's YAML aliases expand past {MAX_YAML_NODES:,} nodes: refused"
            )
        return node


def _expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """How many nodes ``node`` stands for with its aliases expanded (each shared node counted once
    per use, computed once)."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    size = 1
    if isinstance(node, yaml.SequenceNode):
        size += sum(_expanded_size(child, sizes) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        size += sum(_expanded_size(k, sizes) + _expanded_size(v, sizes) for k, v in node.value)
    sizes[id(node)] = size
    return size


def _yaml(text: str) -> dict[str, Any]:
    if len(text) > MAX_APP_FILE_CHARS:
        raise ConfigImportError(f"the app file is over {MAX_APP_FILE_CHARS:,} characters: refused")
    try:
        data = yaml.load(text, Loader=_BoundedLoader)  # a SafeLoader
    except yaml.YAMLError as e:
        raise ConfigImportError(f"not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ConfigImportError("the app file must be a YAML mapping")
    return data


__all__ = [
    "PLAIN_MODES",
    "AppConfig",
    "AppMode",
    "BudgetSettings",
    "ConfigImportError",
    "FieldType",
    "FileUpload",
    "ImportReport",
    "InputField",
    "MemorySettings",
    "PlanConfig",
    "ToolConfig",
    "ToolRanking",
    "first_error",
    "import_dify_dsl",
    "load_app_yaml",
]


def names_conversations(config: AppConfig) -> bool:
    """Whether the app's model names its new conversations (``generate_conversation_names``; unset:
    on for a hosted model, as Dify)."""
    if config.generate_conversation_names is not None:
        return config.generate_conversation_names
    return config.model.strip().lower().partition(":")[0] in HOSTED_MODEL_KINDS
