"""End-to-end runs of the nightly pipeline over real-shaped logs (no model, no index)."""

from __future__ import annotations

import gc
import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoir.cards.config import load_settings
from memoir.cards.values import SECTION_TITLES
from memoir.flows.pipeline import turn_index_until
from memoir.cards.store import CardStore, parse_card
from memoir.flows.cli.main import cli
from memoir.flows.pipeline import fewer_collections, run_pipeline
from memoir.flows.workers import GC_YOUNG

# Real logs copied unchanged (MIT/Apache-2.0) and hand-written logs in the shape of ones whose licence
# did not allow copying; tests/fixtures/SOURCES.md lists each file's source.
FIXTURES = Path(__file__).parent / "fixtures"
REAL_LOGS = ("real", "real-shaped")
HOST_FOLDERS = ("claude-code", "codex", "aider")  # only logs: notes and labels may sit beside them


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}


def _card_bytes(settings) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(settings.cards_dir.glob("*.md"))}


@pytest.fixture
def logs(tmp_path):
    dst = tmp_path / "logs"
    for name in REAL_LOGS:
        for host in HOST_FOLDERS:
            if (FIXTURES / name / host).is_dir():
                shutil.copytree(FIXTURES / name / host, dst / name / host)
    return dst


@pytest.fixture
def settings(memoir_home):
    return load_settings(home=memoir_home)


def test_every_host_in_the_real_logs_yields_cards_with_six_headings(logs, settings):
    files = sorted(p for p in logs.rglob("*") if p.is_file())
    summary = run_pipeline(settings, [logs], with_index=False)
    assert summary.files_read == len(files) == 14
    store = CardStore(settings.cards_dir, settings.state_dir)
    cards, problems = store.load_all()
    assert not problems
    sources = [s for c in cards for s in c.sources]
    files_with_cards = {Path(s.file) for s in sources}
    # Whether a short session or a subagent file earns its own card is segmentation's call (and
    # changes with it). Pinned here: every card comes from a fixture, every host folder of both sets
    # gives cards, and each hand-written log (each a fix with a stated cause) gives at least one.
    assert files_with_cards <= set(files)
    assert {p.relative_to(logs).parts[:2] for p in files_with_cards} == {p.relative_to(logs).parts[:2] for p in files}
    assert {p.name for p in (logs / "real-shaped").rglob("*.jsonl")} <= {p.name for p in files_with_cards}
    assert len(files_with_cards) >= 10
    assert len({(s.host, s.session_id) for s in sources}) >= 10
    for path in settings.cards_dir.glob("*.md"):
        text = path.read_text()
        assert text.startswith("---\nschema: 1\nid: ")
        for title in SECTION_TITLES.values():
            assert f"\n## {title}\n" in text
        parse_card(text, str(path))


def test_reading_never_changes_a_log_file(logs, settings):
    before = _snapshot(logs)
    run_pipeline(settings, [logs], with_index=False)
    run_pipeline(settings, [logs], with_index=False)
    assert _snapshot(logs) == before


def test_second_run_writes_nothing_and_rewrites_nothing(logs, settings):
    run_pipeline(settings, [logs], with_index=False)
    first = {p: p.stat().st_mtime_ns for p in settings.cards_dir.glob("*.md")}
    cards = _card_bytes(settings)
    summary = run_pipeline(settings, [logs], with_index=False)
    assert summary.files_read == 0
    assert summary.cards.get("new", 0) == 0 and summary.cards.get("updated", 0) == 0
    assert _card_bytes(settings) == cards
    assert {p: p.stat().st_mtime_ns for p in settings.cards_dir.glob("*.md")} == first


def test_a_rerun_after_a_ledger_reset_is_byte_identical(logs, settings):
    run_pipeline(settings, [logs], with_index=False)
    cards = _card_bytes(settings)
    (settings.state_dir / "ledger.sqlite").unlink()
    summary = run_pipeline(settings, [logs], with_index=False)
    assert summary.cards.get("new", 0) == 0
    assert _card_bytes(settings) == cards


def _line(obj: dict) -> str:
    return json.dumps(obj) + "\n"


