import json
from pathlib import Path

from click.testing import CliRunner

from memoir.cards.config import load_settings
from memoir.flows.cli.main import cli
from memoir.flows.model_runs import record_model_run


def _status(home) -> dict:
    result = CliRunner().invoke(cli, ["--home", str(home), "status", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # stderr may warn that the test's home holds no library yet


def test_status_says_honestly_that_the_model_stage_is_off(memoir_home):
    data = _status(memoir_home)
    assert data["model"]["enabled"] is False
    assert data["model"]["state"].startswith("off: rule stage only")


def test_a_model_alert_of_the_last_run_shows_in_status(memoir_home):
    settings = load_settings(home=memoir_home)
    record_model_run(settings.state_dir, "2026-12-01T03:30:00Z", "on: m at http://127.0.0.1:9", {"timeout": 1},
                     ["model_silent: batch run-c-1 produced nothing within 60 s; requeued"])
    data = _status(memoir_home)
    assert data["model"]["alerts"] == ["model_silent: batch run-c-1 produced nothing within 60 s; requeued"]
    text = CliRunner().invoke(cli, ["--home", str(memoir_home), "status"]).output
    assert "ALERT    model_silent" in text


def test_a_corrupt_index_is_an_alarm_in_status(memoir_home):
    settings = load_settings(home=memoir_home)
    settings.index_dir.mkdir(parents=True)
    (settings.index_dir / "index.db").write_bytes(b"this is not a database" * 100)
    data = _status(memoir_home)
    assert data["index"]["status"] == "corrupt"


def test_recall_counts_start_at_the_last_run_and_misses_raise_an_alert():
    from memoir.flows.status_sections import count_recall_calls

    hook = ([{"ts": "2026-12-01T09:00:00Z", "outcome": "timeout"}]  # before the last run: not counted
            + [{"ts": "2026-12-02T10:00:00Z", "outcome": o} for o in
               ["injected"] * 5 + ["empty"] * 3 + ["timeout"] * 2 + ["cold_start"]]
            + [{"ts": "2026-12-02T10:00:01Z", "outcome": "something new"}])
    recalls = [{"ts": "2026-12-02T10:00:00.123+00:00", "outcome": "timeout"},
               {"ts": "2026-11-30T10:00:00.000+00:00", "outcome": "injected"}]
    data = count_recall_calls(hook, recalls, "2026-12-02T03:30:00Z")
    assert data["hook"] == {"injected": 5, "empty": 3, "timeout": 2, "cold_start": 1, "error": 1}
    assert data["hook_calls"] == 12 and data["recalls"] == 1 and data["recall_outcomes"]["timeout"] == 1
    assert data["alert"].startswith("recall_misses: 3 of 12 hook calls")
    assert count_recall_calls(hook[:9], [], None)["alert"] == ""  # too few calls to say


def test_status_counts_the_hooks_calls_since_the_last_run(memoir_home):
    from memoir.flows import hook_client
    from memoir.cards.status import record_run

    settings = load_settings(home=memoir_home)
    state = str(settings.state_dir)
    hook_client.record_call(state, "UserPromptSubmit", "timeout", 301.0, "no answer within 300 ms")
    record_run(settings.state_dir, added=0, superseded=0, counts={}, finished="2000-01-01T00:00:00Z")
    hook_client.record_call(state, "UserPromptSubmit", "cold_start", 40.0, "started the recall service")
    hook_client.record_call(state, "UserPromptSubmit", "injected", 60.0)
    data = _status(memoir_home)["recall"]
    assert data["since"] == "2000-01-01T00:00:00Z" and data["hook_calls"] == 3
    assert data["hook"]["cold_start"] == 1 and data["hook"]["timeout"] == 1
    text = CliRunner().invoke(cli, ["--home", str(memoir_home), "status"]).output
    assert "3 hook calls: 1 injected, 0 empty, 1 timeouts, 1 cold starts" in text


def test_status_lists_active_cards_of_a_workspace_whose_advice_disagrees(memoir_home):
    from memoir.cards.store import CardStore
    from memoir.cards.values import Card

    settings = load_settings(home=memoir_home)
    store = CardStore(settings.cards_dir, settings.state_dir)
    for cid, conclusion, created in (
            ("c-old", "Committing inside the `seed_orders` fixture releases the write lock.", "2026-10-01T00:00:00Z"),
            ("c-new", "Committing in `seed_orders` war nicht die eigentliche Ursache: `audit_conn` hielt die Sperre.",
             "2026-11-01T00:00:00Z"),
            ("c-font", "Bundle DejaVuSans.ttf under `shop/static/fonts/`; the CI image has no fonts.",
             "2026-11-02T00:00:00Z")):
        store.write(Card(id=cid, title=cid, status="active", workspace="/home/dev/shop", created=created,
                         updated=created, conclusion=conclusion, task_type="debug"))
    data = _status(memoir_home)
    assert [d["cards"] for d in data["disagreements"]] == [["c-new", "c-old"]]
    text = CliRunner().invoke(cli, ["--home", str(memoir_home), "status"]).output
    assert "disagree   c-new ↔ c-old: takes back" in text and "c-font" not in text.split("disagree")[1]


# --- the session-start backlog ---------------------------------------------------------------------------


def test_status_shows_the_session_start_backlogs_last_child_from_its_record(memoir_home, tmp_path):
    from memoir.flows.session_backlog import process_backlog

    settings = load_settings(home=memoir_home)
    assert _status(memoir_home)["backlog"] == {"enabled": True, "last": None, "recorded": 0, "outcomes": {}}
    folder = tmp_path / "claude" / "projects" / "-work-shop"
    folder.mkdir(parents=True)
    transcript = folder / "9f0e1d2c-aaaa-4bbb-8ccc-000000000001.jsonl"
    transcript.write_text(json.dumps({"type": "summary", "summary": "new session", "leafUuid": "u-0"}) + "\n")
    report = process_backlog(settings, "claude-code", str(transcript))  # the child, as the hook starts it
    assert report.outcome == "no_previous" and report.logs == 0
    data = _status(memoir_home)["backlog"]
    assert data["last"]["outcome"] == "no_previous" and data["last"]["logs"] == 0
    assert data["recorded"] == 1 and data["outcomes"] == {"no_previous": 1}
    text = CliRunner().invoke(cli, ["--home", str(memoir_home), "status"]).output
    (line,) = [t for t in text.splitlines() if t.startswith("backlog ")]
    assert f"last {data['last']['ts']}: no_previous, 0 logs read, no cards" in line and "(claude-code)" in line
    assert "ALERT    backlog" not in text


def test_a_backlog_that_timed_out_or_failed_is_an_alert_naming_its_runbook():
    from memoir.flows.status_sections import plan_backlog

    done = {"ts": "2026-12-01T09:00:00Z", "host": "claude-code", "outcome": "done", "cards": {"new": 2},
            "detail": "", "elapsed_s": 4.2}  # a record from before `logs` was kept: done read one log
    late = {**done, "ts": "2026-12-02T09:00:00Z", "outcome": "timeout", "logs": 0, "cards": {},
            "detail": "the session_start_backlog_timeout_s deadline ended it", "elapsed_s": 600}
    first = plan_backlog([done], enabled=True)
    assert first.lines == ("backlog    on; last 2026-12-01T09:00:00Z: done, 1 log read, 2 new, 4.2 s (claude-code); "
                           "1 recorded: 1 done",)
    section = plan_backlog([done, late], enabled=False)
    assert section.data["last"] == late and section.data["outcomes"] == {"done": 1, "timeout": 1}
    assert section.lines[0].startswith("backlog    off (session_start_backlog = false")
    assert section.lines[1] == ("  ALERT    backlog timeout: the session_start_backlog_timeout_s deadline ended it "
                                "(runbooks/session-backlog.md)")
    assert (Path(__file__).parents[1] / "runbooks" / "session-backlog.md").is_file()
