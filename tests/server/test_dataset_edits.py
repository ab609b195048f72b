"""Dify's Knowledge API writes, in process on a real SQLite file: documents updated by text or file,
segments created, read, updated and deleted — and retrieval seeing every change. Error bodies are
Dify's (``controllers/service_api/dataset/segment.py``, ``document.py``)."""

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


class Api:
    def __init__(self, client: httpx.AsyncClient, headers: dict[str, str]) -> None:
        self.client, self.headers = client, headers

    async def call(self, method: str, path: str, status: int = 200, **kw: Any) -> Any:
        r = await self.client.request(method, f"/v1{path}", headers=self.headers, **kw)
        assert r.status_code == status, r.text
        return r.json() if r.content else None

    async def dataset(self, **body: Any) -> str:
        created = await self.call("POST", "/datasets", json={"name": "Handbook", **body})
        return str(created["id"])

    async def document(self, ds: str, name: str, text: str) -> str:
        body = {"name": name, "text": text, "indexing_technique": "economy"}
        created = await self.call("POST", f"/datasets/{ds}/document/create-by-text", json=body)
        return str(created["document"]["id"])

    async def hits(self, ds: str, query: str) -> list[str]:
        body = {"query": query, "retrieval_model": {"search_method": "keyword_search", "top_k": 10}}
        found = await self.call("POST", f"/datasets/{ds}/retrieve", json=body)
        return [r["segment"]["content"] for r in found["records"]]


@pytest.fixture
def api(client: httpx.AsyncClient, headers: dict[str, str]) -> Api:
    return Api(client, headers)


def dify_error(status: int, code: str, message: str) -> dict[str, Any]:
    return {"code": code, "message": message, "status": status}


async def test_update_a_document_by_text_keeps_its_id_and_replaces_its_segments(api: Api) -> None:
    ds = await api.dataset()
    doc = await api.document(ds, "vacation.txt", "Employees get 25 vacation days per year.")
    assert await api.hits(ds, "vacation days") == ["Employees get 25 vacation days per year."]

    body = {"name": "leave.txt", "text": "Employees get 30 holiday days per year."}
    for path in ("update-by-text", "update_by_text"):
        updated = await api.call("POST", f"/datasets/{ds}/documents/{doc}/{path}", json=body)
        assert updated["document"]["id"] == doc and updated["document"]["name"] == "leave.txt"
        assert updated["document"]["indexing_status"] == "waiting" and updated["batch"]
    status = await api.call("GET", f"/datasets/{ds}/documents/{updated['batch']}/indexing-status")
    assert status["data"][0]["indexing_status"] == "completed"
    assert await api.hits(ds, "vacation") == []
    assert await api.hits(ds, "holiday") == ["Employees get 30 holiday days per year."]
    listed = await api.call("GET", f"/datasets/{ds}/documents")
    assert [d["id"] for d in listed["data"]] == [doc]
    segments = await api.call("GET", f"/datasets/{ds}/documents/{doc}/segments")
    assert segments["total"] == 1

    renamed = await api.call(
        "POST", f"/datasets/{ds}/documents/{doc}/update-by-text", json={"name": "pto.txt"}
    )
    assert renamed["document"]["name"] == "pto.txt" and renamed["document"]["indexing_status"] == "completed"
    assert await api.hits(ds, "holiday") == ["Employees get 30 holiday days per year."]  # rename only


async def test_update_a_document_by_file(api: Api) -> None:
    ds = await api.dataset()
    doc = await api.document(ds, "a.txt", "The office opens at nine.")
    files = {"file": ("hours.md", b"# Hours\n\nThe office opens at eight.", "text/markdown")}
    data = {"data": json.dumps({"process_rule": {"mode": "automatic"}})}
    for path in ("update-by-file", "update_by_file"):
        updated = await api.call("POST", f"/datasets/{ds}/documents/{doc}/{path}", files=files, data=data)
        assert updated["document"]["id"] == doc and updated["document"]["name"] == "hours.md"
    assert await api.hits(ds, "eight") and not await api.hits(ds, "nine")
    bad = {"file": ("x.exe", b"MZ", "application/x-msdownload")}
    r = await api.client.post(
        f"/v1/datasets/{ds}/documents/{doc}/update-by-file", files=bad, headers=api.headers
    )
    assert (r.status_code, r.json()) == (
        415,
        dify_error(415, "unsupported_file_type", "File type not allowed."),
    )


