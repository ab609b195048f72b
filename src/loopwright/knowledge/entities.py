"""What a knowledge base holds: datasets, documents, segments, retrieval settings and search hits.

Field names follow Dify's (``search_method``, ``top_k``, ``score_threshold_enabled``, ``doc_form``…) so
settings can be copied from a Dify dataset or API call as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

SearchMethod = Literal["keyword_search", "full_text_search", "semantic_search", "hybrid_search"]
SEARCH_METHODS: tuple[SearchMethod, ...] = (
    "keyword_search",
    "full_text_search",
    "semantic_search",
    "hybrid_search",
)
DocumentStatus = Literal["queued", "indexing", "completed", "error"]
DocForm = Literal["text_model", "qa_model"]
VectorBackend = Literal["sqlite-vec", "lancedb"]

DEFAULT_CHUNK_TOKENS = 500  # Dify's automatic segmentation rule
DEFAULT_OVERLAP_TOKENS = 50
# all-MiniLM-L6-v2 reads at most 256 word pieces: longer chunks would be embedded truncated.
MINILM_CHUNK_TOKENS = 200
DEFAULT_SEPARATOR = "\n\n"
DEFAULT_VECTOR_WEIGHT = 0.7  # Dify's hybrid default (weighted score)
DEFAULT_KEYWORD_WEIGHT = 0.3


@dataclass(frozen=True, slots=True)
class RetrievalModel:
    """A dataset's retrieval settings, as Dify's ``retrieval_model``. Reranking models are not
    supported; hybrid search always combines the two scores with ``vector_weight``/``keyword_weight``."""

    search_method: SearchMethod = "semantic_search"
    top_k: int = 2
    score_threshold_enabled: bool = False
    score_threshold: float | None = None
    vector_weight: float = DEFAULT_VECTOR_WEIGHT
    keyword_weight: float = DEFAULT_KEYWORD_WEIGHT

    @property
    def method(self) -> Literal["keyword", "vector", "hybrid"]:
        """The search this setting asks for: full-text and keyword search are both BM25 here."""
        if self.search_method == "semantic_search":
            return "vector"
        if self.search_method == "hybrid_search":
            return "hybrid"
        return "keyword"

    @property
    def threshold(self) -> float:
        return float(self.score_threshold or 0.0) if self.score_threshold_enabled else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Dify's ``retrieval_model_dict`` shape."""
        return {
            "search_method": self.search_method,
            "reranking_enable": False,
            "reranking_mode": "weighted_score" if self.search_method == "hybrid_search" else None,
            "reranking_model": {"reranking_provider_name": "", "reranking_model_name": ""},
            "weights": {
                "weight_type": "customized",
                "vector_setting": {
                    "vector_weight": self.vector_weight,
                    "embedding_provider_name": "",
                    "embedding_model_name": "",
                },
                "keyword_setting": {"keyword_weight": self.keyword_weight},
            },
            "top_k": self.top_k,
            "score_threshold_enabled": self.score_threshold_enabled,
            "score_threshold": self.score_threshold,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, base: RetrievalModel | None = None) -> RetrievalModel:
        """Settings from a Dify ``retrieval_model`` object; missing keys keep ``base``'s values."""
        model = base or cls()
        if not data:
            return model
        changes: dict[str, Any] = {}
        method = data.get("search_method")
        if method is not None:
            if method not in SEARCH_METHODS:
                raise ValueError(f"search_method must be one of {', '.join(SEARCH_METHODS)}, got {method!r}")
            changes["search_method"] = method
        if data.get("top_k") is not None:
            top_k = int(data["top_k"])
            if top_k < 1:
                raise ValueError("top_k must be at least 1")
            changes["top_k"] = top_k
        if data.get("score_threshold_enabled") is not None:
            changes["score_threshold_enabled"] = bool(data["score_threshold_enabled"])
        if "score_threshold" in data:
            value = data["score_threshold"]
            changes["score_threshold"] = None if value is None else float(value)
        weights = data.get("weights")
        if isinstance(weights, dict):
            vector = (weights.get("vector_setting") or {}).get("vector_weight")
            keyword = (weights.get("keyword_setting") or {}).get("keyword_weight")
            if vector is not None:
                changes["vector_weight"] = float(vector)
            if keyword is not None:
                changes["keyword_weight"] = float(keyword)
        return replace(model, **changes)


