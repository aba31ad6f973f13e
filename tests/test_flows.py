"""Runs killed with SIGKILL converge; the Prefect flows produce what the direct calls produce."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.flowlogs import write_corpus
from tests.index_fixtures import make_card, store_at, write_cards

ENTRY = "from memoir.flows.cli.main import main; main()"


@pytest.fixture(scope="session")
def prefect_home(tmp_path_factory):
    """One Prefect database for the session: the first flow run migrates it (~10-20 s), later ones reuse it."""
    return tmp_path_factory.mktemp("prefect-home")


def memoir(home: Path, *args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    full = {**os.environ, "MEMOIR_HOME": str(home), **(env or {})}
    proc = subprocess.run([sys.executable, "-c", ENTRY, *args], env=full, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"memoir {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return proc


def tree(folder: Path) -> dict[str, bytes]:
    """Every file (dot files included), so a leftover temp file shows up as a difference."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_runs_killed_at_random_points_converge_to_the_uninterrupted_card_set(tmp_path):
    logs = write_corpus(tmp_path / "logs", sessions=120, loops=6, filler=40)
    reference = tmp_path / "reference"
    started = time.monotonic()
    memoir(reference, "run", "--no-index", "--logs", str(logs))
    took = time.monotonic() - started  # kill points scale with it, so a faster pipeline is still cut mid-run
    expected = tree(reference / "cards")
    assert len(expected) > 100
    home = tmp_path / "killed"
    rng = random.Random(7)
    kills = 0
    for _ in range(4):
        proc = subprocess.Popen([sys.executable, "-c", ENTRY, "run", "--no-index", "--logs", str(logs)],
                                env={**os.environ, "MEMOIR_HOME": str(home)},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 0.9) * took)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
    assert kills >= 2, "the runs finished before they could be killed; grow the corpus"
    # A write killed between mkstemp and rename leaves a temp file; plant one to be sure.
    (home / "cards").mkdir(parents=True, exist_ok=True)
    (home / "cards" / ".c-0123456789ab.md.k1ll3d.tmp").write_text("---\nid: half")
    ids = json.loads(memoir(home, "cards", "list", "--json").stdout)
    assert all(not c["id"].startswith(".") for c in ids)  # readers ignore temp files
    memoir(home, "run", "--no-index", "--logs", str(logs))
    assert tree(home / "cards") == expected
    final = json.loads(memoir(home, "run", "--no-index", "--json", "--logs", str(logs)).stdout)
    assert final["cards"].get("new", 0) == 0 and final["cards"].get("updated", 0) == 0


