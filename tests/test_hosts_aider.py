import re
from pathlib import Path

from memoir.cards.hosts import aider
from memoir.cards.hosts.base import Carry
from memoir.cards.hosts.aider_lines import CLEAR, COMMAND, MODE, REQUEST, RUN, read_input
from memoir.cards.loop import walk
from memoir.cards.segment import segment_session

FIXTURES = Path(__file__).parent / "fixtures" / "hosts"
FIXTURE = FIXTURES / "sample.aider.chat.history.md"
WINDOWS = FIXTURES / "windows.aider.chat.history.md"  # v0.84 shape: banner, thinking, /run, /test, prompts
COMMIT_OUTPUT = re.compile(r"\[[\w./-]+ [0-9a-f]{7,}\] ")  # what a segmenter takes for a successful commit


def _read(data: bytes | None = None):
    return aider.read(FIXTURE.read_bytes() if data is None else data, str(FIXTURE))


def _windows():
    return aider.read(WINDOWS.read_bytes(), str(WINDOWS))


def _session(r, n: int):
    return [t for t in r.turns if t.session_id == r.session_ids[n]]


def test_one_file_yields_a_session_per_header():
    r = _read()
    assert len(r.session_ids) == 2
    assert r.session_ids[0] == aider.session_id_for(str(FIXTURE), 2)
    first = [t for t in r.turns if t.session_id == r.session_ids[0]]
    assert [t.seq for t in first] == list(range(len(first)))
    assert {t.timestamp.isoformat()[:19] for t in first} == {"2025-07-15T11:38:37"}


def test_start_up_banner_is_the_runs_first_turn():
    first = _read().turns[0]
    assert (first.role, first.kind, first.line) == ("tool", "tool_result", 4)
    assert first.text == "Aider v0.85.1\nMain model: gpt-4o with diff edit format"


def test_consecutive_user_lines_are_one_message_and_search_replace_stays_assistant():
    turns = _read().turns
    assert [(t.role, t.kind) for t in turns[1:4]] == [("user", "text"), ("assistant", "text"), ("tool", "tool_result")]
    assert turns[1].text == "add a header comment to schema.ts\nand keep it short"
    assert ">>>>>>> REPLACE" in turns[2].text


def test_applied_edit_names_the_file_and_errors_are_flagged():
    turns = _read().turns
    assert (turns[3].tool_name, turns[3].text) == ("edit", "Applied edit to schema.ts")
    assert turns[-1].kind == "error" and "Cannot find module zod" in turns[-1].text


def test_commit_is_a_git_commit_call_and_a_result_in_gits_shape():
    turns = _read().turns
    call, result = turns[4], turns[5]
    assert (call.role, call.kind, call.tool_name, call.text) == (
        "assistant", "tool_call", "git", 'git commit -m "feat: add header comment"')
    assert (result.kind, result.tool_name) == ("tool_result", "git")
    assert result.text == "[aider dde0244] feat: add header comment"
    assert COMMIT_OUTPUT.search(result.text) and call.line == result.line == 20


def test_every_turn_has_its_1_based_line():
    data = WINDOWS.read_bytes()
    lines = data.decode().split("\n")
    r = _windows()
    for t in r.turns:
        source = lines[t.line - 1]
        if t.text == aider.WATCH_REQUEST:
            assert source.startswith("> Processing your request")
        elif t.role == "user" or t.text == "exit status 0":  # a passing /test's result sits on its line
            assert source.startswith("#### ")
        elif t.role == "tool" or t.kind == "tool_call":
            assert source.startswith("> ") or t.text in source
        elif t.kind == "thinking":
            assert source.startswith(("<thinking-content-", "<think>"))
        else:
            assert t.text.split("\n")[0] in source
    ask = next(t for t in r.turns if t.text.startswith("Add an async version"))
    assert ask.line == 24
    assert lines[ask.line - 1] == "#### Add an async version of unionIterables to iterables.union.ts  "


def test_workspace_is_the_banners_git_dir_else_the_history_folder():
    r = _windows()
    assert {t.cwd for t in _session(r, 0)} == {str(WINDOWS.parent)}
    assert {t.cwd for t in _session(r, 1)} == {"C:\\Users\\user\\Projects\\mono"}
    assert all(t.cwd for t in r.turns)