def _claude_line(session: str, uuid: str, parent: str | None, kind: str, content, ts: str) -> dict:
    role = "assistant" if kind == "assistant" else "user"
    message = {"role": role, "content": content}
    if role == "assistant":
        message["id"] = f"msg_{uuid}"
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/dev/app",
            "sessionId": session, "version": "2.1.0", "gitBranch": "main", "type": kind,
            "message": message, "uuid": uuid, "timestamp": ts}


def test_appended_lines_yield_cards_only_for_the_new_part(tmp_path, settings):
    log = tmp_path / "projects" / "-home-dev-app" / "s-append.jsonl"
    log.parent.mkdir(parents=True)
    sid = "s-append"
    first = [
        _claude_line(sid, "u1", None, "user", "pytest fails with ModuleNotFoundError: No module named 'yaml'", "2026-11-03T10:00:00Z"),
        _claude_line(sid, "a1", "u1", "assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pip install pyyaml"}}], "2026-11-03T10:00:05Z"),
        _claude_line(sid, "u2", "a1", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "Successfully installed PyYAML-6.0.2"}], "2026-11-03T10:00:09Z"),
        _claude_line(sid, "a2", "u2", "assistant", [{"type": "text", "text": "The root cause was that PyYAML was missing from requirements.txt; adding pyyaml there fixes the ModuleNotFoundError."}], "2026-11-03T10:00:15Z"),
    ]
    log.write_text("".join(_line(o) for o in first))
    s1 = run_pipeline(settings, [tmp_path / "projects"], with_index=False)
    assert s1.cards["new"] == 1
    before = _card_bytes(settings)
    more = [
        _claude_line(sid, "u3", "a2", "user", "new task: add a --verbose flag to the cli", "2026-11-03T10:05:00Z"),
        _claude_line(sid, "a3", "u3", "assistant", [{"type": "tool_use", "id": "t2", "name": "Edit", "input": {"file_path": "cli.py"}}], "2026-11-03T10:05:05Z"),
        _claude_line(sid, "a4", "a3", "assistant", [{"type": "text", "text": "Added --verbose to the cli; it sets the log level to DEBUG for this run only."}], "2026-11-03T10:05:30Z"),
    ]
    with log.open("a") as fh:
        fh.write("".join(_line(o) for o in more))
    s2 = run_pipeline(settings, [tmp_path / "projects"], with_index=False)
    assert s2.cards["new"] == 1 and s2.cards.get("updated", 0) == 0
    after = _card_bytes(settings)
    assert {k: v for k, v in after.items() if k in before} == before
    new = [parse_card(v.decode()) for k, v in after.items() if k not in before]
    assert len(new) == 1 and "--verbose" in new[0].goal


def test_bad_input_is_skipped_counted_and_the_run_finishes(tmp_path, settings):
    root = tmp_path / "bad"
    root.mkdir()
    good = _claude_line("s-good", "u1", None, "user", "why does the healthcheck return 503 in staging?", "2026-11-03T10:00:00Z")
    reply = _claude_line("s-good", "a1", "u1", "assistant", [{"type": "text", "text": "The DB pool was exhausted; raising pool_size to 10 in settings.toml fixed the 503s."}], "2026-11-03T10:00:10Z")
    (root / "garbage.jsonl").write_text(_line(good) + "{not json at all\n" + _line(reply) + '{"type": "user", "message": {"content": "trunc')
    (root / "binary.jsonl").write_bytes(os.urandom(2048) + b"\x00\x00")
    (root / "empty.jsonl").write_bytes(b"")
    (root / "unknown.jsonl").write_text(_line({"weird": True, "shape": [1, 2]}) * 3)
    (root / "dir.jsonl").mkdir()
    summary = run_pipeline(settings, [root], with_index=False)
    assert summary.cards["new"] == 1
    skipped = summary.skipped
    assert skipped["bad_json"] >= 1
    assert skipped["partial_line"] >= 1
    assert skipped["binary"] + skipped["unknown_format"] >= 2
    assert skipped["empty"] >= 1
    assert skipped["unreadable"] >= 1


EXAMPLES = Path(__file__).resolve().parents[1] / "cards" / "examples"


