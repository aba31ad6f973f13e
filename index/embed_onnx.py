"""The one-query embedding through ONNX Runtime: the same network, exported once per process.

A recall embeds one short prompt. Through torch and transformers that is ~17 ms of CPU on a
2-core machine, most of it Python dispatch around small matrices; the same graph in ONNX Runtime
takes ~8 ms, and its vectors agree with `Embedder.encode`'s to a cosine of 0.9999999, so they
search the same index. `Embedder._single` checks that agreement on a probe before it uses this
path and keeps torch's when onnxruntime or onnx is missing or the export fails.
"""

from __future__ import annotations

import atexit
import io
import shutil
import sys
import tempfile
import threading
import warnings

import numpy as np

from memoir.cards.config import process_environment_set

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _onnxruntime():
    """onnxruntime, imported so that nothing it writes lands in the user's home.

    Importing it creates a telemetry store (`Microsoft/DeveloperTools/.onnxruntime`: a device id and an
    event database) under `$XDG_CACHE_HOME`, else `~/.cache`, before any setting can turn telemetry
    off. memoir imports it with `XDG_CACHE_HOME` pointed at a private temporary folder that goes when
    the process ends, then turns its telemetry events off.
    """
    if "onnxruntime" not in sys.modules:
        scratch = tempfile.mkdtemp(prefix="memoir-ort-")
        atexit.register(shutil.rmtree, scratch, ignore_errors=True)
        with process_environment_set("XDG_CACHE_HOME", scratch):
            import onnxruntime  # noqa: F401 # deferred: start-up (and its telemetry store, see above)
    import onnxruntime as ort  # deferred: start-up

    if hasattr(ort, "disable_telemetry_events"):
        ort.disable_telemetry_events()
    return ort


def onnx_forward(model, threads: int | None):
    """text -> unit vector through an ONNX Runtime session built from `model`'s transformer, mean-pooled
    like `model` pools; None when `model` declares another pipeline. Raises ImportError without
    onnxruntime and onnx, and whatever the export raises."""
    ort = _onnxruntime()
    import torch  # deferred: start-up

    modules = list(model)
    if [type(m).__name__ for m in modules] != ["Transformer", "Pooling", "Normalize"]:
        return None
    transformer, tokenizer = modules[0], model.tokenizer
    max_length = int(transformer.max_seq_length)
    network = transformer.auto_model.eval()
    names = [n for n in INPUTS if n in tokenizer.model_input_names]

    class Hidden(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.network = network

        def forward(self, *tensors):
            return self.network(**dict(zip(names, tensors))).last_hidden_state

    sample = tokenizer(["a probe sentence"], return_tensors="pt")
    buffer = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(Hidden(), tuple(sample[n] for n in names), buffer, input_names=names,
                          output_names=["hidden"], opset_version=17, dynamo=False,
                          dynamic_axes={n: {0: "batch", 1: "tokens"} for n in (*names, "hidden")})
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or 0  # 0: onnxruntime's default, one per core
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(buffer.getvalue(), options, providers=["CPUExecutionProvider"])
    borrowed = threading.Lock()  # the fast tokenizer is not safe in two threads at once

    def forward(text: str) -> np.ndarray:
        with borrowed:
            batch = tokenizer([text], return_tensors="np", truncation=True, max_length=max_length)
        hidden = session.run(None, {n: np.asarray(batch[n], dtype=np.int64) for n in names})[0]
        mask = np.asarray(batch["attention_mask"], dtype=np.float32)[..., None]
        pooled = (hidden * mask).sum(axis=1)[0] / max(float(mask.sum()), 1e-9)
        return np.ascontiguousarray(pooled / max(float(np.linalg.norm(pooled)), 1e-12), dtype=np.float32)

    return forward
