"""An app's annotation-reply setting: whether a query is answered from its annotations, how close a
match must be and which embedding model measures it.

The app configuration may carry one (``annotation_reply:`` in the YAML, or a Dify export's
``annotation_reply``); the Service API's ``POST /v1/apps/annotation-reply/{action}`` stores one for the
app, which then wins over the configuration's (:mod:`loopwright.app.guards.annotations`).
"""

from __future__ import annotations

import pydantic

DEFAULT_EMBEDDING = "minilm"
# Dify's embedding provider names that mean an OpenAI-compatible endpoint (``openai:<model>``).
OPENAI_PROVIDERS = frozenset(
    {"openai", "openai-compatible", "openai_api_compatible", "langgenius/openai/openai"}
)
LOCAL_PROVIDERS = frozenset({"", "local", "minilm", "loopwright", "sentence-transformers"})


class AnnotationReply(pydantic.BaseModel):
    """Annotation reply: on, the score a match needs (cosine similarity, 0..1; Dify's default 1 is an
    exact match) and the embedding model spec (``minilm`` or ``openai:<model>``)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    enabled: bool = False
    score_threshold: float = pydantic.Field(0.9, ge=0, le=1)
    embedding: str = DEFAULT_EMBEDDING

    @pydantic.field_validator("embedding")
    @classmethod
    def _spec(cls, value: str) -> str:
        from loopwright.knowledge.embeddings import parse_embedding_spec

        spec = parse_embedding_spec(value)
        if spec == "none":
            raise ValueError("annotation reply needs an embedding model (minilm or openai:<model>)")
        return spec


def embedding_spec(provider: str, model: str) -> str:
    """The embedding spec for Dify's ``embedding_provider_name`` and ``embedding_model_name``: the
    packaged MiniLM for a local provider (or a MiniLM model name), else an OpenAI-compatible model.
    Raises ``ValueError`` for a provider loopwright cannot reach."""
    name = provider.strip().lower()
    if name in LOCAL_PROVIDERS or "minilm" in model.lower():
        return DEFAULT_EMBEDDING
    if name in OPENAI_PROVIDERS or name.rsplit("/", 1)[-1] in OPENAI_PROVIDERS:
        if not model.strip():
            raise ValueError("embedding_model_name is required")
        return f"openai:{model.strip()}"
    raise ValueError(
        f"embedding provider {provider!r} is not available; use 'local' (MiniLM) or an OpenAI-compatible one"
    )