def test_thinking_blocks_are_thinking_turns_never_reply_text():
    turns = _session(_windows(), 1)
    thinking = [t.text for t in turns if t.kind == "thinking"]
    assert thinking == ["The user wants an async variant; the sync one collects into a Set.",
                        "The failure is an ordering issue."]
    replies = [t.text for t in turns if (t.role, t.kind) == ("assistant", "text")]
    assert not any("think" in r.lower() and "<" in r for r in replies)
    assert "The test expects insertion order; I will keep it." in replies


def test_code_fence_keeps_quote_and_heading_lines_as_code():
    reply = next(t for t in _windows().turns if t.text.startswith("Okay, I will add"))
    assert "> not a tool line: this is code" in reply.text and "#### not user input either" in reply.text
    assert reply.text.endswith(">>>>>>> REPLACE\n````")


def test_run_and_test_are_run_tool_calls_with_their_results():
    turns = _session(_windows(), 1)
    runs = [(t.role, t.kind, t.tool_name, t.text) for t in turns if t.tool_name == "run"]
    assert runs == [
        ("user", "tool_call", "run", "pnpm vitest run iterables.union"),
        ("tool", "tool_result", "run", "Added 12 lines of output to the chat."),
        ("user", "tool_call", "run", "pnpm vitest run"),
        ("tool", "error", "run", "Added 40 lines of output to the chat."),  # /test output is added only on failure
        ("user", "tool_call", "run", "pnpm vitest run"),
        ("tool", "tool_result", "run", "exit status 0"),  # a /test that added nothing passed
        ("assistant", "tool_call", "run", "pnpm lint"),  # proposed by the model, allowed by the user
        ("assistant", "tool_call", "run", "pnpm format --check"),
        ("user", "tool_call", "run", "git status --short"),  # `!cmd` is /run
        ("tool", "tool_result", "run", "Added 2 lines of output to the chat."),
    ]


def test_aider_ui_lines_and_prompts_are_not_turns():
    r = _windows()
    banner = _session(r, 1)[0]
    assert banner.text.startswith("C:\\Users\\user\\.local\\bin\\aider\nAider v0.84.0\nMain model:")
    assert "Copied code context" not in banner.text
    texts = "\n".join(t.text for t in _session(r, 1)[1:])
    for ui in ("Tokens:", "(Y)es/(N)o", "Aider v0.84", "Main model", "Repo-map", "Copied code context",
               "You can use /undo", "Diff since", "Cur working dir", "\\bin\\aider"):
        assert ui not in texts
    # a prompt's subject line (the file it asked about, the commands it offered) goes with it
    results = [t.text for t in _windows().turns if t.role == "tool" and not t.tool_name]
    assert not any(text.startswith(("packages\\", "pnpm lint")) for text in results)


def test_multi_line_aider_message_is_one_error_turn():
    err = next(t for t in _windows().turns if "SEARCH/REPLACE block failed" in t.text)
    assert err.kind == "error" and err.line == 71
    assert err.text.endswith("Just reply with fixed versions of the block above that failed to match.")
    assert "const seen = new Set<unknown>();" in err.text


def test_watch_mode_request_is_a_user_turn():
    turns = _session(_windows(), 1)
    ask = next(t for t in turns if t.text == aider.WATCH_REQUEST)
    after = turns[turns.index(ask):]
    assert (ask.role, ask.kind) == ("user", "text")
    assert [(t.role, t.kind) for t in after[1:5]] == [
        ("assistant", "text"), ("tool", "tool_result"), ("assistant", "tool_call"), ("tool", "tool_result")]
    # an "AI?" comment is spelt out as input right after: that input is the request, said once
    assert [t.text for t in turns].count(aider.WATCH_REQUEST) == 1
    assert after[5].text.startswith('Find the "AI" comments below') and after[5].role == "user"


def test_clear_is_user_text_as_typed_and_aiders_own_commands_are_no_turn():
    r = _windows()
    users = [t.text for t in _session(r, 1) if (t.role, t.kind) == ("user", "text")]
    assert "/undo" not in users and users[-1] == "/clear"  # /undo sets Aider up: no request
    assert r.skipped["chat_command"] == 1


def test_run_with_only_a_banner_yields_no_user_text():
    r = _windows()
    assert len(r.session_ids) == 3
    headers = [i + 1 for i, line in enumerate(WINDOWS.read_text().split("\n")) if line.startswith("# aider chat")]
    for n in (0, 2):
        assert [(t.role, t.line) for t in _session(r, n)] == [("tool", headers[n] + 2)]
    assert _session(r, 0)[0].kind == "error"  # its banner shows the model call failing


