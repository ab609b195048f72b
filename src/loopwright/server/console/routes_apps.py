"""Admin API: apps (list, create from fields or from a loopwright YAML / Dify DSL file, show, update as
a new version, versions, delete, export), their API keys, the built-in tools an app can choose from,
and a model's "test connection". The work is :mod:`loopwright.app.admin.apps`'s, as for the CLI."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, Field

from loopwright.app.admin import apps as admin
from loopwright.app.admin import tool_import
from loopwright.app.admin.model_check import DEFAULT_TIMEOUT, check_model
from loopwright.app.config import AppConfig, ConfigImportError
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.bodies import json_body
from loopwright.server.console.auth import require_admin
from loopwright.server.errors import invalid_param, not_found
from loopwright.server.state import get_state

router = APIRouter(prefix="/console/api", dependencies=[Depends(require_admin)])
State = Annotated[AppRuntime, Depends(get_state)]


# --- apps ---------------------------------------------------------------------------------------------


@router.get("/apps")
async def list_apps(state: State) -> dict[str, Any]:
    return {"data": [asdict(a) for a in await admin.list_apps(db=state.db)]}


class CreateApp(BaseModel):
    name: str
    description: str = ""
    config: dict[str, Any] = {}


@router.post("/apps", status_code=201)
async def create_app(
    state: State, body: Annotated[CreateApp, Depends(json_body(CreateApp))]
) -> dict[str, Any]:
    """A new app from its name and configuration (the fields of docs/configuration's app YAML)."""
    config = _config(body.config)
    app_id = await admin.create_app(body.name, config, description=body.description, db=state.db)
    return {"id": app_id, "name": body.name.strip(), "version": 1, "warnings": []}


class ImportApp(BaseModel):
    text: str = Field(description="A loopwright app YAML or a Dify DSL export (agent-chat)")
    name: str | None = None  # instead of the file's
    dry_run: bool = False  # only read it: the configuration and the warnings, nothing stored


@router.post("/apps/import")
async def import_app(
    state: State, body: Annotated[ImportApp, Depends(json_body(ImportApp))]
) -> dict[str, Any]:
    """An app from a file's text, with a warning for each part of a Dify export that could not be
    mapped; with ``dry_run`` nothing is stored (``id`` is ``null``)."""
    try:
        report = admin.read_app_file(body.text)
    except ConfigImportError as e:
        raise invalid_param(str(e)) from None
    name = (body.name or report.name).strip()
    app_id = None
    if not body.dry_run:
        app_id = await admin.create_app(name, report.config, db=state.db)
    return {
        "id": app_id,
        "name": name,
        "version": None if app_id is None else 1,
        "warnings": report.warnings,
        "config": report.config.model_dump(mode="json"),
    }


@router.get("/apps/{app_id}")
async def show_app(app_id: str, state: State) -> dict[str, Any]:
    """The app with its newest configuration, and how many versions and keys it has."""
    return asdict(await admin.show_app(app_id, db=state.db))


@router.delete("/apps/{app_id}", status_code=204)
async def delete_app(app_id: str, state: State) -> Response:
    """Delete the app with its versions, keys, conversations and messages; its keys are refused at
    once on this server."""
    await admin.delete_app(app_id, db=state.db)
    state.lookup.forget(app_id)
    return Response(status_code=204)


@router.get("/apps/{app_id}/export")
async def export_app(
    app_id: str, state: State, format: Literal["dify", "loopwright"] = "loopwright"
) -> dict[str, Any]:
    """The app as YAML: loopwright's own (lossless; ``POST /apps/import`` reads it back) or a Dify
    DSL export, with a warning for each part Dify cannot take."""
    exported = await admin.export_app(app_id, fmt=format, db=state.db)
    return {"format": format, "text": exported.text, "warnings": exported.warnings}


class UpdateApp(BaseModel):
    name: str | None = None
    description: str | None = None
    config: dict[str, Any] | None = None


@router.put("/apps/{app_id}")
@router.patch("/apps/{app_id}")
async def update_app(
    app_id: str, state: State, body: Annotated[UpdateApp, Depends(json_body(UpdateApp))]
) -> dict[str, Any]:
    """Change the name or description in place; a ``config`` becomes a new configuration version."""
    config = _config(body.config) if body.config is not None else None
    version = await admin.update_app(
        app_id, config=config, name=body.name, description=body.description, db=state.db
    )
    state.lookup.forget(app_id)  # the new version serves the next message at once
    return {"id": app_id, "version": version}


@router.get("/apps/{app_id}/versions")
async def list_versions(app_id: str, state: State) -> dict[str, Any]:
    return {"data": [asdict(v) for v in await admin.list_versions(app_id, db=state.db)]}


@router.get("/apps/{app_id}/versions/{version}")
async def get_version(app_id: str, version: int, state: State) -> dict[str, Any]:
    config = await admin.get_version(app_id, version, db=state.db)
    return {"version": version, "config": config.model_dump(mode="json")}


def _config(data: dict[str, Any]) -> AppConfig:
    try:
        return admin.parse_app_config(data)
    except ConfigImportError as e:
        raise invalid_param(str(e)) from None


# --- keys ---------------------------------------------------------------------------------------------


@router.get("/apps/{app_id}/keys")
async def list_keys(app_id: str, state: State) -> dict[str, Any]:
    """The app's keys, masked (a key is shown whole once, when it is made)."""
    return {"data": [asdict(k) for k in await admin.list_keys(app_id, db=state.db)]}


@router.post("/apps/{app_id}/keys", status_code=201)
async def create_key(app_id: str, state: State) -> dict[str, Any]:
    """A new key: the only answer that shows it whole (``token``); lists show it masked."""
    summary, token = await admin.create_key(app_id, db=state.db)
    return {**asdict(summary), "masked": summary.token, "token": token}


@router.delete("/keys/{key_id}", status_code=204)
async def revoke_key(key_id: str, state: State) -> Response:
    """Delete a key by its id; requests with it are refused (401) at once on this server."""
    if not await admin.revoke_key(key_id, db=state.db):
        raise not_found("no such API key")
    state.lookup.forget()
    return Response(status_code=204)


# --- tools and models ---------------------------------------------------------------------------------


class ImportOpenAPI(BaseModel):
    source: dict[str, Any]  # an OpenAPI toolset entry: spec (file path or http(s) URL), auth, …
    check: bool = False  # only load the spec and list its operations


@router.post("/apps/{app_id}/toolsets/openapi")
async def import_openapi(
    app_id: str, state: State, body: Annotated[ImportOpenAPI, Depends(json_body(ImportOpenAPI))]
) -> dict[str, Any]:
    """Load an OpenAPI spec (through the network guard) and list its operations; unless ``check``,
    add it to the app's toolsets as a new configuration version (one of the same spec is replaced)."""
    await admin.check_app(app_id, db=state.db)
    source = tool_import.openapi_source(body.source)
    allow = state.settings.tool_allow_hosts
    if body.check:
        operations, version = await tool_import.openapi_operations(source, allow), None
    else:
        operations, version = await tool_import.import_openapi(app_id, source, allow, db=state.db)
        state.lookup.forget(app_id)
    return {"operations": [asdict(o) for o in operations], "version": version}


@router.get("/tools")
async def builtin_tools(state: State) -> dict[str, Any]:
    """The built-in tools an app's ``tools`` may name, with their form parameters (configured per app)."""
    return {
        "data": [
            {
                "name": t.name,
                "label": t.label or t.name,
                "description": t.description,
                "form_parameters": [
                    {
                        "name": p.name,
                        "type": p.type,
                        "required": p.required,
                        "description": p.description,
                        "options": list(p.options),
                        "default": p.default,
                    }
                    for p in t.parameters
                    if p.form == "form"
                ],
            }
            for t in state.tools
        ]
    }


class ModelTest(BaseModel):
    model: str = Field(min_length=1)
    timeout: float = Field(DEFAULT_TIMEOUT, gt=0, le=120)


@router.post("/models/test")
async def test_model(
    state: State, body: Annotated[ModelTest, Depends(json_body(ModelTest))]
) -> dict[str, Any]:
    """One tiny call to the model ``model`` names (a model spec, as an app's), within ``timeout``
    seconds: ``ok`` with its reply, or the error. Always 200: a failing model is the answer."""
    return asdict(await check_model(body.model, state.settings, time_limit=body.timeout))