async def test_document_update_errors(api: Api, knowledge: KnowledgeBase) -> None:
    ds = await api.dataset()
    doc = await api.document(ds, "a.txt", "text")
    path = f"/datasets/{ds}/documents/{doc}/update-by-text"
    r = await api.call("POST", path, 400, json={"text": "new text"})
    assert r == dify_error(400, "invalid_param", "name is required when text is provided")
    r = await api.call("POST", f"/datasets/{ds}/documents/nope/update-by-text", 404, json={"name": "x"})
    assert r == dify_error(404, "not_found", "Document not found")
    r = await api.call("POST", f"/datasets/nope/documents/{doc}/update-by-text", 404, json={"name": "x"})
    assert r == dify_error(404, "not_found", "Dataset not found.")
    await knowledge.store.set_status(doc, "indexing")
    r = await api.call("POST", path, 400, json={"name": "a.txt", "text": "again"})
    assert r == dify_error(400, "invalid_param", "Document is not available")
    r = await api.client.post(
        f"/v1{path}", content=b"{broken", headers={"Authorization": "Bearer dataset-no"}
    )
    assert r.status_code == 401


async def test_segments_create_read_update_delete(api: Api) -> None:
    ds = await api.dataset()
    doc = await api.document(ds, "rules.txt", "Badges must be worn at all times.")
    base = f"/datasets/{ds}/documents/{doc}/segments"
    created = await api.call(
        "POST",
        base,
        json={"segments": [{"content": "Parking is free on weekends."}, {"content": " Lunch at noon. "}]},
    )
    assert created["doc_form"] == "text_model"
    parking, lunch = created["data"]
    assert (parking["content"], parking["position"], lunch["content"], lunch["position"]) == (
        "Parking is free on weekends.",
        2,
        "Lunch at noon.",
        3,
    )
    assert parking["document_id"] == doc and parking["word_count"] == len("Parking is free on weekends.")
    assert await api.hits(ds, "parking") == ["Parking is free on weekends."]
    listed = await api.call("GET", base)
    assert listed["total"] == 3 and [s["position"] for s in listed["data"]] == [1, 2, 3]
    detail = await api.call("GET", f"/datasets/{ds}/documents/{doc}")
    assert detail["segment_count"] == 3
    item = next(d for d in (await api.call("GET", f"/datasets/{ds}/documents"))["data"] if d["id"] == doc)
    assert item["word_count"] == sum(s["word_count"] for s in listed["data"])

    one = await api.call("GET", f"{base}/{parking['id']}")
    assert one == {"data": {**parking, "hit_count": 1}, "doc_form": "text_model"}  # one retrieval
    changed = await api.call(
        "POST",
        f"{base}/{parking['id']}",
        json={"segment": {"content": "Parking costs 2 euros.", "keywords": ["x"]}},
    )
    assert changed["data"]["id"] == parking["id"] and changed["data"]["content"] == "Parking costs 2 euros."
    assert await api.hits(ds, "weekends") == [] and await api.hits(ds, "euros") == ["Parking costs 2 euros."]

    assert await api.call("DELETE", f"{base}/{parking['id']}", 204) is None
    assert await api.hits(ds, "parking") == []
    assert (await api.call("GET", base))["total"] == 2
    missing = await api.call("GET", f"{base}/{parking['id']}", 404)
    assert missing == dify_error(404, "not_found", "Segment not found.")