def test_dirty_commit_before_the_edits_is_no_commit_of_the_task():
    turns = _session(_windows(), 1)
    dirty = next(t for t in turns if "before applying edits" in t.text)
    assert (dirty.kind, dirty.tool_name) == ("tool_result", "")
    assert dirty.text.endswith("Commit dd581c5 refactor: Refactor unionIterablesAsyncGen to yield directly")
    assert [t.text for t in turns if t.tool_name == "git" and t.kind == "tool_call"][0] == (
        'git commit -m "feat: add async unionIterables function"')


def test_resume_points_at_last_session_header():
    data = FIXTURE.read_bytes()
    r = _read(data)
    assert data[r.resume_at:].startswith(b"# aider chat started at 2025-07-16")
    assert r.resume_line == data[: r.resume_at].count(b"\n")


def test_rereading_from_last_header_gives_same_ids_and_seqs():
    for path in (FIXTURE, WINDOWS):
        data = path.read_bytes()
        whole = aider.read(data, str(path))
        again = aider.read(data[whole.resume_at:], str(path), start_line=whole.resume_line, carry=whole.carry)
        assert again.turns == [t for t in whole.turns if t.session_id == whole.session_id]


def test_partial_last_line_is_left_for_next_run():
    r = _read(FIXTURE.read_bytes() + b"#### half typed")
    assert r.skipped["partial_line"] == 1 and "half typed" not in r.turns[-1].text


def test_lint_run_is_a_lint_call_and_its_report_an_error():
    turns = _windows().turns
    call = next(t for t in turns if t.tool_name == "lint" and t.kind == "tool_call")
    report = turns[turns.index(call) + 1]
    assert (call.role, call.text) == ("assistant", "pnpm eslint packages\\module\\es\\src\\iterables.union.ts")
    assert (report.kind, report.tool_name) == ("error", "lint") and "prefer-const" in report.text


def test_a_default_named_history_takes_its_folder_as_workspace_over_the_banner(tmp_path):
    # The Windows fixture's banner names C:\Users\...; copied into a repo as Aider names it, the
    # repo folder it now lies in is the workspace of every run, banner or not.
    repo = tmp_path / "src" / "app"
    repo.mkdir(parents=True)
    history = repo / aider.HISTORY_NAME
    history.write_bytes(WINDOWS.read_bytes())
    r = aider.read(history.read_bytes(), str(history))
    assert len(r.session_ids) == 3 and "C:\\Users\\user\\Projects\\mono" in WINDOWS.read_text()
    assert {t.cwd for t in r.turns} == {str(repo)}


def test_an_appended_read_of_a_default_named_history_keeps_the_folder(tmp_path):
    history = tmp_path / aider.HISTORY_NAME
    data = WINDOWS.read_bytes()
    history.write_bytes(data)
    carry = Carry(session_id="aider-x", started="", cwd="C:\\Users\\user\\Projects\\mono")
    r = aider.read(data, str(history), carry=carry)
    assert {t.cwd for t in r.turns} == {str(tmp_path)}


def test_history_file_of_a_registered_folder_or_file():
    assert str(aider.history_file("/src/app")) == "/src/app/.aider.chat.history.md"
    assert str(aider.history_file("/src/app/.aider.chat.history.md")) == "/src/app/.aider.chat.history.md"
    assert str(aider.history_file("/logs/app-chat.md")) == "/logs/app-chat.md"


def test_the_banners_own_warnings_are_not_a_failure_but_a_programs_error_after_them_is():
    history = (
        "\n# aider chat started at 2026-05-02 09:00:00\n\n"
        "> Aider v0.85.1\n"
        "> Repo-map can't include /src/gone.md\n"
        "> Has it been deleted from the file system but not from git?\n\n"
        "#### run the build\n\n"
        "> Run shell command? (Y)es/(N)o [Yes]: y\n"
        "> Running npm run build\n"
        "> error TS2339: Property 'x' does not exist on type 'Y'.\n"
    ).encode()
    turns = aider.read(history, "/tmp/banner.aider.chat.history.md").turns
    banner = turns[0]
    assert "Repo-map can't include" in banner.text and banner.kind == "tool_result"
    assert [t.kind for t in turns if "TS2339" in t.text] == ["error"]


