"""Dify's answers for Service API routes no loopwright app serves, so a client that probes them gets
what Dify would send (not a 404): the workflow routes (400 ``not_workflow_app``; the completion routes
are ``routes_completion``'s). The Knowledge API's child-chunk and pipeline routes, features loopwright's
datasets do not have, answer 400 ``not_supported`` saying so. The key is checked first, as everywhere.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from loopwright.server.auth import AuthedApp, current_app, dataset_key
from loopwright.server.errors import ApiError

router = APIRouter()

APP_UNAVAILABLE = "App unavailable, please check your app configurations."
NOT_WORKFLOW_APP = "Please check if your app mode matches the right API route."


def app_unavailable() -> ApiError:
    return ApiError(400, "app_unavailable", APP_UNAVAILABLE)


def not_workflow_app() -> ApiError:
    return ApiError(400, "not_workflow_app", NOT_WORKFLOW_APP)


@router.post("/v1/workflows/run")
@router.post("/v1/workflows/{workflow_id}/run")
@router.get("/v1/workflows/run/{run_id}")
@router.post("/v1/workflows/tasks/{task_id}/stop")
@router.get("/v1/workflows/logs")
async def workflow(app: Annotated[AuthedApp, Depends(current_app)]) -> None:
    raise not_workflow_app()


# --- Knowledge API routes of features loopwright's datasets do not have ------------------------------

NOT_SUPPORTED = "not_supported"
CHILD_CHUNKS = (
    "Child chunks are not supported: loopwright's datasets are not parent-child (hierarchical_model) "
    "datasets; their segments have no child chunks."
)
PIPELINE = (
    "Knowledge pipelines are not supported: loopwright indexes documents itself "
    "(create-by-text, create-by-file)."
)


@router.get("/v1/datasets/{dataset_id}/documents/{document_id}/segments/{segment_id}/child_chunks")
@router.post("/v1/datasets/{dataset_id}/documents/{document_id}/segments/{segment_id}/child_chunks")
@router.patch(
    "/v1/datasets/{dataset_id}/documents/{document_id}/segments/{segment_id}/child_chunks/{chunk_id}"
)
@router.delete(
    "/v1/datasets/{dataset_id}/documents/{document_id}/segments/{segment_id}/child_chunks/{chunk_id}"
)
async def child_chunks(_: Annotated[str, Depends(dataset_key)]) -> None:
    raise ApiError(400, NOT_SUPPORTED, CHILD_CHUNKS)


@router.get("/v1/datasets/{dataset_id}/pipeline/datasource-plugins")
@router.post("/v1/datasets/{dataset_id}/pipeline/datasource/nodes/{node_id}/run")
@router.post("/v1/datasets/{dataset_id}/pipeline/run")
@router.post("/v1/datasets/pipeline/file-upload")
async def pipeline(_: Annotated[str, Depends(dataset_key)]) -> None:
    raise ApiError(400, NOT_SUPPORTED, PIPELINE)
