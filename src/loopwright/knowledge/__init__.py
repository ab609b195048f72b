"""Knowledge bases: datasets of documents split into segments, keyword (FTS5/BM25) and vector
(sqlite-vec or LanceDB) search, and Dify-style citations. See docs/knowledge.md."""

from loopwright.knowledge.citations import merge_retriever_resources, retriever_resources
from loopwright.knowledge.connection import knowledge_path
from loopwright.knowledge.embeddings import Embedder, EmbeddingError, MiniLMEmbedder, OpenAIEmbedder
from loopwright.knowledge.entities import Dataset, Document, Hit, RetrievalModel, Segment
from loopwright.knowledge.filters import Condition, MetadataFilter
from loopwright.knowledge.kb import DatasetExistsError, DatasetNotFoundError, KnowledgeBase
from loopwright.knowledge.store import KnowledgeStore
from loopwright.knowledge.vectors import LanceVectorStore, SqliteVecStore, VectorStore

__all__ = [
    "Condition",
    "Dataset",
    "DatasetExistsError",
    "DatasetNotFoundError",
    "Document",
    "Embedder",
    "EmbeddingError",
    "Hit",
    "KnowledgeBase",
    "KnowledgeStore",
    "LanceVectorStore",
    "MetadataFilter",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "RetrievalModel",
    "Segment",
    "SqliteVecStore",
    "VectorStore",
    "knowledge_path",
    "merge_retriever_resources",
    "retriever_resources",
]