async def test_segment_errors_are_difys(api: Api) -> None:
    ds = await api.dataset()
    doc = await api.document(ds, "a.txt", "Some text here.")
    other = await api.document(ds, "b.txt", "Other text here.")
    base = f"/datasets/{ds}/documents/{doc}/segments"
    assert await api.call("POST", base, 400, json={}) == {"error": "Segments is required"}
    empty = await api.call("POST", base, 400, json={"segments": [{"content": "ok"}, {"content": "  "}]})
    assert empty == dify_error(400, "invalid_param", "Content is empty")
    assert (await api.call("GET", base))["total"] == 1  # nothing was added: all are checked first
    r = await api.call("POST", f"/datasets/{ds}/documents/nope/segments", 404, json={"segments": []})
    assert r == dify_error(404, "not_found", "Document not found.")
    [seg] = (await api.call("GET", f"/datasets/{ds}/documents/{other}/segments"))["data"]
    r = await api.call("GET", f"{base}/{seg['id']}", 404)  # another document's segment
    assert r == dify_error(404, "not_found", "Segment not found.")
    r = await api.call("POST", f"{base}/{seg['id']}", 404, json={"segment": {"content": "x"}})
    assert r["message"] == "Segment not found."
    r = await api.call("POST", f"/datasets/{ds}/documents/{other}/segments/{seg['id']}", 400, json={})
    assert r["code"] == "invalid_param" and "segment" in r["message"]


async def test_qa_segments_need_an_answer(api: Api) -> None:
    ds = await api.dataset(doc_form="qa_model", name="FAQ")
    created = await api.call(
        "POST",
        f"/datasets/{ds}/document/create-by-text",
        json={"name": "faq.txt", "text": "Q: When do we open?\nA: At nine.", "indexing_technique": "economy"},
    )
    doc = created["document"]["id"]
    base = f"/datasets/{ds}/documents/{doc}/segments"
    r = await api.call("POST", base, 400, json={"segments": [{"content": "Where is lunch?"}]})
    assert r == dify_error(400, "invalid_param", "Answer is required")
    r = await api.call("POST", base, 400, json={"segments": [{"content": "Where?", "answer": "   "}]})
    assert r == dify_error(400, "invalid_param", "Answer is empty")
    [seg] = (
        await api.call(
            "POST", base, json={"segments": [{"content": "Where is lunch?", "answer": "Floor 2."}]}
        )
    )["data"]
    assert (seg["content"], seg["answer"]) == ("Where is lunch?", "Floor 2.")
    changed = await api.call("POST", f"{base}/{seg['id']}", json={"segment": {"answer": "Floor 3."}})
    assert (changed["data"]["content"], changed["data"]["answer"]) == ("Where is lunch?", "Floor 3.")
    assert changed["doc_form"] == "qa_model"


