"""`memoir report`: the pure planner pinned with literals, and the page rendered by headless Chromium.

The browser test builds a real home (two pipeline runs over the shipped example sessions, real
recalls against the real index, hook calls through the hook's own writer), writes the page with the
CLI, and reads what Chromium rendered: titles, counts, a supersession chain, the run history, the
recall charts. Chromium's net log must show no request made by the page to anything but a file.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoir.cards.config import load_settings
from memoir.cards.values import STATUSES
from memoir.cards.status import count_cards, read_runs, record_run
from memoir.cards.quality_gates import GATE_HELP
from memoir.cards.store import CardStore
from memoir.cards.title import display_title
from memoir.index.report import (
    BAR_W,
    LABEL_W,
    LogEvent,
    bar_chart,
    file_url,
    hook_event,
    plan_report,
    recall_event,
    chain_of,
    render_report,
)
from tests.user_cards import EXAMPLES, FEEDCLI_LOG, card

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=timezone.utc)
HOSTILE = "<script>document.title='owned'</script><img src=x onerror=alert(1)> & co"


# --- the pure planner ----------------------------------------------------------------------------------


def test_bar_chart_scales_to_the_largest_row_and_stacks_series_left_to_right():
    chart = bar_chart("t", [("a", {"x": 2, "y": 2}), ("b", {"x": 1}), ("c", {})], ("x", "y"))
    a, b, c = chart.rows
    assert [r.total for r in chart.rows] == [4, 1, 0]
    assert [r.w for r in a.rects] == [BAR_W / 2, BAR_W / 2]
    assert a.rects[0].x == LABEL_W and a.rects[1].x == LABEL_W + BAR_W / 2
    assert [(r.series, r.w) for r in b.rects] == [("x", BAR_W / 4)]
    assert c.rects == () and chart.empty == ""
    assert bar_chart("t", [], ("x",), empty="none yet").empty == "none yet"


def test_supersession_chain_runs_oldest_to_newest_and_survives_loops_and_missing_files():
    old = card(1, created="2026-10-01", superseded_by="c-0000000000000002", status="superseded")
    mid = card(2, created="2026-10-05", supersedes=("c-0000000000000001",), superseded_by="c-0000000000000003",
               status="superseded")
    new = card(3, created="2026-10-09", supersedes=("c-0000000000000002", "c-00000000000000ff"))
    by_id = {c.id: c for c in (old, mid, new)}
    chain = chain_of(mid, by_id)
    # The whole connected chain (cards.chain): the newer card's other, deleted predecessor shows too.
    assert [link.id for link in chain] == [old.id, mid.id, new.id, "c-00000000000000ff"]
    assert [link.here for link in chain] == [False, True, False, False]
    # From the newest card: a deleted predecessor stays in the chain, marked unknown, after the cards.
    ids = [(link.id, link.known) for link in chain_of(new, by_id)]
    assert ids == [(old.id, True), (mid.id, True), (new.id, True), ("c-00000000000000ff", False)]
    looped = {old.id: old.with_(supersedes=(new.id,)), mid.id: mid, new.id: new}
    ids = [link.id for link in chain_of(mid, looped)]
    assert sorted(ids) == sorted({old.id, mid.id, new.id, "c-00000000000000ff"})  # each once, and it ends
    assert chain_of(card(9), {}) == ()


def test_log_lines_become_events_by_utc_day_with_the_gates_that_rejected():
    rec = {"ts": "2026-12-02T23:30:00-02:00", "outcome": "empty",
           "candidates": [{"gate": "injected"}, {"gate": "MinSimilarity"}, {"gate": "StaleCard"}, "junk"]}
    assert recall_event(rec) == LogEvent("2026-12-03", "empty", ("MinSimilarity", "StaleCard"))
    assert recall_event({"ts": "2026-12-01T10:00:00Z", "outcome": "exploded"}).outcome == "error"
    assert recall_event({"ts": "yesterday", "outcome": "empty"}) is None
    assert hook_event({"ts": "2026-12-01T10:00:00Z", "outcome": "cold_start"}, ("cold_start",)).outcome == "cold_start"
    assert hook_event({"outcome": "empty"}, ("empty",)) is None


def test_file_url_links_absolute_paths_only():
    assert file_url("/logs/a b.jsonl") == "file:///logs/a%20b.jsonl"
    assert file_url("relative/a.jsonl") == ""
    assert file_url("") == ""


def test_run_record_keeps_skipped_reasons_and_older_records_read_as_none(tmp_path):
    record_run(tmp_path, added=1, superseded=0, counts={}, finished="2026-12-01T02:00:00Z",
               skipped={"unreadable": 2, "bad_json": 1})
    with open(tmp_path / "runs.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"finished": "2026-12-02T02:00:00Z", "added": 3, "superseded": 1}\n')
    first, second = read_runs(tmp_path)
    assert first.skipped == (("bad_json", 1), ("unreadable", 2)) and second.skipped == ()


def test_plan_report_counts_per_day_inside_the_window_and_totals_everything():
    runs = [
        _run("2026-12-01T02:00:00Z", added=4, skipped={"unreadable": 2}),
        _run("2026-12-01T03:00:00Z", added=1, skipped={"unreadable": 1, "binary": 5}),
        _run("2026-10-01T02:00:00Z", added=9),  # before the 30-day window: table yes, chart no
    ]
    recalls = [LogEvent("2026-12-02", "injected"), LogEvent("2026-12-02", "timeout", ("StaleCard",)),
               LogEvent("2026-12-03", "empty", ("MinSimilarity", "StaleCard")), LogEvent("2025-01-01", "empty")]
    report = plan_report([card(1), card(2, topics=(), status="candidate")], {}, runs, now=NOW,
                         recalls=recalls, hook_calls=[LogEvent("2026-12-03", "cold_start")],
                         hook_outcomes=("injected", "cold_start"), run_alerts={"2026-12-01T03:00:00Z": ["model silent"]})
    assert [(r.label, r.total) for r in report.charts["nights"].rows] == [("2026-12-01", 5)]
    assert [(r.label, r.total) for r in report.charts["skipped"].rows] == [("binary", 5),
                                                                          ("files memoir may not read", 3)]
    assert [(r.label, r.total) for r in report.charts["recall"].rows] == [("2026-12-02", 2), ("2026-12-03", 1)]
    assert report.recall_totals == {"injected": 1, "timeout": 1, "empty": 2}
    assert report.top_gate == "StaleCard"
    assert [r.finished for r in report.runs] == [r.finished for r in reversed(runs)]
    assert [r.alerts for r in report.runs] == [(), ("model silent",), ()]
    assert [(t.topic, t.counts.total) for t in report.topics] == [("(none)", 1), ("docker", 1)]
    assert [(s, len(cs)) for s, cs in report.groups][:2] == [("active", 1), ("candidate", 1)]


def _run(finished, added=0, skipped=None):
    from memoir.cards.status import RunRecord

    return RunRecord(finished, added, 0, skipped=tuple(sorted((skipped or {}).items())))


def test_card_text_renders_as_text_and_every_link_stays_on_this_machine():
    hostile = card(1, title=HOSTILE, conclusion="use <b>bold</b> & see </textarea>")
    html = render_report(plan_report([hostile], {}, [], now=NOW, cards_dir="/cards"))
    assert "<script" not in html and "<img" not in html and "<b>bold" not in html
    assert "&lt;script&gt;document.title=&#39;owned&#39;&lt;/script&gt;" in html
    links = _links(html)
    assert "file:///cards/c-0000000000000001.md" in links and "file:///logs/sess-1.jsonl" in links
    assert all(u.startswith(("file:///", "#")) for u in links), links


def _links(html: str) -> list[str]:
    """Every URL the page's tags name (src, href, srcset, action, poster, data) and every CSS url(...)."""
    found: list[str] = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.extend(v or "" for k, v in attrs if k in ("src", "href", "srcset", "action", "poster", "data"))

    Tags(convert_charrefs=True).feed(html)
    return found + re.findall(r"url\(([^)]*)\)|@import", html)