# --- in-chat commands, /run checks and architect hand-offs (tests/fixtures/aider/, hand-written) -----
LEDGER = Path(__file__).parent / "fixtures" / "aider" / "ledger" / ".aider.chat.history.md"
ARCHITECT = Path(__file__).parent / "fixtures" / "aider" / "architect" / ".aider.chat.history.md"


def _ledger(data: bytes | None = None):
    return aider.read(LEDGER.read_bytes() if data is None else data, str(LEDGER))


def test_aiders_own_commands_are_no_turn_and_start_no_experience():
    r = _ledger()
    assert r.skipped["chat_command"] == 4  # /add, /drop, /tokens, and /ask (its message comes again as input)
    typed = [t.text for t in r.turns if t.role == "user"]
    assert not any(t.startswith(("/add", "/drop", "/tokens", "/ask")) for t in typed)
    assert "/clear" in typed  # kept as typed: the segmenter ends a task there
    experiences = segment_session(r.turns)
    firsts = [next(t.text for t in e.turns if t.role == "user" and t.kind == "text") for e in experiences]
    assert firsts == ["What's wrong? Fix the rounding in total()", "add a --currency option to the report command"]
    assert not any(t.text.startswith("/") for e in experiences for t in e.turns if t.role == "user")


def test_a_mode_switch_s_message_is_the_request_said_once():
    users = [t.text for t in _ledger().turns if (t.role, t.kind) == ("user", "text")]
    assert users.count("why did the float sum drift?") == 1


def test_run_output_added_then_whats_wrong_is_a_failed_check_and_the_rerun_after_the_fix_passes():
    turns = _ledger().turns
    runs = [(t.role, t.kind, t.tool_name, t.text) for t in turns if t.tool_name == "run"]
    assert runs == [
        ("user", "tool_call", "run", "pytest -q tests/test_total.py"),
        ("tool", "error", "run", "Added 9 lines of output to the chat."),  # Aider then asked "What's wrong? Fix"
        ("user", "tool_call", "run", "pytest -q tests/test_total.py"),
        ("tool", "tool_result", "run", "Added 1 line of output to the chat."),
    ]
    fix = segment_session(turns)[0]
    checks = walk(fix.turns)
    assert [(run.command, run.failed, run.passed) for run in checks.runs] == [
        ("pytest -q tests/test_total.py", True, False), ("pytest -q tests/test_total.py", False, True)]
    assert checks.runs[0].at_result < checks.changes[0][0] < checks.runs[1].at_call  # red → change → green


def test_input_is_read_as_aider_reads_it():
    cases = {
        "fix the total": (REQUEST, ""), "!ls -la": (RUN, "ls -la"), "/run pytest -q": (RUN, "pytest -q"),
        "/ru pytest": (RUN, "pytest"), "/test": (RUN, "/test"), "/git status": (RUN, "git status"),
        "/clear": (CLEAR, ""), "/reset": (CLEAR, ""), "/ask why?": (MODE, ""), "/ask": (COMMAND, ""),
        "/add a.py\n/add b.py": (COMMAND, ""), "/cde go ahead": (COMMAND, ""), "/a x": (COMMAND, ""),
        "/undo": (COMMAND, ""), "/run": (COMMAND, ""),
    }
    assert {text: (read_input(text).kind, read_input(text).command) for text in cases} == cases


def test_a_windows_history_in_crlf_reads_as_the_same_turns():
    lf = _ledger()
    crlf = _ledger(LEDGER.read_bytes().replace(b"\n", b"\r\n"))
    def shown(r):
        return [(t.role, t.kind, t.text, t.line) for t in r.turns]

    assert shown(crlf) == shown(lf)


def test_the_architects_reply_handed_to_the_editor_is_never_the_users_words():
    for data in (ARCHITECT.read_bytes(), ARCHITECT.read_bytes().replace(b"\n", b"\r\n")):  # Aider on Windows: CRLF
        r = aider.read(data, str(ARCHITECT))
        assert r.skipped["architect_handoff"] == 1
        users = [t.text for t in r.turns if t.role == "user"]
        assert users == ["the CSV export prints 10.299999 for a 10.30 total"]
        plan = next(t for t in r.turns if t.role == "assistant" and "write_row" in t.text)
        assert plan.kind == "text" and plan.line == 13
