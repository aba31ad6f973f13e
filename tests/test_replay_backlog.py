"""Backlog replay for real: `memoir replay --redistill` and `--relog` over a library made without a
model, against the local OpenAI-compatible server: one call per eligible card, a person's cards
untouched, a second replay makes no call, and a replay killed halfway (kill -9) finishes with the
same files as one that ran through."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.flowlogs import write_corpus
from tests.openai_server import ScriptedServer, slots

pytestmark = pytest.mark.slow


def memoir_argv(*args: str) -> list[str]:
    return [sys.executable, "-c", "from memoir.flows.cli.main import main; main()", *args]


def memoir(home: Path, *args: str, env: dict | None = None, code: int = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run(memoir_argv(*args), env={**os.environ, "MEMOIR_HOME": str(home), **(env or {})},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == code, f"memoir {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def model_env(url: str) -> dict:
    return {"MEMOIR_MODEL_BASE_URL": url, "MEMOIR_MODEL_NAME": "scripted", "MEMOIR_MODEL_TIMEOUT_S": "30"}


def answer(body: dict) -> "object":
    """A distinct, valid answer per experience: the module the session's loop was about."""
    text = json.dumps(body)
    mod = re.search(r"in session (s\d+)-", text)
    name = f"yaml_0 of {mod.group(1)}" if mod else "unknown"
    return slots(conclusion=f"The tests failed because {name} was not installed; adding {name} to "
                            "requirements.txt and reinstalling made the ModuleNotFoundError go away.",
                 applies_when=f"pytest fails with ModuleNotFoundError for {name}")


def cards(home: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((home / "cards").glob("c-*.md"))}


@pytest.fixture
def library(tmp_path, memoir_home):
    """A library made by a run with no model: rule cards only."""
    logs = write_corpus(tmp_path / "logs", sessions=6, loops=1)
    memoir(memoir_home, "run", "--no-index", "--logs", str(logs))
    made = cards(memoir_home)
    assert len(made) == 6 and all(b"quality: rule" in b for b in made.values())
    return logs


def test_redistill_sends_each_eligible_card_once_and_leaves_a_persons_cards_alone(library, memoir_home):
    names = sorted(cards(memoir_home))
    edited = memoir_home / "cards" / names[0]
    edited.write_text(edited.read_text() + "\nA note I added by hand.\n")
    hand = edited.read_bytes()
    with ScriptedServer(answer) as srv:
        dry = json.loads(memoir(memoir_home, "replay", "--redistill", "--dry-run", "--json",
                                env=model_env(srv.url)).stdout)
        assert dry["dry_run"] and dry["cards"] == 5 and dry["model_calls"] == 5 and len(srv.received) == 0
        assert dry["skipped"] == {"hand_edited": 1}
        done = json.loads(memoir(memoir_home, "replay", "--redistill", "--json", env=model_env(srv.url)).stdout)
        assert len(srv.received) == done["model_calls"] == dry["model_calls"] == 5
        assert done["written"] == {"updated": 5}
        after = cards(memoir_home)
        assert after[names[0]] == hand
        assert sum(b"quality: model" in b for b in after.values()) == 5
        again = json.loads(memoir(memoir_home, "replay", "--redistill", "--json", env=model_env(srv.url)).stdout)
        assert again["model_calls"] == 0 and len(srv.received) == 5 and again["cards"] == 0
        assert cards(memoir_home) == after
        # A later run over the same logs sees the redistilled cards as its own: nothing written, no call.
        rerun = json.loads(memoir(memoir_home, "run", "--no-index", "--json", "--logs", str(library),
                                  env=model_env(srv.url)).stdout)
        assert rerun["cards"].get("updated", 0) == 0 and rerun["cards"].get("new", 0) == 0
        assert len(srv.received) == 5


def test_redistill_without_a_model_reruns_the_rules_and_changes_nothing_already_current(library, memoir_home):
    before = cards(memoir_home)
    since = json.loads(memoir(memoir_home, "replay", "--redistill", "--dry-run", "--json", "--since", "2026-10-03").stdout)
    assert since["cards"] == 4 and since["skipped"] == {"before_since": 2} and since["model_calls"] == 0
    one = json.loads(memoir(memoir_home, "replay", "--redistill", "--dry-run", "--json",
                            "--workspace", "/home/dev/s00001").stdout)
    assert one["cards"] == 1 and one["skipped"] == {"other_workspace": 5}
    first = json.loads(memoir(memoir_home, "replay", "--redistill", "--json").stdout)
    assert first["cards"] == 6 and first["model_calls"] == 0 and first["written"] == {"unchanged": 6}
    assert cards(memoir_home) == before
    assert json.loads(memoir(memoir_home, "replay", "--redistill", "--json").stdout)["cards"] == 0