async def test_metadata_fields_and_document_values(api: Api) -> None:
    ds = await api.dataset()
    doc = await api.document(ds, "a.txt", "Alpha text about budgets.")
    other = await api.document(ds, "b.txt", "Beta text about budgets.")
    author = await api.call(
        "POST", f"/datasets/{ds}/metadata", 201, json={"type": "string", "name": "author"}
    )
    year = await api.call("POST", f"/datasets/{ds}/metadata", 201, json={"type": "number", "name": "year"})
    assert (author["type"], author["name"], year["type"]) == ("string", "author", "number") and author["id"]

    ops = {
        "operation_data": [
            {
                "document_id": doc,
                "metadata_list": [
                    {"id": author["id"], "name": "author", "value": "Ann"},
                    {"id": year["id"], "name": "year", "value": 2024},
                ],
            },
            {"document_id": other, "metadata_list": [{"id": author["id"], "name": "author", "value": "Bo"}]},
        ]
    }
    assert await api.call("POST", f"/datasets/{ds}/documents/metadata", json=ops) == {"result": "success"}
    listed = await api.call("GET", f"/datasets/{ds}/metadata")
    assert listed == {
        "doc_metadata": [{**author, "count": 2}, {**year, "count": 1}],
        "built_in_field_enabled": False,
    }
    detail = await api.call("GET", f"/datasets/{ds}/documents/{doc}")
    assert detail["doc_metadata"] == [
        {"id": author["id"], "name": "author", "type": "string", "value": "Ann"},
        {"id": year["id"], "name": "year", "type": "number", "value": 2024},
    ]
    dataset = await api.call("GET", f"/datasets/{ds}")
    assert dataset["doc_metadata"] == [author, year] and dataset["built_in_field_enabled"] is False

    # retrieval filters on the values
    body = {
        "query": "budgets",
        "retrieval_model": {
            "search_method": "keyword_search",
            "top_k": 5,
            "metadata_filtering_conditions": {
                "logical_operator": "and",
                "conditions": [{"name": "author", "comparison_operator": "is", "value": "Bo"}],
            },
        },
    }
    found = await api.call("POST", f"/datasets/{ds}/retrieve", json=body)
    assert [r["segment"]["document_id"] for r in found["records"]] == [other]

    renamed = await api.call("PATCH", f"/datasets/{ds}/metadata/{author['id']}", json={"name": "writer"})
    assert renamed == {**author, "name": "writer"}
    detail = await api.call("GET", f"/datasets/{ds}/documents/{other}")
    assert detail["doc_metadata"] == [{"id": author["id"], "name": "writer", "type": "string", "value": "Bo"}]

    built = await api.call("GET", f"/datasets/{ds}/metadata/built-in")
    assert [f["name"] for f in built["fields"]] == [
        "document_name",
        "uploader",
        "upload_date",
        "last_update_date",
        "source",
    ]
    assert await api.call("POST", f"/datasets/{ds}/metadata/built-in/enable") == {"result": "success"}
    names = {m["name"]: m for m in (await api.call("GET", f"/datasets/{ds}/documents/{doc}"))["doc_metadata"]}
    assert names["document_name"] == {
        "id": "built-in",
        "name": "document_name",
        "type": "string",
        "value": "a.txt",
    }
    assert names["writer"]["value"] == "Ann"
    await api.call("POST", f"/datasets/{ds}/metadata/built-in/disable")
    names = {m["name"] for m in (await api.call("GET", f"/datasets/{ds}/documents/{doc}"))["doc_metadata"]}
    assert names == {"writer", "year"}

    assert await api.call("DELETE", f"/datasets/{ds}/metadata/{year['id']}", 204) is None
    listed = await api.call("GET", f"/datasets/{ds}/metadata")
    assert [(m["name"], m["count"]) for m in listed["doc_metadata"]] == [("writer", 2)]
    detail = await api.call("GET", f"/datasets/{ds}/documents/{doc}")
    assert [m["name"] for m in detail["doc_metadata"]] == ["writer"]


async def test_metadata_errors_are_difys(api: Api) -> None:
    ds = await api.dataset()
    doc = await api.document(ds, "a.txt", "text")
    field = await api.call("POST", f"/datasets/{ds}/metadata", 201, json={"type": "time", "name": "when"})
    base = f"/datasets/{ds}/metadata"
    again = await api.call("POST", base, 400, json={"type": "string", "name": "when"})
    assert again == dify_error(400, "invalid_param", "Metadata name already exists.")
    built_in = await api.call("POST", base, 400, json={"type": "string", "name": "source"})
    assert built_in == dify_error(400, "invalid_param", "Metadata name already exists in Built-in fields.")
    bad_type = await api.call("POST", base, 400, json={"type": "date", "name": "d"})
    assert bad_type["code"] == "invalid_param"
    missing = await api.call("PATCH", f"{base}/nope", 404, json={"name": "x"})
    assert missing == dify_error(404, "not_found", "Metadata not found.")
    assert (await api.call("DELETE", f"{base}/nope", 404))["message"] == "Metadata not found."
    ops = {"operation_data": [{"document_id": "nope", "metadata_list": []}]}
    r = await api.call("POST", f"/datasets/{ds}/documents/metadata", 404, json=ops)
    assert r == dify_error(404, "not_found", "Document not found.")
    ops = {
        "operation_data": [{"document_id": doc, "metadata_list": [{"id": "x", "name": "when", "value": 1}]}]
    }
    r = await api.call("POST", f"/datasets/{ds}/documents/metadata", 404, json=ops)
    assert r["message"] == "Metadata not found."
    assert (await api.call("GET", f"/datasets/{ds}/metadata"))["doc_metadata"] == [{**field, "count": 0}]
    r = await api.call("GET", "/datasets/nope/metadata", 404)
    assert r == dify_error(404, "not_found", "Dataset not found.")


