"""Host shapes seen in the wild, each on a small hand-made session.

- Aider's architect mode: the architect's reply reaches the editor model as `####` lines; those
  lines are not the user. A conclusion is never a file dump.
- Codex in VS Code: the first message opens with an IDE-context preamble; the request is what
  follows `## My request for Codex:`. Codex 0.80 writes no task_started / task_complete.
- Claude Code's `agent-acompact-*` subagent files are compaction sidechains, not work.
"""

from __future__ import annotations

import json

from memoir.cards.collect import collect
from memoir.cards.conclude import choose_conclusion, settled_text
from memoir.cards.draft import draft_card
from memoir.cards.hosts import aider, claude_code, codex
from memoir.cards.hosts.strip import repeats_reply
from memoir.cards.quality_inputs import EvidenceView
from memoir.cards.segment import segment_session

# --- Aider architect mode ---------------------------------------------------------------------------

PLAN = [
    "The export joins fields by hand, so a name holding a comma splits into two columns:",
    "",
    "TypeError: expected str instance, list found",
    "",
    "1. In `export.py`, write each row with `csv.writer(out).writerow(row)` instead of `\",\".join(row)`.",
    "2. Keep the header row as it is.",
]
EDITOR_REPLY = [
    "export.py",
    "```python",
    "<<<<<<< SEARCH",
    "        out.write(\",\".join(row) + \"\\n\")",
    "=======",
    "        csv.writer(out).writerow(row)",
    ">>>>>>> REPLACE",
    "```",
]


def _architect_history(handoff: list[str] | None = None) -> bytes:
    """One architect-mode run: the request, the architect's plan, the hand-off, the editor's edit."""
    handoff = PLAN if handoff is None else handoff
    lines = [
        "", "# aider chat started at 2026-03-02 10:00:00", "",
        "> aider --architect  ", "> Aider v0.86.1  ",
        "> Model: o3 with architect edit format  ", "> Editor model: gpt-4.1 with editor-diff edit format  ",
        "> Git repo: .git with 12 files  ", "",
        "#### the CSV export drops rows whose name holds a comma, fix it  ", "",
        *PLAN, "",
        "> Tokens: 2.1k sent, 120 received.  ", "> Edit the files? (Y)es/(N)o [Yes]: y  ", "",
        *("#### " + ln + "  " for ln in handoff), "",
        *EDITOR_REPLY, "",
        "> Tokens: 3.0k sent, 80 received.  ", "> Applied edit to export.py  ",
        "> Commit 1a2b3c4 fix: write CSV rows with csv.writer  ",
        "",
        "#### /run pytest tests/test_export.py  ", "",
        "> Add 0.1k tokens of command output to the chat? (Y)es/(N)o [Yes]: y  ",
        "> Added 3 lines of output to the chat.  ", "",
        "The quoting is fixed: `csv.writer` quotes a field that holds a comma, so every row keeps its columns.",
        "",
    ]
    return "\n".join(lines).encode()


def _read_architect(handoff: list[str] | None = None):
    return aider.read(_architect_history(handoff), "/src/app/.aider.chat.history.md")


def test_the_architects_hand_off_to_the_editor_is_not_the_user():
    r = _read_architect()
    users = [t.text for t in r.turns if t.role == "user" and t.kind == "text"]
    assert users == ["the CSV export drops rows whose name holds a comma, fix it"]
    assert r.skipped["architect_handoff"] == 1
    replies = [t.text for t in r.turns if t.role == "assistant" and t.kind == "text"]
    assert replies[0].startswith("The export joins fields by hand") and replies[1].startswith("export.py")


def test_an_architect_plan_is_never_pasted_by_the_user_nor_the_users_words():
    turns = _read_architect().turns
    exps = segment_session(turns)
    request = [e for e in exps if any(t.role == "user" and "CSV export" in t.text for t in e.turns)]
    assert len(request) == 1
    exp = request[0]
    assert "TypeError" not in exp.error_signature  # the plan's quoted error is no pasted failure
    card = draft_card(exp)
    assert "pasted by the user" not in card.evidence
    assert "csv.writer" not in card.goal and "CSV export" in card.goal
    assert all("csv.writer" not in said for said in EvidenceView.of_experience(exp).user_words)


def test_the_users_own_answer_to_a_plan_stays_the_user():
    # Quoting one step and changing the rest is the user's own input, not a hand-off.
    answer = ["Keep step 2, but for step 1 use the DictWriter we already import in utils.py."]
    r = _read_architect(handoff=answer)
    users = [t.text for t in r.turns if t.role == "user" and t.kind == "text"]
    assert answer[0] in users and not r.skipped["architect_handoff"]


