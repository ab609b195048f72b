"""Dify's Knowledge API on a real SQLite file, in process: keys, datasets, documents, retrieval."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from loopwright.knowledge import KnowledgeBase
from loopwright.store.db import Database


@pytest.fixture
async def knowledge(server_app: FastAPI, db: Database) -> AsyncIterator[KnowledgeBase]:
    kb = KnowledgeBase.open(db.url)
    server_app.state.loopwright.use_knowledge(kb)
    yield kb
    await kb.close()


@pytest.fixture
async def headers(knowledge: KnowledgeBase) -> dict[str, str]:
    return {"Authorization": f"Bearer {await knowledge.store.create_api_key()}"}


# Dify's document detail (api/controllers/service_api/dataset/document.py, DocumentApi.get)
DETAIL_KEYS = {
    "id", "position", "data_source_type", "data_source_info", "dataset_process_rule_id",
    "dataset_process_rule", "document_process_rule", "name", "created_from", "created_by",
    "created_at", "tokens", "indexing_status", "completed_at", "updated_at", "indexing_latency",
    "error", "enabled", "disabled_at", "disabled_by", "archived", "segment_count",
    "average_segment_length", "hit_count", "display_status", "doc_form", "doc_language",
    "doc_type", "doc_metadata",
}  # fmt: skip


async def _dataset(client: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    r = await client.post("/v1/datasets", json={"name": "Handbook", **body}, headers=headers)
    assert r.status_code == 200, r.text
    return dict(r.json())


async def test_dataset_keys_are_required(client: httpx.AsyncClient, knowledge: KnowledgeBase) -> None:
    r = await client.get("/v1/datasets")
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"
    r = await client.get("/v1/datasets", headers={"Authorization": "Bearer dataset-nope"})
    assert r.json() == {"code": "unauthorized", "message": "Access token is invalid", "status": 401}


async def test_create_and_list_datasets(client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    body = await _dataset(client, headers, description="HR rules", permission="only_me")
    assert body["name"] == "Handbook" and body["indexing_technique"] == "economy"
    assert body["document_count"] == 0 and body["retrieval_model_dict"]["search_method"] == "keyword_search"
    dup = await client.post("/v1/datasets", json={"name": "Handbook"}, headers=headers)
    assert dup.status_code == 409 and dup.json()["code"] == "dataset_name_duplicate"
    bad = await client.post("/v1/datasets", json={"name": ""}, headers=headers)
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_param"
    await _dataset(client, headers, name="Other")
    page = (await client.get("/v1/datasets?page=1&limit=1", headers=headers)).json()
    assert page["total"] == 2 and page["has_more"] is True and len(page["data"]) == 1
    found = (await client.get("/v1/datasets?keyword=oth", headers=headers)).json()
    assert [d["name"] for d in found["data"]] == ["Other"]


async def test_text_document_then_retrieve(client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    ds = await _dataset(client, headers)
    r = await client.post(
        f"/v1/datasets/{ds['id']}/document/create-by-text",
        json={
            "name": "vacation.txt",
            "text": "Employees get 25 vacation days per year.",
            "indexing_technique": "economy",
        },
        headers=headers,
    )
    assert r.status_code == 200, r.text
    created = r.json()
    # Indexing runs after the response, as in Dify.
    assert created["document"]["indexing_status"] == "waiting" and created["batch"]
    status = await client.get(
        f"/v1/datasets/{ds['id']}/documents/{created['batch']}/indexing-status", headers=headers
    )
    assert status.json()["data"][0]["indexing_status"] == "completed"
    docs = (await client.get(f"/v1/datasets/{ds['id']}/documents", headers=headers)).json()
    assert docs["total"] == 1 and docs["data"][0]["display_status"] == "available"
    r = await client.post(
        f"/v1/datasets/{ds['id']}/retrieve",
        json={
            "query": "how many vacation days",
            "retrieval_model": {"search_method": "keyword_search", "top_k": 3},
        },
        headers=headers,
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["query"] == {"content": "how many vacation days"}
    (record,) = body["records"]
    assert record["segment"]["content"] == "Employees get 25 vacation days per year."
    assert record["segment"]["document"]["name"] == "vacation.txt" and 0 < record["score"] <= 1


async def test_file_documents_with_a_process_rule(client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    ds = await _dataset(client, headers)
    text = "\n\n".join(f"Rule {i}: employees must follow policy number {i} at all times." for i in range(12))
    data = {
        "indexing_technique": "economy",
        "process_rule": {
            "mode": "custom",
            "rules": {"segmentation": {"separator": "\\n\\n", "max_tokens": 20, "chunk_overlap": 0}},
        },
    }
    r = await client.post(
        f"/v1/datasets/{ds['id']}/document/create-by-file",
        files={"file": ("rules.md", text.encode(), "text/markdown")},
        data={"data": json.dumps(data)},
        headers=headers,
    )
    assert r.status_code == 200, r.text
    docs = (await client.get(f"/v1/datasets/{ds['id']}/documents", headers=headers)).json()["data"]
    assert docs[0]["name"] == "rules.md" and docs[0]["indexing_status"] == "completed"
    r = await client.post(
        f"/v1/datasets/{ds['id']}/retrieve", json={"query": "policy number 7"}, headers=headers
    )
    assert r.json()["records"][0]["segment"]["content"].startswith("Rule 7:")
    png = await client.post(
        f"/v1/datasets/{ds['id']}/document/create-by-file",
        files={"file": ("x.png", b"\x89PNG", "image/png")},
        headers=headers,
    )
    assert png.status_code == 415 and png.json()["code"] == "unsupported_file_type"
    none = await client.post(f"/v1/datasets/{ds['id']}/document/create-by-file", headers=headers)
    assert none.status_code == 400 and none.json()["code"] == "no_file_uploaded"


async def test_a_bad_file_shows_its_error(client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    ds = await _dataset(client, headers)
    r = await client.post(
        f"/v1/datasets/{ds['id']}/document/create-by-file",
        files={"file": ("broken.pdf", b"%PDF-1.4 nope", "application/pdf")},
        headers=headers,
    )
    assert r.status_code == 200
    (doc,) = (await client.get(f"/v1/datasets/{ds['id']}/documents", headers=headers)).json()["data"]
    assert doc["indexing_status"] == "error" and doc["error"]


async def test_delete_documents_and_datasets(client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    ds = await _dataset(client, headers)
    created = await client.post(
        f"/v1/datasets/{ds['id']}/document/create-by-text",
        json={"name": "a", "text": "rockets"},
        headers=headers,
    )
    doc_id = created.json()["document"]["id"]
    r = await client.delete(f"/v1/datasets/{ds['id']}/documents/{doc_id}", headers=headers)
    assert r.status_code == 204
    again = await client.delete(f"/v1/datasets/{ds['id']}/documents/{doc_id}", headers=headers)
    assert again.status_code == 404 and again.json()["message"] == "Document Not Exists."
    r = await client.post(f"/v1/datasets/{ds['id']}/retrieve", json={"query": "rockets"}, headers=headers)
    assert r.json()["records"] == []
    assert (await client.delete(f"/v1/datasets/{ds['id']}", headers=headers)).status_code == 204
    gone = await client.get(f"/v1/datasets/{ds['id']}/documents", headers=headers)
    assert gone.status_code == 404 and gone.json()["message"] == "Dataset not found."


async def test_dataset_detail_and_update(client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    made = await _dataset(client, headers, name="handbook", description="Staff rules.")
    other = await _dataset(client, headers, name="other")
    r = await client.get(f"/v1/datasets/{made['id']}", headers=headers)
    assert r.status_code == 200 and r.json() == made
    r = await client.patch(
        f"/v1/datasets/{made['id']}",
        json={"name": "staff handbook", "description": "All the rules.", "retrieval_model": {"top_k": 7}},
        headers=headers,
    )
    assert r.status_code == 200, r.text
    updated = r.json()
    assert (updated["name"], updated["description"]) == ("staff handbook", "All the rules.")
    assert updated["retrieval_model_dict"]["top_k"] == 7
    assert (await client.get(f"/v1/datasets/{made['id']}", headers=headers)).json()[
        "name"
    ] == "staff handbook"
    r = await client.patch(f"/v1/datasets/{made['id']}", json={"name": "other"}, headers=headers)
    assert (r.status_code, r.json()["code"]) == (409, "dataset_name_duplicate")
    r = await client.patch(f"/v1/datasets/{made['id']}", json={"name": ""}, headers=headers)
    assert r.status_code == 400 and r.json()["code"] == "invalid_param"
    r = await client.patch(
        f"/v1/datasets/{other['id']}", content=b"{bad", headers={"Authorization": "Bearer no"}
    )
    assert r.status_code == 401  # the key before the body
    for method in ("GET", "PATCH"):
        r = await client.request(
            method, "/v1/datasets/00000000-0000-4000-8000-000000000000", json={}, headers=headers
        )
        assert r.status_code == 404, method


@pytest.mark.parametrize(
    "path",
    ["/v1/datasets", "/v1/datasets/x/document/create-by-text", "/v1/datasets/x/retrieve"],
)
async def test_a_bad_key_is_401_before_a_broken_body(client: httpx.AsyncClient, path: str) -> None:
    r = await client.post(path, content=b"{broken", headers={"Authorization": "Bearer dataset-nope"})
    assert r.status_code == 401 and r.headers["www-authenticate"] == 'Bearer realm="api"'


async def test_document_detail_and_status_filter(client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    ds = await _dataset(client, headers)
    ids = []
    for name in ("a.txt", "b.txt"):
        body = {"name": name, "text": f"Text of {name}.", "indexing_technique": "economy"}
        r = await client.post(f"/v1/datasets/{ds['id']}/document/create-by-text", json=body, headers=headers)
        ids.append(r.json()["document"]["id"])
    listed = (await client.get(f"/v1/datasets/{ds['id']}/documents", headers=headers)).json()["data"]
    r = await client.get(f"/v1/datasets/{ds['id']}/documents/{ids[0]}", headers=headers)
    item, detail = next(d for d in listed if d["id"] == ids[0]), r.json()
    # Dify's detail shape (DocumentApi.get), not the list item's
    assert r.status_code == 200 and set(detail) == DETAIL_KEYS
    assert all(detail[k] == item[k] for k in DETAIL_KEYS & set(item))
    assert detail["segment_count"] >= 1 and detail["average_segment_length"] > 0
    assert detail["dataset_process_rule"] == {} and detail["completed_at"] is not None
    only = await client.get(f"/v1/datasets/{ds['id']}/documents/{ids[0]}?metadata=only", headers=headers)
    assert set(only.json()) == {"id", "doc_type", "doc_metadata"}
    without = await client.get(
        f"/v1/datasets/{ds['id']}/documents/{ids[0]}?metadata=without", headers=headers
    )
    assert set(without.json()) == DETAIL_KEYS - {"doc_type", "doc_metadata"}
    missing = await client.get(f"/v1/datasets/{ds['id']}/documents/{ds['id']}", headers=headers)
    assert (missing.status_code, missing.json()["message"]) == (404, "Document Not Exists.")

    async def filtered(status: str, **params: Any) -> tuple[list[str], int]:
        r = await client.get(
            f"/v1/datasets/{ds['id']}/documents", params={"status": status, **params}, headers=headers
        )
        return sorted(d["id"] for d in r.json()["data"]), r.json()["total"]

    assert await filtered("available") == (sorted(ids), 2)
    assert (await filtered("available", limit=1))[1] == 2
    assert await filtered("error") == ([], 0)


async def test_document_segments(client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    ds = await _dataset(client, headers)
    text = "Leave is 25 days.\n\nThe office opens at 8.\n\nLunch is at noon."
    body = {
        "name": "rules.txt",
        "text": text,
        "indexing_technique": "economy",
        "process_rule": {
            "mode": "custom",
            "rules": {"segmentation": {"separator": "\n\n", "max_tokens": 10}},
        },
    }
    r = await client.post(f"/v1/datasets/{ds['id']}/document/create-by-text", json=body, headers=headers)
    doc = r.json()["document"]["id"]
    r = await client.get(f"/v1/datasets/{ds['id']}/documents/{doc}/segments", headers=headers)
    page = r.json()
    assert (
        r.status_code == 200 and page["total"] == len(page["data"]) >= 2 and page["doc_form"] == "text_model"
    )
    assert [g["position"] for g in page["data"]] == sorted(g["position"] for g in page["data"])
    assert all(g["document_id"] == doc and g["status"] == "completed" for g in page["data"])
    assert "Leave is 25 days." in page["data"][0]["content"]
    r = await client.get(
        f"/v1/datasets/{ds['id']}/documents/{doc}/segments", params={"keyword": "OFFICE"}, headers=headers
    )
    assert [g["content"] for g in r.json()["data"]] == [
        g["content"] for g in page["data"] if "office" in g["content"]
    ]
    r = await client.get(
        f"/v1/datasets/{ds['id']}/documents/{doc}/segments", params={"limit": 1}, headers=headers
    )
    assert len(r.json()["data"]) == 1 and r.json()["has_more"] is True
    r = await client.get(f"/v1/datasets/{ds['id']}/documents/{ds['id']}/segments", headers=headers)
    assert (r.status_code, r.json()["message"]) == (404, "Document Not Exists.")


async def test_routes_of_features_datasets_lack_say_so(
    client: httpx.AsyncClient, headers: dict[str, str]
) -> None:
    ds = (await _dataset(client, headers))["id"]
    segment = f"/v1/datasets/{ds}/documents/d/segments/s"
    for method, path in [
        ("GET", f"{segment}/child_chunks"),
        ("POST", f"{segment}/child_chunks"),
        ("PATCH", f"{segment}/child_chunks/c"),
        ("DELETE", f"{segment}/child_chunks/c"),
        ("GET", f"/v1/datasets/{ds}/pipeline/datasource-plugins"),
        ("POST", f"/v1/datasets/{ds}/pipeline/datasource/nodes/n/run"),
        ("POST", f"/v1/datasets/{ds}/pipeline/run"),
        ("POST", "/v1/datasets/pipeline/file-upload"),
    ]:
        r = await client.request(method, path, headers=headers)
        assert (r.status_code, r.json()["code"]) == (400, "not_supported"), (method, path)
        assert "not supported" in r.json()["message"]
        assert (await client.request(method, path)).status_code == 401  # the key first


async def test_workspace_models_list_the_embedding_model(
    client: httpx.AsyncClient, headers: dict[str, str]
) -> None:
    r = await client.get("/v1/workspaces/current/models/model-types/text-embedding", headers=headers)
    [provider] = r.json()["data"]
    [model] = provider["models"]
    assert model["model"] == "all-MiniLM-L6-v2" and model["model_type"] == "text-embedding"
    # that name makes a high_quality dataset on the embedded model
    body = {"name": "Vectors", "indexing_technique": "high_quality", "embedding_model": model["model"]}
    assert (await client.post("/v1/datasets", json=body, headers=headers)).status_code == 200
    r = await client.get("/v1/workspaces/current/models/model-types/llm", headers=headers)
    assert r.json() == {"data": []}
    assert (await client.get("/v1/workspaces/current/models/model-types/llm")).status_code == 401