async def test_records_and_documents_carry_difys_newer_keys(api: Api) -> None:
    ds = await api.dataset()
    doc = await api.document(ds, "notes", "Quarterly budgets are due in March.")
    found = await api.call(
        "POST", f"/datasets/{ds}/retrieve", json={"query": "budgets", "retrieval_model": {"top_k": 1}}
    )
    [record] = found["records"]
    assert (record["child_chunks"], record["files"], record["summary"]) == ([], [], None)
    assert record["segment"]["sign_content"] == record["segment"]["content"]
    assert record["segment"]["document"] == {
        "id": doc,
        "data_source_type": "upload_file",
        "name": "notes",
        "doc_type": None,
        "doc_metadata": None,
    }
    detail = next(d for d in (await api.call("GET", f"/datasets/{ds}/documents"))["data"] if d["id"] == doc)
    assert detail["data_source_info"] == {"upload_file_id": doc}
    assert detail["data_source_detail_dict"] == {
        "upload_file": {"id": doc, "name": "notes", "extension": "txt"}
    }
    assert (detail["summary_index_status"], detail["need_summary"]) == (None, False)
    dataset = await api.call("GET", f"/datasets/{ds}")
    assert dataset["description"] == "" and dataset["total_documents"] == 1 and dataset["enable_api"] is True


async def test_document_status_actions(api: Api, knowledge: KnowledgeBase) -> None:
    ds = await api.dataset()
    doc = await api.document(ds, "a.txt", "Parking is free on weekends.")
    other = await api.document(ds, "b.txt", "Parking costs money on weekdays.")
    status = f"/datasets/{ds}/documents/status"

    async def shown(document_id: str) -> tuple[bool, bool, str]:
        d = await api.call("GET", f"/datasets/{ds}/documents/{document_id}")
        return d["enabled"], d["archived"], d["display_status"]

    async def retrieved() -> set[str]:
        body = {"query": "parking", "retrieval_model": {"search_method": "keyword_search", "top_k": 5}}
        return {
            r["segment"]["document_id"]
            for r in (await api.call("POST", f"/datasets/{ds}/retrieve", json=body))["records"]
        }

    assert await retrieved() == {doc, other}
    ok = {"result": "success"}
    assert await api.call("PATCH", f"{status}/disable", json={"document_ids": [doc, "unknown"]}) == ok
    assert await shown(doc) == (False, False, "disabled") and await retrieved() == {other}
    listed = await api.call("GET", f"/datasets/{ds}/documents", params={"status": "disabled"})
    assert [d["id"] for d in listed["data"]] == [doc]
    assert await api.call("PATCH", f"{status}/archive", json={"document_ids": [other]}) == ok
    assert await shown(other) == (True, True, "archived") and await retrieved() == set()
    await api.call("PATCH", f"{status}/enable", json={"document_ids": [doc]})
    await api.call("PATCH", f"{status}/un_archive", json={"document_ids": [other]})
    assert await shown(doc) == (True, False, "available") and await retrieved() == {doc, other}

    await api.call("PATCH", f"{status}/disable", json={"document_ids": [doc]})
    r = await api.call(
        "POST", f"/datasets/{ds}/documents/{doc}/segments", 404, json={"segments": [{"content": "x"}]}
    )
    assert r == dify_error(404, "not_found", "Document is disabled.")
    r = await api.call("POST", f"/datasets/{ds}/documents/{doc}/update-by-text", 400, json={"name": "x"})
    assert r == dify_error(400, "invalid_param", "Document is not available")
    await api.call("PATCH", f"{status}/enable", json={"document_ids": [doc]})

    r = await api.call("PATCH", f"{status}/delete", 400, json={"document_ids": [doc]})
    assert r == dify_error(400, "invalid_action", "Invalid action: delete")
    await knowledge.store.set_status(doc, "indexing")
    r = await api.call("PATCH", f"{status}/disable", 400, json={"document_ids": [other, doc]})
    assert r == dify_error(400, "invalid_action", "a.txt is being indexed, please try again later")
    assert (await shown(other))[0] is True  # nothing of the batch was changed
    await knowledge.store.set_status(doc, "error", "broken")
    r = await api.call("PATCH", f"{status}/disable", 400, json={"document_ids": [doc]})
    assert r == dify_error(400, "invalid_action", "Document: a.txt is not completed.")


