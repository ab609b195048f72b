"""The dataset retriever tool: one tool per knowledge base, as Dify's ``DatasetRetrieverTool``.

Name ``dataset_<dataset id with '-' → '_'>``, the dataset's description (newlines removed) or Dify's
default sentence, one ``query`` parameter. The observation is the retrieved segments, best first,
joined with newlines (``question:… answer:…`` for Q&A segments); an empty query gets Dify's ``please
input query``. For citations the tool also yields ``VariableMessage("retriever_resources", [...])``
with Dify's resource fields (see ``knowledge/citations.py``), and retrieved segments' hit counts go up.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from loopwright.knowledge.citations import retriever_resources
from loopwright.knowledge.entities import Dataset
from loopwright.knowledge.filters import MetadataFilter
from loopwright.knowledge.kb import KnowledgeBase
from loopwright.tools.base import (
    RETRIEVER_RESOURCES,
    TextMessage,
    Tool,
    ToolContext,
    ToolOutput,
    ToolParameter,
    VariableMessage,
)

EMPTY_QUERY_TEXT = "please input query"
QUERY_DESCRIPTION = "Query for the dataset to be used to retrieve the dataset."
RESOURCES_VARIABLE = RETRIEVER_RESOURCES

ResourceSink = Callable[[list[dict[str, Any]]], None]


def tool_name(dataset_id: str) -> str:
    return f"dataset_{dataset_id.replace('-', '_')}"


def tool_description(dataset: Dataset) -> str:
    text = dataset.description or f"useful for when you want to answer queries about the {dataset.name}"
    return text.replace("\n", "").replace("\r", "")


def dataset_retriever_tool(
    dataset: Dataset,
    kb: KnowledgeBase,
    *,
    top_k: int | None = None,
    score_threshold: float | None = None,
    metadata_filter: MetadataFilter | None = None,
    return_resource: bool = True,
    retriever_from: str = "dev",
    on_resources: ResourceSink | None = None,
) -> Tool:
    """The retriever tool of ``dataset``. ``top_k``/``score_threshold`` override the dataset's
    retrieval settings; ``metadata_filter`` limits the documents searched. ``on_resources`` also
    receives each call's resources (for a caller that collects citations without reading tool
    outputs)."""
    dataset_id = dataset.id

    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        query = str(args.get("query") or "")
        if not query.strip():
            yield TextMessage(EMPTY_QUERY_TEXT)
            return
        current = await kb.find_dataset(dataset_id)
        if current is None:  # deleted since the tool was made: Dify answers with nothing
            yield TextMessage("")
            return
        hits = await kb.search(
            current, query, top_k=top_k, score_threshold=score_threshold, metadata_filter=metadata_filter
        )
        hits = sorted(hits, key=lambda h: h.score, reverse=True)
        yield TextMessage("\n".join(h.segment.sign_content() for h in hits))
        if return_resource and hits:
            resources = retriever_resources(current, hits, retriever_from=retriever_from)
            if on_resources is not None:
                on_resources(resources)
            yield VariableMessage(
                RESOURCES_VARIABLE, resources, internal=True
            )  # for message_end, not the model

    return Tool(
        name=tool_name(dataset_id),
        description=tool_description(dataset),
        parameters=(ToolParameter("query", "string", required=True, description=QUERY_DESCRIPTION),),
        invoke=invoke,
        label=dataset.name,
    )


class KnowledgeToolset:
    """Retriever tools for several datasets (ids or names). As in Dify, a dataset that is missing or
    has no completed document gets no tool. Options are passed to :func:`dataset_retriever_tool`."""

    def __init__(self, kb: KnowledgeBase, datasets: Sequence[str | Dataset], **options: Any) -> None:
        self.kb = kb
        self.datasets = list(datasets)
        self.options = options

    async def get_tools(self) -> Sequence[Tool]:
        tools: list[Tool] = []
        for item in self.datasets:
            key = item.id if isinstance(item, Dataset) else item
            dataset = await self.kb.find_dataset(key)
            if dataset is None or dataset.document_count == 0:
                continue
            tools.append(dataset_retriever_tool(dataset, self.kb, **self.options))
        return tools
