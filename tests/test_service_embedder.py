"""Callers that need a vector ask the warm recall service instead of loading a model of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np

from memoir.cards.config import load_settings
from memoir.flows.recall_service import ServiceEmbedder, serve
from tests.recall_cards import BASE, QUERY, WORKSPACE
from tests.test_hook import embedder, home  # noqa: F401 - fixtures

ROOT = Path(__file__).resolve().parent.parent


class Untouchable:
    """A fallback that fails if it is ever asked to encode: the service must answer instead."""

    model_id = "all-MiniLM-L6-v2"
    dim = 384

    def encode(self, texts):
        raise AssertionError("the fallback model was used while the service runs")


def _serving(settings, embedder, idle_exit_s=20.0):
    ready = threading.Event()
    server = threading.Thread(target=serve, args=(settings, embedder),
                              kwargs={"idle_exit_s": idle_exit_s, "on_ready": lambda p: ready.set()}, daemon=True)
    server.start()
    assert ready.wait(60)
    return server


def test_vectors_from_the_service_equal_the_models_own(home, embedder):
    settings = load_settings(home=home)
    server = _serving(settings, embedder, idle_exit_s=3.0)
    asked = ServiceEmbedder(settings.state_dir, Untouchable())
    texts = ["TypeError: cannot pickle '_thread.lock' object", "where do we keep the feature flags?"]
    got = asked.encode(texts)
    assert asked.asked_service == 1 and got.dtype == np.float32
    assert np.array_equal(got, embedder.encode(texts))  # the very vectors the index was built with
    server.join(60)


def test_without_a_service_the_fallback_encodes(tmp_path, embedder):
    asked = ServiceEmbedder(tmp_path / "state", embedder)
    vector = asked.encode_one("ModuleNotFoundError: No module named 'yaml'")
    assert asked.asked_service == 0 and vector.shape == (384,)


def test_mcp_recall_with_the_service_up_answers_without_loading_a_model(home, embedder):
    settings = load_settings(home=home)
    server = _serving(settings, embedder)
    script = (
        "import json, sys\n"
        "from memoir.cards.config import load_settings\n"
        "from memoir.flows.mcp_server import build_server\n"
        "server = build_server(load_settings(home=sys.argv[1]))\n"
        "import asyncio\n"
        "out = asyncio.run(server.call_tool('memoir_recall', {'query': sys.argv[2], 'workspace': sys.argv[3]}))\n"
        "text = json.dumps(out, default=str)\n"
        "print(json.dumps({'text': text, 'model_loaded': 'sentence_transformers' in sys.modules}))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", script, str(home), QUERY, WORKSPACE], capture_output=True,
                          text=True, timeout=300, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert BASE.id in answer["text"]
    assert answer["model_loaded"] is False  # the service's model answered; none was loaded here
    server.join(60)