def test_redistill_killed_halfway_then_finished_writes_the_same_files_as_one_uninterrupted(tmp_path, library,
                                                                                            memoir_home):
    other = tmp_path / "other-home"
    shutil.copytree(memoir_home, other, symlinks=True)
    with ScriptedServer(answer) as srv:
        memoir(other, "replay", "--redistill", "--batch-size", "2", env=model_env(srv.url))
        straight = cards(other)
    slow = lambda body: answer(body).__class__(**{**answer(body).__dict__, "delay_s": 0.4})  # noqa: E731
    with ScriptedServer(slow) as srv:
        env = {**os.environ, "MEMOIR_HOME": str(memoir_home), **model_env(srv.url)}
        proc = subprocess.Popen(memoir_argv("replay", "--redistill", "--batch-size", "2"), env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while len(srv.received) < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the replay finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        half = cards(memoir_home)
        assert 0 < sum(b"quality: model" in b for b in half.values()) < 6  # it was stopped halfway
    with ScriptedServer(answer) as srv:
        rest = json.loads(memoir(memoir_home, "replay", "--redistill", "--json", "--batch-size", "2",
                                 env=model_env(srv.url)).stdout)
        assert rest["model_calls"] == len(srv.received) < 6
    assert cards(memoir_home) == straight


def test_relog_reads_ledgered_logs_again_and_a_second_relog_writes_nothing(library, memoir_home):
    before = cards(memoir_home)
    plain = json.loads(memoir(memoir_home, "run", "--no-index", "--json", "--logs", str(library)).stdout)
    assert plain["files_read"] == 0  # the ledger says these logs are read
    dry = json.loads(memoir(memoir_home, "replay", "--relog", str(library), "--dry-run", "--json").stdout)
    assert dry["cards"] == 0 and dry["skipped"]["already_in_library"] == 6
    relog = json.loads(memoir(memoir_home, "replay", "--relog", str(library), "--json").stdout)
    assert relog["files_read"] == 6 and relog["experiences"] == 6
    assert relog["rules"].get("already_in_library") == 6 and relog["cards"].get("new", 0) == 0
    assert cards(memoir_home) == before
    # The dropped turns of a card deleted by hand stay forgotten when its log is read again.
    gone = sorted(before)[0]
    (memoir_home / "cards" / gone).unlink()
    memoir(memoir_home, "replay", "--relog", str(library))
    assert gone not in cards(memoir_home)


def test_cards_a_killed_batch_renamed_into_place_are_recognised_as_its_own_not_as_hand_edits(library, memoir_home):
    from memoir.cards.config import load_settings
    from memoir.cards.store import CardStore, content_hash
    from memoir.flows.redistill import read_journal, recover, save_journal

    settings = load_settings(home=memoir_home)
    store = CardStore(settings.cards_dir, settings.state_dir)
    ours, theirs = sorted(store.ids())[:2]
    # The batch recorded what it would write, renamed one file, and was killed before the manifest.
    new_text = store.read_text(ours).replace("quality: rule", "quality: model")
    (settings.cards_dir / f"{ours}.md").write_text(new_text)
    (settings.cards_dir / f"{theirs}.md").write_text(store.read_text(theirs) + "\nmine\n")  # a real hand edit
    journal = read_journal(settings.state_dir, "g")
    journal["writing"] = {ours: content_hash(new_text), theirs: "not-what-is-on-disk"}
    save_journal(settings.state_dir, journal)
    store = CardStore(settings.cards_dir, settings.state_dir)
    assert set(store.hand_edited_ids()) == {ours, theirs}
    journal = read_journal(settings.state_dir, "g")
    assert recover(store, journal) == 1
    assert store.hand_edited_ids() == [theirs] and journal["done"] == {ours: content_hash(new_text)}
    assert journal["writing"] == {} and read_journal(settings.state_dir, "another generation")["done"] == {}