@pytest.mark.slow
def test_the_nightly_flow_on_the_ephemeral_api_writes_the_same_cards_as_memoir_run(tmp_path, prefect_home):
    # A folder named for a person: the path must not reach Prefect's database as a flow parameter.
    logs = write_corpus(tmp_path / "jane.doe@corp.com" / "logs", sessions=4, loops=3)
    direct, flowed = tmp_path / "direct", tmp_path / "flowed"
    d = json.loads(memoir(direct, "run", "--json", "--logs", str(logs)).stdout)
    f = json.loads(memoir(flowed, "run", "--flow", "--json", "--logs", str(logs),
                          env={"PREFECT_HOME": str(prefect_home)}).stdout)
    assert tree(flowed / "cards") == tree(direct / "cards") and len(tree(direct / "cards")) > 0
    for key in ("files_read", "turns", "sessions", "experiences", "cards", "rules", "queued", "index"):
        assert f[key] == d[key], key
    assert any(Path(prefect_home).iterdir())  # the flow's state went to PREFECT_HOME
    for path in [*Path(prefect_home).rglob("*"), *flowed.rglob("*")]:
        if path.is_file():
            assert b"jane.doe@corp.com" not in path.read_bytes(), path
    runs = [json.loads(line) for line in (flowed / "state" / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 1  # the flow records its run like `memoir run` does


@pytest.mark.slow
def test_memoir_run_flow_on_a_fresh_home_with_no_prefect_variables_writes_the_cards_memoir_run_writes(tmp_path):
    # As a user runs it: no PREFECT_* at all in the environment (nothing may import prefect before
    # the home's PREFECT_HOME is chosen: PrefectAlreadyImported), no MEMOIR_HOME, --home given.
    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_") and k != "MEMOIR_HOME"}
    logs = str(root / "cards" / "examples")
    direct, flowed = tmp_path / "direct", tmp_path / "fresh"

    def run(home: Path, *extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", ENTRY, "run", *extra, "--logs", logs, "--home", str(home)],
                              env=env, cwd=root, capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)

    proc = run(flowed, "--flow")
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr
    assert run(direct).returncode == 0
    assert (flowed / "prefect").is_dir()  # Prefect's state went under the home, not ~/.prefect
    assert tree(flowed / "cards") == tree(direct / "cards") and len(tree(direct / "cards")) > 0


SERVED_REBUILD = """
import json, sys
from memoir.flows.prefect_env import configure_prefect
configure_prefect(sys.argv[1])
from memoir.flows.nightly import rebuild_index
print(json.dumps(rebuild_index(home=sys.argv[1])))
"""


@pytest.mark.slow
@pytest.mark.parametrize("where", ["config file", "environment"])
def test_the_served_rebuild_flow_honours_rebuild_concurrency(tmp_path, prefect_home, where):
    # The flow as a deployment runs it: only the home as a parameter, settings resolved in its body.
    home = tmp_path / "home"
    write_cards(store_at(home), [make_card(i) for i in range(6)])
    config = tmp_path / "config.toml"
    config.write_text("rebuild_concurrency = 3\n" if where == "config file" else "")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMOIR_")}
    env.update(PREFECT_HOME=str(prefect_home), MEMOIR_CONFIG=str(config))
    if where == "environment":
        env["MEMOIR_REBUILD_CONCURRENCY"] = "3"
    proc = subprocess.run([sys.executable, "-c", SERVED_REBUILD, str(home)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert figures["concurrency"] == 3 and figures["cards"] == 6 and figures["problems"] == []
    assert sorted(p.name for p in (home / "index").iterdir()) == ["fields.key", "index.db"]  # verified, swapped, no .bak left


@pytest.fixture(scope="module")
def prefect_api(tmp_path_factory):
    """A real `prefect server` for the module: Dask workers then report to it instead of each
    starting a temporary API of its own (~20 s per worker)."""
    from memoir.flows.serve import prefect_server

    with prefect_server(tmp_path_factory.mktemp("prefect-server")) as url:
        yield url


@pytest.mark.slow
def test_replay_and_rebuild_on_a_two_worker_dask_cluster_match_the_default_runner(tmp_path, prefect_api):
    logs = write_corpus(tmp_path / "logs", sessions=3, loops=4)
    env = {"PREFECT_API_URL": prefect_api, "MEMOIR_REBUILD_CONCURRENCY": "2"}
    homes = {}
    for runner in ("thread", "dask"):
        home = tmp_path / runner
        cards = home / "cards"
        cards.mkdir(parents=True)
        subprocess.run(["chattr", "+i", str(cards)], check=True)
        try:
            run = json.loads(memoir(home, "run", "--no-index", "--json", "--logs", str(logs)).stdout)
        finally:
            subprocess.run(["chattr", "-i", str(cards)], check=True)
        replayed = json.loads(memoir(home, "replay", "--runner", runner, "--json", env=env).stdout)
        n = run["queued"]["card_write"]
        assert replayed["applied"] == n and replayed["left"] == 0
        rebuilt = json.loads(memoir(home, "flow", "run", "rebuild-index", "--runner", runner, "--json", env=env).stdout)
        assert rebuilt["cards"] == n
        homes[runner] = home
    assert tree(homes["thread"] / "cards") == tree(homes["dask"] / "cards")
    from memoir.cards.config import load_settings
    from memoir.index.embed import default_embedder
    from memoir.index.db import open_index
    import numpy as np

    rows, vecs = {}, {}
    for runner, home in homes.items():
        with open_index(load_settings(home=home).index_dir, default_embedder()) as index:
            rows[runner] = index.rows()
            vecs[runner] = index.vectors([r.id for r in rows[runner]])
    assert rows["thread"] == rows["dask"] and len(rows["dask"]) == n
    for card_id, v in vecs["thread"].items():
        assert np.allclose(v, vecs["dask"][card_id], atol=1e-5)


@pytest.mark.slow
def test_memoir_serve_registers_the_deployments_and_stops_its_server_on_sigterm(tmp_path):
    import urllib.request

    from memoir.flows.serve import free_port, healthy

    port = free_port()
    home = tmp_path / "served"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    proc = subprocess.Popen([sys.executable, "-c", ENTRY, "serve", "--port", str(port), "--cron", "15 2 * * *"],
                            env={**env, "MEMOIR_HOME": str(home)}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    api = f"http://127.0.0.1:{port}/api"
    try:
        deadline = time.monotonic() + 150
        names: dict = {}
        while time.monotonic() < deadline and len(names) < 3:
            assert proc.poll() is None, proc.stdout.read()
            if healthy(api):
                req = urllib.request.Request(f"{api}/deployments/filter", data=b"{}", method="POST",
                                             headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=5) as resp:
                    names = {d["name"]: d for d in json.load(resp)}
            time.sleep(1)
        assert set(names) == {"memoir-nightly", "memoir-replay", "memoir-rebuild-index"}
        crons = [s["schedule"]["cron"] for s in names["memoir-nightly"]["schedules"]]
        assert crons == ["15 2 * * *"]
        assert names["memoir-nightly"]["parameters"] == {"home": str(home)}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert not healthy(api), "the prefect server outlived memoir serve"
    assert (home / "prefect").is_dir()