# --- the CLI's mistakes --------------------------------------------------------------------------------


def _memoir():
    """The `memoir` group with every command registered, as the console script has it."""
    from memoir.flows.cli.main import cli

    return cli


def test_report_refuses_a_home_that_does_not_exist_and_an_unwritable_out(tmp_path):
    runner = CliRunner()
    gone = runner.invoke(_memoir(), ["--home", str(tmp_path / "nowhere"), "report"])
    assert gone.exit_code == 1 and "no memoir home" in gone.output
    (tmp_path / "home").mkdir()
    (tmp_path / "a-file").write_text("x")
    bad = runner.invoke(_memoir(), ["--home", str(tmp_path / "home"), "report", "--out", str(tmp_path / "a-file" / "r.html")])
    assert bad.exit_code == 1 and "cannot write" in bad.output and "--out" in bad.output
    assert not (tmp_path / "nowhere").exists()


def test_a_log_that_cannot_be_read_is_named_on_the_page_and_the_rest_still_shows(tmp_path):
    settings = load_settings(home=tmp_path / "home", env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    store = CardStore(settings.cards_dir, settings.state_dir)
    store.write(card(7, title="Pin the compose file version"))
    store.save_manifest()
    (settings.state_dir / "recall.jsonl").mkdir(parents=True)  # unreadable as a file
    record_run(settings.state_dir, added=1, superseded=0, counts={"active": 1}, finished="2026-12-01T02:00:00Z")
    with open(settings.state_dir / "runs.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"finished": "2026-12-02T0')  # a crash's torn last line
    result = CliRunner().invoke(_memoir(), ["--home", str(settings.home), "report"])
    assert result.exit_code == 0, result.output
    page = text_of((settings.home / "report.html").read_text(encoding="utf-8"))
    assert "Could not be read (1;" in page and "recall.jsonl" in page
    assert "Pin the compose file version" in page and "2026-12-01T02:00:00Z" in page


# --- the page in a real browser ------------------------------------------------------------------------

BROWSER_INITIATOR = "not an origin"  # requests Chromium makes for itself (updater, clock): not the page's


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.fail("headless Chromium is needed for the report test: `apt-get install -y chromium` "
                    "(.ci/run installs it before `make test`)")
    return found


def _render(url: str, work: Path, *extra: str) -> tuple[str, Path]:
    """Chromium's DOM after load, and its net log; no name resolves, so nothing could leave anyway."""
    netlog = work / f"net-{len(list(work.glob('net-*')))}.json"
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           f"--user-data-dir={work / 'profile'}", "--host-resolver-rules=MAP * ~NOTFOUND",
           f"--log-net-log={netlog}", *extra, "--dump-dom", url]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, netlog


def page_requests(netlog: Path) -> list[str]:
    """URLs the page asked for that are not files or data: every request not started by the browser itself."""
    log = json.loads(netlog.read_text(encoding="utf-8"))
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    assert log["events"], "empty net log: Chromium did not log, so the check would prove nothing"
    starts = [e["params"] for e in log["events"] if e["type"] == start and "url" in e.get("params", {})]
    return [p["url"] for p in starts
            if p.get("initiator") != BROWSER_INITIATOR and not p["url"].startswith(("file:", "data:"))]


class _Text(HTMLParser):
    """The text a reader sees (style and hover tips excluded), whitespace collapsed."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        self._skip += tag in ("style", "title")

    def handle_endtag(self, tag):
        self._skip -= tag in ("style", "title")

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def text_of(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return " ".join(" ".join(parser.parts).split())


def _block(dom: str, pattern: str) -> str:
    found = re.search(pattern, dom, re.S)
    assert found, f"{pattern!r} not in the rendered page"
    return found.group(0)


@pytest.fixture(scope="module")
def library(tmp_path_factory, embedder):
    """A real home: two runs (the first raises the append-only alarm), a hostile card, recalls, hook calls."""
    from memoir.flows import hook_client
    from memoir.flows.pipeline import run_pipeline
    from memoir.index.recall import recall

    root = tmp_path_factory.mktemp("report")
    env = {"XDG_CONFIG_HOME": str(root / "xdg"), "MEMOIR_APPEND_ONLY_RUNS": "1"}
    settings = load_settings(home=root / "home", env=env)
    run_pipeline(settings, [FEEDCLI_LOG])
    odd = root / "odd-logs"
    odd.mkdir()
    (odd / "empty.jsonl").write_text("")  # skipped as empty: the run history must say so
    run_pipeline(settings, [EXAMPLES, odd])
    store = CardStore(settings.cards_dir, settings.state_dir)
    store.write(card(1, title=HOSTILE, created="2026-11-30T10:00:00+00:00"))
    store.save_manifest()
    recall(settings, "npm run build fails: TS2339 Property 'json' does not exist on type Response (undici fetch)",
           embedder=embedder, budget_ms=600_000)  # the CLI's wait: a busy machine must not make it a timeout
    recall(settings, "what is a good sourdough hydration for a rye loaf", embedder=embedder, budget_ms=600_000)
    recall(settings, "sqlite database is locked in the test fixture", embedder=embedder, budget_ms=0.01)
    for outcome in ("injected", "empty", "cold_start", "injected"):
        hook_client.record_call(str(settings.state_dir), "UserPromptSubmit", outcome, 12.0)
    return settings


@pytest.mark.slow
def test_report_opens_offline_in_chromium_with_cards_chains_runs_and_recall(library, tmp_path):
    out = tmp_path / "page" / "report.html"
    result = CliRunner().invoke(_memoir(), ["--home", str(library.home), "report", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    cards, problems = CardStore(library.cards_dir, library.state_dir).load_all()
    assert printed == {"path": str(out), "cards": len(cards)} and not problems

    html = out.read_text(encoding="utf-8")
    links = _links(html)
    assert any(u.startswith("file:///") and u.endswith(".md") for u in links)
    assert all(u.startswith(("file:///", "#")) for u in links), [u for u in links if not u.startswith(("file:", "#"))]

    dom, netlog = _render(out.as_uri(), tmp_path)
    assert page_requests(netlog) == []
    page = text_of(dom)

    # Cards: every title, the status counts as the files say, the hostile title as plain text.
    for c in cards:
        assert display_title(c) in page
    counts = count_cards(cards)
    expected = " ".join(f"{counts.to_dict()[s]} {s}" for s in STATUSES) + f" · {counts.total} total"
    assert text_of(_block(dom, r'<p id="counts">.*?</p>')) == expected
    assert "<script" not in dom and "<img" not in dom and HOSTILE in page

    # A chain: the superseded card's block lists it, then the card that replaced it.
    old = next(c for c in cards if c.status == "superseded" and c.superseded_by)
    new = next(c for c in cards if c.id == old.superseded_by)
    chain = text_of(_block(dom, rf'<details class="card" id="{old.id}".*?</details>'))
    assert "supersession chain" in chain
    assert chain.index(display_title(old), chain.index("supersession chain")) < chain.rindex(display_title(new))
    for source in old.sources:
        assert f"{source.file}:{source.lines[0]}-{source.lines[1]}" in chain

    # Run history: both runs, the second's skipped file, the alarm raised by the first and cleared.
    runs = read_runs(library.state_dir)
    table = _block(dom, r'<table id="run-table">.*?</table>')
    assert table.count("<tr>") == len(runs) + 1 == 3
    assert "1 empty" in text_of(table) and "append_only_never_superseded" in text_of(table)
    alarms = text_of(_block(dom, r'<table id="alarms">.*?</table>'))
    assert "raised append_only_never_superseded" in alarms and "cleared append_only_never_superseded" in alarms

    # Recall: the charts' day labels and totals as the logs say.
    records = [json.loads(line) for line in (library.state_dir / "recall.jsonl").read_text().splitlines()]
    outcomes = Counter(r["outcome"] for r in records)
    assert outcomes["timeout"] == 1 and sum(outcomes.values()) == 3
    today = datetime.now(timezone.utc).date().isoformat()
    recall_chart = _block(dom, r'<svg[^>]*aria-label="Recalls per day".*?</svg>')
    assert text_of(recall_chart) == f"{today} 3"
    hook_chart = _block(dom, r'<svg[^>]*aria-label="Hook calls per day".*?</svg>')
    assert text_of(hook_chart) == f"{today} 4"
    said = text_of(_block(dom, r'<section id="recall">.*?</p>'))
    assert "recalls logged: " + ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items())) in said
    assert "hook calls: 1 cold_start, 1 empty, 2 injected" in said
    gates = Counter(c["gate"] for r in records for c in r["candidates"] if c["gate"] != "injected")
    if gates:
        top = text_of(_block(dom, r'<b id="top-gate">.*?</b>'))
        assert gates[top] == max(gates.values())

    # The questions, newest first: what each got, and for a miss the gate and figure in words.
    questions = _block(dom, r'<table class="questions">.*?</table>')
    rows = re.findall(r"<tr class=\"q-(\w+)\">(.*?)</tr>", questions, re.S)
    assert [o for o, _ in rows] == [r["outcome"] for r in reversed(records)]
    for (outcome, row), record in zip(rows, reversed(records)):
        assert record["query"][:40] in text_of(row)
        if record.get("injected"):
            assert all(f'href="#{i}"' in row for i in record["injected"])
        else:
            assert '<span class="why">' in row  # a miss always says why
    timeout_row = text_of(next(row for o, row in rows if o == "timeout"))
    assert "budget" in timeout_row or "deadline" in timeout_row or "timeout" in timeout_row

    # A held card says why in words, with what clears it.
    held = next(c for c in cards if c.gate and c.gate in GATE_HELP)
    block = text_of(_block(dom, rf'<details class="card" id="{held.id}".*?</details>'))
    assert "Held back: " + " ".join(GATE_HELP[held.gate].split()) in block


def test_the_net_log_check_catches_a_page_that_loads_from_the_network(tmp_path):
    """The control: the same check on a page with an outside image and stylesheet must find both."""
    page = tmp_path / "leaky.html"
    page.write_text('<!DOCTYPE html><link rel="stylesheet" href="https://cdn.example.org/x.css">'
                    '<p>hi</p><img src="http://example.invalid/leak.png">', encoding="utf-8")
    _, netlog = _render(page.as_uri(), tmp_path)
    assert sorted(page_requests(netlog)) == ["http://example.invalid/leak.png", "https://cdn.example.org/x.css"]


def test_a_missed_question_names_its_closest_card_the_gate_in_words_and_the_figure():
    from memoir.index.report import RECALL_GATE_WORDS, question_view

    record = {"ts": "2026-12-01T10:00:00+00:00", "query": "pytest cannot import yaml", "outcome": "empty",
              "injected": [], "candidates": [
                  {"id": "c-1", "gate": "SimilarityBelowMinimum", "similarity": 0.412},
                  {"id": "c-2", "gate": "StatusNotActive", "similarity": 0.3}]}
    view = question_view(record, {})
    assert view.when == "2026-12-01 10:00" and view.got == ()
    assert view.why == f"closest c-1: {RECALL_GATE_WORDS['SimilarityBelowMinimum']} (similarity 0.41)"
    nothing = question_view({**record, "candidates": []}, {})
    assert nothing.why == "no card came near the question"
    got = question_view({**record, "outcome": "injected", "injected": ["c-9"]}, {"c-9": "Pin yaml"})
    assert got.got == (("c-9", "Pin yaml"),) and got.why == ""
    assert question_view({"query": "torn"}, {}) is None


def test_skip_reasons_read_in_words_with_bookkeeping_last():
    from memoir.index.report import skip_order, skip_words

    ordered = skip_order([("ignored_type", 2203), ("bad_json", 3), ("unknown_format", 7)])
    assert [r for r, _ in ordered] == ["unknown_format", "bad_json", "ignored_type"]
    assert skip_words("unknown_format") == "files no reader recognises"
    assert skip_words("some_new_reason") == "some new reason"
