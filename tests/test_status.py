"""Status accounting: counts read from real card files, the run history, and the append-only alarm."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from memoir.cards.config import load_settings
from memoir.cards.distill.rules import apply_rules
from memoir.cards.values import Card, Source
from memoir.cards.status import (
    APPEND_ONLY,
    Counts,
    StatusSection,
    append_only_alarm,
    build_status,
    read_alarm_history,
    read_runs,
    record_run,
)
from memoir.cards.store import CardStore
from memoir.flows.cli.main import cli
from tests.test_rules import _one, pool_session


@pytest.fixture
def settings(memoir_home):
    return load_settings(home=memoir_home)


def _card(n: int, status: str, workspace: str = "/home/dev/shop") -> Card:
    return Card(
        id=f"c-{n:016x}", status=status, workspace=workspace, created="2026-11-02T09:00:00Z",
        sources=(Source("s-1", "claude-code", "/logs/s-1.jsonl", (n, n + 1), (n, n + 1)),),
        goal=f"goal {n}", conclusion="Raising pool_size to 10 in settings.toml stopped the 503s under load.",
    )


def _statuses_on_disk(cards_dir) -> dict[str, int]:
    """What a person would count with grep: one `status:` line per card file."""
    found: dict[str, int] = {}
    for path in cards_dir.glob("c-*.md"):
        status = re.search(r"(?m)^status: (\w+)$", path.read_text()).group(1)
        found[status] = found.get(status, 0) + 1
    return found


def _write(settings, cards) -> None:
    store = CardStore(settings.cards_dir, settings.state_dir)
    for card in cards:
        store.write(card)
    store.save_manifest()


LIBRARY = (
    [_card(i, "active") for i in range(3)]
    + [_card(10 + i, "superseded") for i in range(2)]
    + [_card(20, "candidate", "/home/dev/billing")]
    + [_card(30 + i, "incomplete", "/home/dev/billing") for i in range(2)]
    + [_card(40, "forgotten")]
)


def test_status_counts_match_the_card_files_on_disk(settings):
    _write(settings, LIBRARY)
    report = build_status(settings.cards_dir, settings.state_dir)
    on_disk = _statuses_on_disk(settings.cards_dir)
    assert report.counts.to_dict() == {**{s: on_disk.get(s, 0) for s in Counts().to_dict() if s != "total"}, "total": 9}
    assert report.counts == Counts(active=3, superseded=2, candidate=1, incomplete=2, forgotten=1)
    assert report.workspaces["/home/dev/billing"] == Counts(candidate=1, incomplete=2)
    assert report.workspaces["/home/dev/shop"] == Counts(active=3, superseded=2, forgotten=1)


def test_status_json_reports_the_four_counts_per_workspace(settings):
    _write(settings, LIBRARY)
    result = CliRunner().invoke(cli, ["--home", str(settings.home), "status", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    on_disk = _statuses_on_disk(settings.cards_dir)
    for status in ("active", "superseded", "candidate", "incomplete"):
        assert data["counts"][status] == on_disk.get(status, 0)
    assert data["workspaces"]["/home/dev/billing"]["incomplete"] == 2
    assert data["alarms"] == [] and data["runs"] == []


def test_status_text_names_every_count_and_says_when_no_run_was_recorded(settings):
    _write(settings, LIBRARY)
    result = CliRunner().invoke(cli, ["--home", str(settings.home), "status"])
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    for fragment in ("3 active", "2 superseded", "1 candidate", "2 incomplete", "1 forgotten"):
        assert fragment in first
    assert "none recorded yet" in result.output


def test_a_card_rejected_in_review_counts_as_rejected_not_candidate(settings):
    from memoir.cards.review import reject

    _write(settings, LIBRARY + [reject(_card(50, "candidate"), why="a one-off", at="2026-11-03T09:00:00Z")])
    report = build_status(settings.cards_dir, settings.state_dir)
    assert report.counts == Counts(active=3, superseded=2, candidate=1, incomplete=2, forgotten=1, rejected=1)
    assert report.counts.total == 10
    first = CliRunner().invoke(cli, ["--home", str(settings.home), "status"]).output.splitlines()[0]
    assert "1 candidate" in first and "1 rejected" in first


def test_an_unreadable_card_file_is_reported_and_not_counted(settings):
    _write(settings, LIBRARY[:2])
    (settings.cards_dir / "c-broken.md").write_text("no front matter here\n")
    report = build_status(settings.cards_dir, settings.state_dir)
    assert report.counts.total == 2
    assert len(report.unreadable) == 1 and "c-broken.md" in report.unreadable[0]


def test_rule_conflicts_written_to_disk_are_listed_as_candidate_conflicts(settings):
    a = _one(pool_session("s-a", 0, 5, "that keeps the api server within the database limit."))
    b = _one(pool_session("s-b", 0, 20, "5 starved the workers under load."))
    plan = apply_rules([a, b], [])
    _write(settings, plan.write)
    report = build_status(settings.cards_dir, settings.state_dir)
    assert report.counts.candidate == 2
    assert report.conflicts == plan.conflicts == [tuple(sorted((a[1].id, b[1].id)))]
    text = "\n".join(report.lines())
    assert f"conflict   {report.conflicts[0][0]} ↔ {report.conflicts[0][1]}" in text


def test_superseded_cards_written_by_the_rules_are_counted_as_superseded(settings):
    old = _one(pool_session("s-old", 0, 5, "that keeps the api server within the database limit."))
    new = _one(pool_session("s-new", 7, 20, "5 starved the workers under load."))
    _write(settings, apply_rules([old], []).write)
    store = CardStore(settings.cards_dir, settings.state_dir)
    library, _ = store.load_all()
    _write(settings, apply_rules([new], library).write)
    report = build_status(settings.cards_dir, settings.state_dir)
    assert report.counts == Counts(active=1, superseded=1)
    assert _statuses_on_disk(settings.cards_dir) == {"active": 1, "superseded": 1}


# --- run history and the append-only alarm ---------------------------------------------------------------


def _record(settings, added, superseded, day):
    return record_run(settings.state_dir, added=added, superseded=superseded, counts=Counts(active=added),
                      append_only_runs=3, finished=f"2026-11-{day:02d}T03:30:00Z")


def test_each_run_appends_one_line_to_the_run_history(settings):
    _record(settings, 4, 0, 1)
    _record(settings, 2, 1, 2)
    runs = read_runs(settings.state_dir)
    assert [(r.finished, r.added, r.superseded) for r in runs] == [
        ("2026-11-01T03:30:00Z", 4, 0), ("2026-11-02T03:30:00Z", 2, 1)]
    assert runs[0].counts == Counts(active=4)


def test_cards_added_and_none_superseded_over_n_runs_raises_the_append_only_alarm_once(settings):
    for day in (1, 2):
        assert _record(settings, 5, 0, day).alarms == ()
    assert _record(settings, 5, 0, 3).alarms == (APPEND_ONLY,)
    assert _record(settings, 5, 0, 4).alarms == (APPEND_ONLY,)
    history = read_alarm_history(settings.state_dir)
    assert [(h["state"], h["at"]) for h in history] == [("raised", "2026-11-03T03:30:00Z")]
    assert history[0]["runbook"] == "runbooks/append-only-never-superseded.md"
    report = build_status(settings.cards_dir, settings.state_dir, append_only_runs=3)
    assert [a.name for a in report.alarms] == [APPEND_ONLY]
    assert "ALARM      memoir incident append_only_never_superseded:" in "\n".join(report.lines())


def test_a_run_that_supersedes_clears_the_alarm_and_the_history_says_so(settings):
    for day in (1, 2, 3):
        _record(settings, 5, 0, day)
    assert _record(settings, 5, 2, 4).alarms == ()
    assert [h["state"] for h in read_alarm_history(settings.state_dir)] == ["raised", "cleared"]


def test_runs_that_add_nothing_neither_raise_nor_clear_the_alarm(settings):
    _record(settings, 5, 0, 1)
    _record(settings, 0, 0, 2)
    _record(settings, 5, 0, 3)
    _record(settings, 0, 0, 4)
    assert _record(settings, 5, 0, 5).alarms == (APPEND_ONLY,)
    assert _record(settings, 0, 0, 6).alarms == (APPEND_ONLY,)


def test_the_alarm_window_comes_from_settings_and_zero_turns_it_off():
    from memoir.cards.status import RunRecord

    runs = [RunRecord(f"2026-11-0{d}", added=3, superseded=0) for d in range(1, 6)]
    assert append_only_alarm(runs, 5) is not None
    assert append_only_alarm(runs[:4], 5) is None
    assert append_only_alarm(runs, 0) is None


def test_a_torn_last_line_in_the_run_history_is_skipped(settings):
    _record(settings, 1, 0, 1)
    with open(settings.state_dir / "runs.jsonl", "a") as fh:
        fh.write('{"finished": "2026-11-02T03:3')
    assert len(read_runs(settings.state_dir)) == 1
    _record(settings, 2, 0, 3)
    assert [r.added for r in read_runs(settings.state_dir)] == [1, 2]


def test_later_stages_extend_the_report_with_their_own_sections(settings):
    report = build_status(settings.cards_dir, settings.state_dir).with_sections(
        StatusSection("queue", {"depth": 3}, ("queue      3 items waiting",)))
    assert report.to_dict()["queue"] == {"depth": 3}
    assert "queue      3 items waiting" in report.lines()
