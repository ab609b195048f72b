"""A remote A2A agent as one tool: its card read once (name, description, skills, JSON-RPC endpoint),
then each call one ``SendMessage`` that waits for the task's end, its answer the task's artifacts.

Every request goes through the network guard (``tools.net``): an agent on a loopback or private
address is refused unless allow-listed. The tool's parameter is ``query``. The calls of one
conversation of the calling app go on in one context of the remote agent (its ``contextId``, kept in
memory while the server runs), so the agent sees what it was asked before. A task that ends otherwise
than completed — failed, canceled, rejected, or waiting for input or authorization the caller cannot
give — is the call's error, with the agent's own words. Each message says how deep in agents calling
agents it is (``metadata.loopwright.call_depth``): a loopwright server counts on from there and its
A2A and app tools refuse past their limit, so agents that call each other in a loop stop.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx
from cachetools import LRUCache

from loopwright.tools.app_tool import DEFAULT_MAX_DEPTH, tool_name_for
from loopwright.tools.base import TextMessage, Tool, ToolContext, ToolInvokeError, ToolOutput, ToolParameter
from loopwright.tools.net import NetworkPolicy, check_url, guarded_client

log = logging.getLogger("loopwright.tools")

CARD_PATH = "/.well-known/agent-card.json"
PROTOCOL_VERSION = "1.0"
MAX_CONTEXTS = 10_000  # conversations whose remote context is remembered
COMPLETED = "TASK_STATE_COMPLETED"
WORKING_STATES = frozenset({"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"})


class A2AAgent:
    """The toolset of one remote agent (one tool), found at ``url`` (its card, or its base URL)."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        policy: NetworkPolicy,
        name: str | None = None,
        description: str = "",
        timeout: httpx.Timeout | None = None,
    ) -> None:
        self.card_url = url if url.endswith(".json") else url.rstrip("/") + CARD_PATH
        self._token = token  # a secret: never logged or shown
        self._policy = policy
        self._name = name
        self._description = description
        self._timeout = timeout or httpx.Timeout(300.0, connect=10.0)
        self._tool: Tool | None = None
        self._endpoint = ""
        self._contexts: LRUCache[str, str] = LRUCache(MAX_CONTEXTS)

    async def get_tools(self) -> Sequence[Tool]:
        """The agent's tool. An agent whose card cannot be read contributes none: the failure is logged
        as a warning and the app runs without it (as an MCP server that cannot be reached)."""
        try:
            return [await self.tool()]
        except ToolInvokeError as exc:
            log.warning("A2A agent %s: running without it: %s", self.card_url, exc)
            return []

    async def tool(self) -> Tool:
        """The tool, made from the agent's card on first use; raises :class:`ToolInvokeError`."""
        if self._tool is None:
            card = await self._card()
            self._endpoint = _jsonrpc_endpoint(card)
            if self._token and _origin(self._endpoint) != _origin(self.card_url):
                # the token is the card's host's: a card must not send it elsewhere
                raise ToolInvokeError(
                    f"the agent's endpoint {_origin(self._endpoint)} is not where its card is "
                    f"({_origin(self.card_url)}); its token is sent to the card's origin only"
                )
            name = self._name or str(card.get("name") or "agent")
            description = self._description or _describe(card)
            query = ToolParameter("query", "string", required=True, description="What to ask the agent.")
            self._tool = Tool(tool_name_for(name), description, (query,), self._invoke, label=name)
        return self._tool

    def _client(self) -> httpx.AsyncClient:
        headers = {"A2A-Version": PROTOCOL_VERSION}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        return guarded_client(self._policy, timeout=self._timeout, headers=headers)

    async def _card(self) -> dict[str, Any]:
        await check_url(self.card_url, self._policy)  # a clear error up front; the client checks again
        try:
            async with self._client() as client:
                response = await client.get(self.card_url)
                response.raise_for_status()
                card = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ToolInvokeError(f"could not read the agent card at {self.card_url}: {exc}") from None
        if not isinstance(card, dict):
            raise ToolInvokeError(f"the agent card at {self.card_url} is not a JSON object")
        return card

    async def _invoke(self, args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        text = str(args.get("query") or "").strip()
        if not text:
            raise ToolInvokeError("query is required: say what to ask the agent")
        if ctx.call_depth >= DEFAULT_MAX_DEPTH:
            raise ToolInvokeError(
                f"the agent was not asked: agents calling agents went {ctx.call_depth} deep, "
                f"and the limit is {DEFAULT_MAX_DEPTH}"
            )
        message: dict[str, Any] = {
            "messageId": str(uuid.uuid4()),
            "role": "ROLE_USER",
            "parts": [{"text": text}],
            # a loopwright agent behind it counts on from here, so a loop of agents ends
            "metadata": {"loopwright": {"call_depth": ctx.call_depth + 1}},
        }
        context = self._contexts.get(ctx.conversation_id) if ctx.conversation_id else None
        if context:
            message["contextId"] = context
        task = await self._send(message)
        if ctx.conversation_id and isinstance(task.get("contextId"), str):
            self._contexts[ctx.conversation_id] = task["contextId"]
        yield TextMessage(_answer(task))

    async def _send(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """``SendMessage``, waiting for the end: the task (or a direct message) it answered with."""
        body = {
            "jsonrpc": "2.0",
            "id": str(uuid.uuid4()),
            "method": "SendMessage",
            "params": {"message": message},
        }
        try:
            async with self._client() as client:
                response = await client.post(self._endpoint, json=body)
                reply = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ToolInvokeError(f"the agent at {self._endpoint} could not be asked: {exc}") from None
        if not isinstance(reply, dict):
            raise ToolInvokeError("the agent's answer is not a JSON-RPC response")
        error = reply.get("error")
        if isinstance(error, dict):
            raise ToolInvokeError(f"the agent refused ({error.get('code')}): {error.get('message')}")
        result = reply.get("result")
        if not isinstance(result, dict) or not isinstance(result.get("task") or result.get("message"), dict):
            raise ToolInvokeError("the agent's answer holds neither a task nor a message")
        if isinstance(result.get("message"), dict):  # a direct answer, no task
            return {"status": {"state": COMPLETED, "message": result["message"]}}
        task: dict[str, Any] = result["task"]
        return task


def _jsonrpc_endpoint(card: Mapping[str, Any]) -> str:
    """The URL of the card's JSON-RPC interface of protocol 1.0."""
    for interface in card.get("supportedInterfaces") or []:
        if not isinstance(interface, dict) or interface.get("protocolBinding") != "JSONRPC":
            continue
        version = str(interface.get("protocolVersion") or PROTOCOL_VERSION)
        if version.split(".")[:2] == PROTOCOL_VERSION.split(".") and isinstance(interface.get("url"), str):
            return str(interface["url"])
    raise ToolInvokeError(f"the agent offers no JSON-RPC interface of A2A {PROTOCOL_VERSION}")


def _origin(url: str) -> str:
    parsed = httpx.URL(url)
    return f"{parsed.scheme}://{parsed.host}:{parsed.port or (443 if parsed.scheme == 'https' else 80)}"


def _describe(card: Mapping[str, Any]) -> str:
    """The tool's description: the card's, and the names of the agent's skills."""
    description = str(card.get("description") or f"Ask the agent {card.get('name')!r}.")
    skills = [str(s.get("name")) for s in card.get("skills") or [] if isinstance(s, dict) and s.get("name")]
    return f"{description} Skills: {', '.join(skills)}." if skills else description


def _parts_text(parts: Any) -> str:
    """The text of A2A parts: text as it is, data as JSON (files are named, not fetched)."""
    out: list[str] = []
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str):
            out.append(part["text"])
        elif "data" in part:
            out.append(json.dumps(part["data"], ensure_ascii=False))
        elif isinstance(part.get("url"), str):
            out.append(part["url"])
    return "\n".join(out)


def _answer(task: Mapping[str, Any]) -> str:
    """The answer of a completed task (its artifacts, else its status message); any other end raises."""
    status = task.get("status")
    status = status if isinstance(status, dict) else {}
    state = str(status.get("state") or "")
    message = status.get("message")
    said = _parts_text(message.get("parts") if isinstance(message, dict) else None)
    if state == COMPLETED:
        artifacts = task.get("artifacts") or []
        text = "\n".join(_parts_text(a.get("parts")) for a in artifacts if isinstance(a, dict))
        return text or said
    if state in WORKING_STATES:
        raise ToolInvokeError("the agent did not finish the task (it is still working)")
    why = state.removeprefix("TASK_STATE_").lower().replace("_", "-") or "unknown"
    raise ToolInvokeError(f"the agent's task ended {why}" + (f": {said}" if said else ""))