def test_a_repeat_needs_most_lines_both_ways_and_reasoning_may_ride_along():
    reply = "Step one: edit a.py.\nStep two: edit b.py.\nStep three: run the tests."
    assert repeats_reply(reply, reply)
    assert repeats_reply("<think>\nplanning the edit\n</think>\n" + reply, reply, "planning the edit")
    assert not repeats_reply("Step two: edit b.py.", reply)  # one quoted line is an answer
    assert not repeats_reply(reply + "\nAlso rename c.py.\nAnd d.py.\nAnd e.py.", reply)
    assert not repeats_reply("anything", "")


def test_lines_inside_aiders_source_fence_are_code_not_input():
    # Aider fences a file that holds backticks with <source>; its `####` headings are the file's.
    history = "\n".join([
        "", "# aider chat started at 2026-03-02 11:00:00", "", "> Aider v0.86.1  ", "",
        "#### add an install section to README.md  ", "",
        "README.md", "<source>markdown", "# app", "", "#### Install", "", "```sh", "pip install app", "```",
        "</source>", "", "> Applied edit to README.md  ", "",
    ]).encode()
    turns = aider.read(history, "/src/app/.aider.chat.history.md").turns
    assert [t.text for t in turns if t.role == "user"] == ["add an install section to README.md"]
    reply = next(t for t in turns if t.role == "assistant")
    assert "#### Install" in reply.text and reply.text.endswith("</source>")


# --- a conclusion is never a code or file dump --------------------------------------------------------

WHOLE_FILE = "\n".join(f"    line_{i} = {i}" for i in range(40))


def test_a_whole_file_is_no_conclusion():
    dump = f"Here is the updated file:\n\nsrc/config.py\n```python\n{WHOLE_FILE}\n```"
    assert settled_text(dump) == "" and settled_text(dump, allow_trim=False) == ""
    tagged = f"src/config.py\n<source>python\n{WHOLE_FILE}\n</source>"
    assert settled_text(tagged) == ""


def test_a_file_dump_leaves_the_words_around_it_as_the_conclusion():
    text = (f"The loader read `TIMEOUT` as a string, so the comparison never matched; it is an int now.\n\n"
            f"src/config.py\n```python\n{WHOLE_FILE}\n```")
    kept = settled_text(text)
    assert kept.startswith("The loader read `TIMEOUT` as a string") and "line_7" not in kept


def test_a_short_snippet_in_an_explanation_stays():
    text = ("The client gave up after 5 seconds because the default timeout is 5; passing it explicitly fixes it:\n"
            "```python\nclient = Client(timeout=30)\n```")
    assert "Client(timeout=30)" in settled_text(text)


def test_an_editors_whole_file_reply_is_not_chosen_as_the_conclusion():
    history = "\n".join([
        "", "# aider chat started at 2026-03-02 12:00:00", "", "> Aider v0.86.1  ", "",
        "#### make the timeout configurable in src/config.py  ", "",
        "src/config.py", "```python", WHOLE_FILE, "```", "",
        "> Applied edit to src/config.py  ", "> Commit 9f8e7d6 feat: timeout from the environment  ", "",
    ]).encode()
    turns = aider.read(history, "/src/app/.aider.chat.history.md").turns
    found = choose_conclusion(turns)
    assert "line_7" not in found.text


# --- Codex in VS Code, and Codex 0.80 ----------------------------------------------------------------


def _rollout(*records: dict) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def _line(kind: str, payload: dict, ts: str = "2026-01-10T14:27:32.000Z") -> dict:
    return {"timestamp": ts, "type": kind, "payload": payload}


def _user(text: str) -> dict:
    return _line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})