MetadataType = Literal["string", "number", "time"]


@dataclass(frozen=True, slots=True)
class Tag:
    """A label datasets can carry (Dify's knowledge tags); ``binding_count``: datasets that have it."""

    id: str
    name: str
    binding_count: int = 0


@dataclass(frozen=True, slots=True)
class MetadataField:
    """A metadata field a dataset's documents may carry (Dify's ``DatasetMetadata``)."""

    id: str
    name: str
    type: MetadataType = "string"


@dataclass(frozen=True, slots=True)
class Dataset:
    """A knowledge base. ``embedding`` is ``none`` (keyword search only, Dify's "economy"), ``minilm``
    (the packaged all-MiniLM-L6-v2) or ``openai:<model>`` (an OpenAI-compatible endpoint)."""

    id: str
    name: str
    description: str = ""
    embedding: str = "none"
    embedding_dim: int | None = None
    vector_store: VectorBackend = "sqlite-vec"
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS
    separator: str = DEFAULT_SEPARATOR
    doc_form: DocForm = "text_model"
    remove_extra_spaces: bool = True
    remove_urls_emails: bool = False
    retrieval: RetrievalModel = field(default_factory=RetrievalModel)
    metadata_fields: tuple[MetadataField, ...] = ()
    built_in_field_enabled: bool = False  # Dify's built-in metadata (document name, dates, source)
    created_at: int = 0
    updated_at: int = 0
    document_count: int = 0
    word_count: int = 0

    @property
    def indexing_technique(self) -> Literal["high_quality", "economy"]:
        return "economy" if self.embedding == "none" else "high_quality"

    @property
    def has_vectors(self) -> bool:
        return self.embedding != "none"

    def settings_dict(self) -> dict[str, Any]:
        """What is stored in the dataset row's ``settings`` column."""
        return {
            "embedding": self.embedding,
            "embedding_dim": self.embedding_dim,
            "vector_store": self.vector_store,
            "chunk_tokens": self.chunk_tokens,
            "overlap_tokens": self.overlap_tokens,
            "separator": self.separator,
            "doc_form": self.doc_form,
            "remove_extra_spaces": self.remove_extra_spaces,
            "remove_urls_emails": self.remove_urls_emails,
            "retrieval": self.retrieval.to_dict(),
            "metadata_fields": [{"id": f.id, "name": f.name, "type": f.type} for f in self.metadata_fields],
            "built_in_field_enabled": self.built_in_field_enabled,
        }


@dataclass(frozen=True, slots=True)
class Document:
    """One ingested source. ``status`` goes queued → indexing → completed, or error with ``error``."""

    id: str
    dataset_id: str
    name: str
    position: int
    status: DocumentStatus
    source: str = "text"
    error: str | None = None
    word_count: int = 0
    tokens: int = 0
    segment_count: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    batch: str = ""
    created_at: int = 0
    updated_at: int = 0
    completed_at: int | None = None
    enabled: bool = True  # a disabled or archived document is not retrieved (Dify's status actions)
    archived: bool = False


@dataclass(frozen=True, slots=True)
class Segment:
    """A chunk of a document. Q&A segments hold the question in ``content`` and set ``answer``."""

    id: str
    dataset_id: str
    document_id: str
    position: int
    content: str
    answer: str | None = None
    word_count: int = 0
    tokens: int = 0
    hit_count: int = 0
    seq: int = 0  # the row number that the keyword and vector indexes use
    hash: str = ""
    created_at: int = 0

    def sign_content(self) -> str:
        """The text the retriever tool shows the model (Dify's ``question:… answer:…`` for Q&A)."""
        if self.answer:
            return f"question:{self.content} answer:{self.answer}"
        return self.content

    def resource_content(self) -> str:
        """The text a citation carries (Dify puts a newline before ``answer:`` there)."""
        if self.answer:
            return f"question:{self.content} \nanswer:{self.answer}"
        return self.content


@dataclass(frozen=True, slots=True)
class Hit:
    """A retrieved segment with its score (0..1) and the scores it was made of."""

    segment: Segment
    document_name: str
    score: float
    keyword_score: float | None = None
    vector_score: float | None = None
    document_metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """A segment before it is stored: text (or question) and an optional answer."""

    content: str
    answer: str | None = None
