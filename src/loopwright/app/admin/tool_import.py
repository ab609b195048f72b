"""Importing an OpenAPI spec as an app's toolset: check the source, load the spec (through the network
guard: the settings' allow-list plus the source's own ``allow_hosts``), list its operations, and add it
to the app as a new configuration version. ``loopwright tools import`` and the admin API call these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pydantic

from loopwright.app.admin.apps import add_toolset
from loopwright.app.config import first_error
from loopwright.errors import UserInputError

if TYPE_CHECKING:  # the OpenAPI stack takes ~0.7 s to import: only an import pays for it
    from loopwright.store.db import Database
    from loopwright.tools.openapi import OpenAPISource


class ToolImportError(UserInputError):
    """The source is invalid or its spec cannot be loaded; the message says why."""


@dataclass(frozen=True, slots=True)
class OperationSummary:
    name: str  # the tool's name
    method: str
    path: str
    summary: str  # the first line of its description


def openapi_source(fields: Mapping[str, Any]) -> OpenAPISource:
    """An OpenAPI source from its fields (an app configuration's ``toolsets`` entry);
    :class:`ToolImportError` naming the first problem."""
    from loopwright.tools.openapi import OpenAPISource

    try:
        return OpenAPISource.model_validate({**fields, "type": "openapi"})
    except pydantic.ValidationError as e:
        raise ToolImportError(first_error(e)) from None


async def openapi_operations(source: OpenAPISource, allow_hosts: Sequence[str]) -> list[OperationSummary]:
    """The operations the source's spec defines, loaded through the network guard (``allow_hosts``:
    the settings' allow-list). Needs no credentials: the key is not read here."""
    from loopwright.tools.base import ToolError
    from loopwright.tools.net import NetworkPolicy, network_policy
    from loopwright.tools.openapi import OpenAPIToolset, SpecError

    try:
        policy = network_policy(allow_hosts).union(NetworkPolicy.from_strings(source.allow_hosts))
    except ValueError as e:
        raise ToolImportError(str(e)) from None
    toolset = OpenAPIToolset.from_file(
        source.spec, policy=policy, server_url=source.server_url, include=source.include
    )
    try:
        operations = await toolset.load()
    except (SpecError, ToolError, ValueError) as e:
        raise ToolImportError(str(e)) from None
    return [OperationSummary(op.name, op.method, op.path, _first_line(op.description)) for op in operations]


async def import_openapi(
    app_id: str,
    source: OpenAPISource,
    allow_hosts: Sequence[str],
    *,
    database_url: str | None = None,
    db: Database | None = None,
) -> tuple[list[OperationSummary], int]:
    """Check the spec (its operations, as :func:`openapi_operations`) and add it to the app as a new
    configuration version: the operations and the version number."""
    operations = await openapi_operations(source, allow_hosts)
    entry = source.model_dump(mode="json", exclude_none=True)
    version = await add_toolset(app_id, entry, database_url=database_url, db=db)
    return operations, version


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 80 else line[:79] + "…"