def _assistant(text: str) -> dict:
    return _line("response_item", {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": text}]})


def _call(call_id: str, command: str) -> list[dict]:
    return [
        _line("turn_context", {"cwd": "/src/api", "model": "gpt-5.2-codex"}),
        _line("response_item", {"type": "function_call", "name": "shell", "call_id": call_id,
                                "arguments": json.dumps({"command": ["bash", "-lc", command]})}),
        _line("response_item", {"type": "function_call_output", "call_id": call_id,
                                "output": json.dumps({"output": "3 passed", "metadata": {"exit_code": 0}})}),
    ]


IDE_PREAMBLE = (
    "# Context from my IDE setup:\n\n## Active file: api/server.py\n\n## Open tabs:\n"
    "- server.py: api/server.py\n- README.md: README.md\n\n## My request for Codex:\n"
)
PATH = "/h/.codex/sessions/2026/01/10/rollout-2026-01-10T14-27-32-019ba997-bbca-7483-9a75-07808dcc061c.jsonl"


def test_the_ide_preamble_is_not_the_request():
    data = _rollout(
        _line("session_meta", {"id": "019ba997-bbca-7483-9a75-07808dcc061c", "cwd": "/src/api"}),
        _user(IDE_PREAMBLE + "add a /health endpoint that returns 200\n"),
        *_call("c1", "pytest -q"),
        _assistant("Added `/health` to api/server.py; it returns 200 with an empty body and the tests pass."),
    )
    turns = codex.read(data, PATH).turns
    assert [t.text for t in turns if t.role == "user"] == ["add a /health endpoint that returns 200"]
    card = draft_card(segment_session(turns)[0])
    assert "/health" in card.goal and "IDE" not in card.goal and "Open tabs" not in card.goal
    assert "IDE" not in card.title and "Context" not in card.title


def test_a_preamble_with_no_request_is_no_user_message():
    r = codex.read(_rollout(_user("# Context from my IDE setup:\n\n## Active file: a.py\n")), PATH)
    assert not [t for t in r.turns if t.role == "user"] and r.skipped["ide_context"] == 1


def test_codex_080_turns_start_at_the_user_message_without_task_events():
    # 0.80 writes a turn_context before every model step and no task_started / task_complete.
    data = _rollout(
        _line("session_meta", {"id": "019ba997-bbca-7483-9a75-07808dcc061c", "cwd": "/src/api"}),
        _user("the date parser rejects 2026-01-10T14:27:32Z, fix it"),
        *_call("c1", "pytest -q tests/test_dates.py"),
        _assistant("The parser now accepts a trailing Z as UTC; tests/test_dates.py passes."),
        _user("now add a /version endpoint"),
        *_call("c2", "pytest -q tests/test_version.py"),
        _assistant("Added /version, returning the package version; tests/test_version.py passes."),
    )
    turns = codex.read(data, PATH).turns
    exps = segment_session(turns)
    assert len(exps) == 2
    assert [e.turns[0].text for e in exps] == [
        "the date parser rejects 2026-01-10T14:27:32Z, fix it", "now add a /version endpoint"]


# --- Claude Code compaction sidechains -----------------------------------------------------------------

PARENT = "0b5c1a2e-1111-4222-8333-944455556666"


def _acompact_lines() -> bytes:
    base = {"sessionId": PARENT, "isSidechain": True, "agentId": "acompact-7f3e21", "cwd": "/src/app",
            "timestamp": "2026-02-01T10:00:00Z"}
    records = [
        {**base, "type": "user", "uuid": "u1", "message": {"role": "user", "content": "fix the flaky login test"}},
        {**base, "type": "assistant", "uuid": "a1", "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "text", "text": "The login test races the session cache; awaiting the write fixes it."}]}},
        {**base, "type": "user", "uuid": "u2", "message": {"role": "user", "content":
            "Your task is to create a detailed summary of the conversation so far."}},
        {**base, "type": "assistant", "uuid": "a2", "message": {"id": "m2", "role": "assistant", "content": [
            {"type": "text", "text": "<summary>1. Primary request: fix the flaky login test.</summary>"}]}},
    ]
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def test_a_compaction_sidechain_yields_no_turns_and_says_why():
    for path in (f"/h/.claude/projects/p/{PARENT}/subagents/agent-acompact-7f3e21.jsonl",
                 "/logs/copied__subagents__agent-acompact-7f3e21.jsonl"):
        r = claude_code.read(_acompact_lines(), path)
        assert r.turns == [] and r.skipped["compaction_sidechain"] == 4, path
        assert r.consumed == len(_acompact_lines())


def test_a_compaction_sidechain_named_otherwise_is_known_by_its_agent_id():
    r = claude_code.read(_acompact_lines(), "/logs/some-export.jsonl")
    assert r.turns == [] and r.skipped["compaction_sidechain"] == 4


def test_a_run_over_a_compaction_sidechain_makes_no_session(tmp_path):
    folder = tmp_path / "projects" / "-src-app" / PARENT / "subagents"
    folder.mkdir(parents=True)
    (folder / "agent-acompact-7f3e21.jsonl").write_bytes(_acompact_lines())
    out = collect([tmp_path / "projects"], "claude-code")
    assert not out.sessions and out.skipped["compaction_sidechain"] == 4