@pytest.mark.slow
def test_a_full_run_indexes_every_card_and_a_rerun_changes_nothing(settings):
    from memoir.cards.store import CardStore
    from memoir.index.check import check_index
    from memoir.index.embed import default_embedder

    first = run_pipeline(settings, [EXAMPLES])
    assert first.cards["new"] > 10
    assert first.model.startswith("off")
    assert first.index.get("added", 0) == sum(1 for _ in settings.cards_dir.glob("*.md"))
    store = CardStore(settings.cards_dir, settings.state_dir)
    emb = default_embedder()
    assert check_index(settings.index_dir, store, emb.model_id, emb.dim).status == "healthy"
    before = _card_bytes(settings)
    second = run_pipeline(settings, [EXAMPLES])
    assert second.cards.get("new", 0) == 0 and _card_bytes(settings) == before
    assert second.index.get("added", 0) == 0 and second.index.get("updated", 0) == 0


def test_no_secret_from_the_examples_reaches_a_card_file(settings):
    raw = "".join(p.read_text(errors="replace") for p in EXAMPLES.rglob("*") if p.is_file() and p.name != "README.md")
    planted = [m for m in ("sk_live_", "AKIA", "10.0.3.17", "whsec_") if m in raw]
    assert planted, "the examples should carry fake secrets for this test to mean anything"
    run_pipeline(settings, [EXAMPLES], with_index=False)
    cards = "".join(p.read_text() for p in settings.cards_dir.glob("*.md"))
    for marker in planted:
        assert marker not in cards


def test_a_session_no_rule_foresaw_is_counted_and_the_others_still_make_cards(settings):
    from collections import Counter

    from memoir.cards.collect import collect
    from memoir.cards.values import Turn
    from memoir.flows.ingest import plan_experiences

    sessions = collect([FIXTURES / "real" / "codex"]).sessions
    good = len(plan_experiences(dict(sessions), settings, Counter()))
    assert good > 0
    # A turn no reader makes (its text is not a string) stands for whatever a future rule trips on.
    broken = [Turn(host="codex", session_id="broken", seq=0, role="user", kind="text", text=None)]
    skipped: Counter = Counter()
    drafted = plan_experiences({**sessions, ("codex", "broken"): broken}, settings, Counter(), skipped)
    assert len(drafted) == good and skipped["session_error_TypeError"] == 1


def test_the_run_summary_counts_every_card_it_wrote_by_the_status_in_its_file(logs, settings):
    # One source for a run's counts: the statuses of the files the run wrote, whether or not the
    # gates judged the card in this run (a superseded rule card, an update of an older card).
    summary = run_pipeline(settings, [logs]).to_dict()
    on_disk: dict[str, int] = {}
    for path in settings.cards_dir.glob("*.md"):
        status = parse_card(path.read_text()).status
        on_disk[status] = on_disk.get(status, 0) + 1
    written = {k: v for k, v in summary["distill"].items() if k in on_disk}
    assert written == on_disk and sum(written.values()) == summary["cards"]["new"] > 0
    status = json.loads(CliRunner().invoke(cli, ["--home", str(settings.home), "status", "--json"]).output)
    last = status["model"]["last_run"]["counts"]
    assert {k: v for k, v in last.items() if k in on_disk} == on_disk  # `memoir status` says the same


def test_a_run_wakes_the_cyclic_collector_seldom_and_restores_it_after():
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    with fewer_collections():
        assert gc.get_threshold()[0] == GC_YOUNG
        assert gc.get_freeze_count() > frozen  # what was loaded before the run is left out of its walks
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("a step failed")
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen


def test_the_turn_index_may_take_its_share_of_the_run_past_the_indexing_already_done():
    steps = {"collect": 30.0, "transform": 10.0, "distill": 12.0, "index": 8.0, "index check": 0.5}
    # 60.5 s so far: 8.5 in the index steps and 6 embedding inside distill, so 46 s of the run's own work.
    until = turn_index_until(60.5, steps, 6.0, 1.0, now=100.0)
    assert until == 100.0 + (46.0 - 14.5)
    assert turn_index_until(60.5, steps, 6.0, 2.0, now=100.0) == 100.0 + (92.0 - 14.5)
    assert turn_index_until(60.5, steps, 6.0, 0.0, now=100.0) is None  # no limit
    assert turn_index_until(20.0, steps, 6.0, 1.0, now=100.0) == 100.0  # the card index took it all: nothing now