async def test_knowledge_tags(api: Api) -> None:
    hr = await api.dataset(name="HR")
    it = await api.dataset(name="IT")
    policy = await api.call("POST", "/datasets/tags", json={"name": "policy"})
    assert (policy["name"], policy["type"], policy["binding_count"]) == ("policy", "knowledge", "0")
    manual = await api.call("POST", "/datasets/tags", json={"name": "manual"})
    assert (
        await api.call(
            "POST", "/datasets/tags/binding", 204, json={"tag_ids": [policy["id"]], "target_id": hr}
        )
        is None
    )
    await api.call(
        "POST", "/datasets/tags/binding", 204, json={"tag_ids": [policy["id"], manual["id"]], "target_id": it}
    )
    await api.call(
        "POST", "/datasets/tags/binding", 204, json={"tag_ids": [policy["id"]], "target_id": it}
    )  # again: once

    listed = {t["name"]: t["binding_count"] for t in await api.call("GET", "/datasets/tags")}
    assert listed == {"policy": "2", "manual": "1"}
    assert await api.call("GET", f"/datasets/{it}/tags") == {
        "data": [{"id": manual["id"], "name": "manual"}, {"id": policy["id"], "name": "policy"}],
        "total": 2,
    }
    detail = await api.call("GET", f"/datasets/{hr}")
    assert detail["tags"] == [{"id": policy["id"], "name": "policy", "type": "knowledge"}]
    only_manual = await api.call("GET", "/datasets", params={"tag_ids": [manual["id"]]})
    assert [d["id"] for d in only_manual["data"]] == [it] and only_manual["total"] == 1

    renamed = await api.call("PATCH", "/datasets/tags", json={"tag_id": policy["id"], "name": "rules"})
    assert (renamed["name"], renamed["binding_count"]) == ("rules", "2")
    await api.call("POST", "/datasets/tags/unbinding", 204, json={"tag_id": policy["id"], "target_id": hr})
    assert (await api.call("GET", f"/datasets/{hr}/tags"))["total"] == 0
    await api.call("DELETE", "/datasets/tags", 204, json={"tag_id": manual["id"]})
    assert [t["name"] for t in await api.call("GET", "/datasets/tags")] == ["rules"]
    assert (await api.call("GET", f"/datasets/{it}/tags"))["data"] == [{"id": policy["id"], "name": "rules"}]

    taken = await api.call("POST", "/datasets/tags", 400, json={"name": "rules"})
    assert taken == dify_error(400, "invalid_param", "Tag name already exists")
    assert (await api.call("POST", "/datasets/tags", 400, json={"name": "x" * 51}))["code"] == "invalid_param"
    gone = await api.call("PATCH", "/datasets/tags", 404, json={"tag_id": manual["id"], "name": "m"})
    assert gone == dify_error(404, "not_found", "Tag not found")
    r = await api.call(
        "POST", "/datasets/tags/binding", 404, json={"tag_ids": [policy["id"]], "target_id": "nope"}
    )
    assert r == dify_error(404, "not_found", "Dataset not found.")
    await api.call("DELETE", f"/datasets/{it}", 204)
    assert (await api.call("GET", "/datasets/tags"))[0]["binding_count"] == "0"  # the dataset's bindings went
