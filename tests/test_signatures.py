import json

import pytest

from memoir.cards.signals import exit_code
from memoir.cards.signatures import error_signature, is_error_output

LOCKED = "OperationalError: database is locked"
TRACEBACK = (
    "Traceback (most recent call last):\n  File \"/srv/app/db.py\", line 41, in get\n    cur.execute(sql)\n"
    "sqlite3.OperationalError: database is locked"
)


@pytest.mark.parametrize("text,expected", [
    ("Traceback (most recent call last):\n  File \"/srv/app/db.py\", line 41, in get\n"
     "sqlite3.OperationalError: database is locked", "OperationalError: database is locked"),
    ("ImportError: cannot import name 'bar' from 'foo' (/home/dev/app/foo.py)",
     "ImportError: cannot import name <str> from <str> (<path>)"),
    ("fatal error: concurrent map writes\n\ngoroutine 7 [running]:", "fatal: concurrent map writes"),
    # Was pinned as "E0502: <path>:<n>:<n>: error[E<n>]: …": the location and the code itself leaked
    # into the message, so cargo's own `error[E0502]: …` line gave a different signature.
    ("src/main.rs:12:5: error[E0502]: cannot borrow `v` as mutable", "E0502: cannot borrow `v` as mutable"),
    ("--- FAIL: TestShorten (0.00s)\n    shorten_test.go:19: got 404", "FAIL: TestShorten"),
    ("test result: ok. 19 passed; 0 failed; 0 ignored", ""),
    ('{"compilerOptions": {"target": "ES2022"}}', ""),
])
def test_error_signature(text, expected):
    assert error_signature(text) == expected


def test_same_failure_on_two_machines_has_one_signature():
    a = "PermissionError: [Errno 13] Permission denied: '/home/ann/app/data/cache.db'"
    b = "PermissionError: [Errno 13] Permission denied: '/Users/bob/src/app/data/cache.db'"
    assert error_signature(a) == error_signature(b)


@pytest.mark.parametrize("text", [
    # after `| tail -3`: only the last frame and the exception line are left
    "    return self._conn.execute(sql)\n           ^^^^^^^^^^^^^^^^^^^^^^^\nsqlite3.OperationalError: database is locked",
    # a Claude Code Bash error: the host's exit line first, then stderr
    "Exit code 1\n" + TRACEBACK,
    # a traceback between tqdm progress redraws (\r) and progress lines
    "  3%|▍         | 1/31 [00:01<00:30,  1.0it/s]\r  6%|▊         | 2/31 [00:02<00:29,  1.0it/s]\r"
    + TRACEBACK + "\n 10%|█         | 3/31 [00:03<00:28,  1.0it/s]",
    # pytest's own report: the `E` line, the location line, and the summary line
    "E   sqlite3.OperationalError: database is locked\n\napp/db.py:41: OperationalError\n"
    "=========================== short test summary info ============================\n"
    "FAILED tests/test_db.py::test_save - sqlite3.OperationalError: database is locked\n1 failed in 0.40s",
    # a long output the reader clipped in the middle: the traceback's head and tail survive
    "collected 31 items\n" + "." * 60 + "\n…[12840 chars cut]…\n" + TRACEBACK.split("\n", 2)[2],
    # a Codex result: JSON with escaped newlines and the exit code in metadata
    json.dumps({"output": TRACEBACK + "\n", "metadata": {"exit_code": 1, "duration_seconds": 0.4}}),
    # the same JSON clipped so it no longer parses
    json.dumps({"output": "collected 31 items\n" + TRACEBACK + "\n" + "x" * 50, "metadata": {"exit_code": 1}})[:-30],
])
def test_python_traceback_last_line_is_found_in_any_shape(text):
    assert error_signature(text) == LOCKED


def test_an_exception_line_clipped_at_240_characters_keeps_its_signature():
    line = "sqlite3.OperationalError: database is locked while writing batch " + " ".join(
        f"/srv/app/data/part-{n}.db" for n in range(20))
    assert len(line) > 400
    assert error_signature(TRACEBACK.rsplit("\n", 1)[0] + "\n" + line[:240]) == error_signature(
        TRACEBACK.rsplit("\n", 1)[0] + "\n" + line)


def test_same_failure_in_a_claude_code_bash_result_and_a_codex_json_output_has_one_signature():
    claude = "Exit code 1\n" + TRACEBACK.replace("/srv/app", "/home/ann/shop") + "\n1 failed in 0.40s"
    codex = json.dumps({"output": TRACEBACK.replace("/srv/app", "/Users/bob/src/shop") + "\n1 failed in 0.41s\n",
                        "metadata": {"exit_code": 1, "duration_seconds": 0.5}})
    assert error_signature(claude) == error_signature(codex) == LOCKED


@pytest.mark.parametrize("text,expected", [
    # Node / TypeScript
    ("Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/app/src/db.js' imported from /app/src/index.js\n"
     "    at finalizeResolution (node:internal/modules/esm/resolve:265:11)\n\nNode.js v20.11.0",
     "ERR_MODULE_NOT_FOUND: Cannot find module <str> imported from <path>"),
    ("src/cart.ts(12,5): error TS2322: Type 'string' is not assignable to type 'number'.",
     "TS2322: Type <str> is not assignable to type <str>."),
    ("TypeError: Cannot read properties of undefined (reading 'id')\n    at Cart.total (/app/src/cart.js:14:22)",
     "TypeError: Cannot read properties of undefined (reading <str>)"),
    # Go
    ("panic: runtime error: index out of range [5] with length 3\n\ngoroutine 1 [running]:\nmain.main()\n"
     "\t/app/main.go:8 +0x1d\nexit status 2", "panic: runtime error: index out of range [<n>] with length <n>"),
    # Rust
    ("error[E0502]: cannot borrow `v` as mutable because it is also borrowed as immutable\n --> src/main.rs:4:5",
     "E0502: cannot borrow `v` as mutable because it is also borrowed as immutable"),
    ("thread 'main' panicked at src/main.rs:4:5:\nindex out of bounds: the len is 3 but the index is 5",
     "panicked: index out of bounds: the len is <n> but the index is <n>"),
    # a build script's panic, as cargo shows it: indented, the message after a blank line
    ("  --- stderr\n  thread 'main' panicked at build/find_normal.rs:190:5:\n\n  Could not find directory of "
     "OpenSSL installation\n", "panicked: Could not find directory of OpenSSL installation"),
    # Java: the root cause (`Caused by:`) is the last exception line
    ("Exception in thread \"main\" java.lang.IllegalStateException: pool exhausted\n\tat com.acme.Pool.get(Pool.java:42)",
     "IllegalStateException: pool exhausted"),
    ("Exception in thread \"main\" java.lang.RuntimeException: boot failed\n\tat com.acme.App.main(App.java:9)\n"
     "Caused by: java.net.ConnectException: Connection refused\n\tat java.base/sun.nio.ch.Net.connect0(Native Method)",
     "ConnectException: Connection refused"),
    # Elixir
    ("  1) test mount renders (ShopWeb.CartLiveTest)\n     ** (RuntimeError) no :secret_key_base configuration found\n",
     "RuntimeError: no :secret_key_base configuration found"),
    # shell
    ("bash: foo: command not found", "command not found: foo"),
    ("Exit code 127\n/bin/bash: line 1: python: command not found", "command not found: python"),
    ("zsh: command not found: python", "command not found: python"),
    ("exit status 1", "exit code 1"),
    ("Process exited with code 2", "exit code 2"),
    ("make: *** [Makefile:12: test] Error 2", "exit code 2"),
    ("Segmentation fault (core dumped)", "Segmentation fault"),
    # HTTP
    ("HTTP/1.1 413 Payload Too Large\nContent-Type: text/html", "HTTP 413 Payload Too Large"),
    ("<html><head><title>502 Bad Gateway</title></head></html>", "HTTP 502 Bad Gateway"),
    ("curl: (22) The requested URL returned error: 503", "HTTP 503 Service Unavailable"),
    # Kubernetes / Terraform / Docker
    ("NAME                  READY   STATUS             RESTARTS   AGE\nweb-7d9c6b5f4-x2k8q   0/1     CrashLoopBackOff   5          3m",
     "CrashLoopBackOff"),
    ("╷\n│ Error: Invalid value for input variable\n│\n│   on main.tf line 3:\n╵", "Error: Invalid value for input variable"),
    ("docker: Error response from daemon: Conflict. The container name \"/web\" is already in use.",
     "docker: Conflict. The container name <str> is already in use."),
    # type checkers and linters
    ("app/x.py:12: error: Incompatible types in assignment (expression has type \"int\", variable has type \"str\")"
     "  [assignment]\nFound 1 error in 1 file (checked 3 source files)",
     "assignment: Incompatible types in assignment (expression has type <str>, variable has type <str>)"),
    ("/home/dev/app/src/a.js\n  12:5  error  'foo' is assigned a value but never used  no-unused-vars\n\n"
     "✖ 1 problem (1 error, 0 warnings)", "no-unused-vars: <str> is assigned a value but never used"),
    # CI job failures pasted by a user
    ("Run pytest -q\n2026-05-01T10:00:00.1234567Z ##[error]Process completed with exit code 1.", "exit code 1"),
    ("Error: Process completed with exit code 1.", "exit code 1"),
    ("##[error]The job running on runner GitHub Actions 2 has exceeded the maximum execution time of 360 minutes.",
     "The job running on runner GitHub Actions <n> has exceeded the maximum execution time of <n> minutes."),
    # failing tests by name, when no exception says more
    ("FAILED tests/test_api.py::test_upload - assert 413 == 200\n1 failed in 0.1s", "FAIL: test_api.py::test_upload"),
    ("FAIL src/cart.test.ts\n  ● Cart › totals\n\n    expect(received).toBe(expected)", "FAIL: cart.test.ts"),
    # plain error lines keep their tool's prefix
    ("Exit code 1\ncat: notes.txt: No such file or directory", "cat: notes.txt: No such file or directory"),
    ("fatal: not a git repository (or any of the parent directories): .git",
     "fatal: not a git repository (or any of the parent directories): .git"),
])
def test_failure_shapes(text, expected):
    assert error_signature(text) == expected


@pytest.mark.parametrize("text,expected", [
    # the exception beats the host's and the runner's exit lines around it
    ("Exit code 1\n" + TRACEBACK + "\nexit status 1\nError: Process completed with exit code 1.", LOCKED),
    # a coded compiler error beats `make`'s generic one
    ("src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.\n"
     "make: *** [Makefile:4: build] Error 2", "TS2322: Type <str> is not assignable to type <str>."),
    # a named failing test beats the package's FAIL and the exit status
    ("--- FAIL: TestShorten (0.00s)\nFAIL\nexit status 1\nFAIL\tgithub.com/acme/shorten\t0.01s", "FAIL: TestShorten"),
    # an error line that opens with the error beats prose mentioning one
    ("retrying after the upload error handler ran\nerror: upload rejected by server", "error: upload rejected by server"),
    # a warning is not the failure when an error line is there
    ("DeprecationWarning: pkg_resources is deprecated\nerror: metadata-generation-failed", "error: metadata-generation-failed"),
])
def test_the_most_specific_line_wins(text, expected):
    assert error_signature(text) == expected


@pytest.mark.parametrize("text", [
    "app/error_handler.py\napp/handlers/retry.py",
    "5 passed, 0 failed in 0.3s",
    "Build succeeded.\n    0 Warning(s)\n    0 Error(s)",
    "    raise ValueError(f'bad sku {sku}')",
    "app/log.py:12:    logger.error('upload failed: %s', err)",
    '{"output":"","metadata":{"exit_code":0,"duration_seconds":0.2}}',
])
def test_outputs_that_are_not_failures(text):
    assert not is_error_output(text)


@pytest.mark.parametrize("text,code", [
    ("Exit code 1\ncat: x: No such file or directory", 1),
    ('{"output":"","metadata":{"exit_code":2,"duration_seconds":0.0}}', 2),
    ("failed in sandbox LinuxSeccomp with execution error: sandbox denied exec error, exit code: 1, stdout: ", 1),
    ("make: *** [all] Error 2", 2),
    ("Process exited with code 0", 0),
    ("4 passed in 0.3s", None),
])
def test_exit_code_from_any_host(text, code):
    assert exit_code(text) == code
    assert is_error_output(text) == bool(code)


def test_a_program_make_cannot_find_reads_like_the_shell_saying_command_not_found():
    make = "golangci-lint run ./...\nmake: golangci-lint: No such file or directory\nmake: *** [Makefile:14: lint] Error 127"
    assert error_signature(make) == error_signature("bash: line 1: golangci-lint: command not found") \
        == "command not found: golangci-lint"


def test_an_api_json_error_body_gives_its_code_and_message():
    body = '{"statusCode":413,"code":"FST_ERR_CTP_BODY_TOO_LARGE","error":"Payload Too Large","message":"Request body is too large"}'
    assert error_signature(body) == "FST_ERR_CTP_BODY_TOO_LARGE: Request body is too large"


def test_an_error_headline_beats_a_generic_failed_line():
    out = ("failed to load config from /home/runner/work/app/vitest.config.ts\n"
           "Error: Cannot find module @rollup/rollup-linux-x64-gnu. npm has a bug related to optional dependencies")
    assert error_signature(out).startswith("Error: Cannot find module")


def test_a_function_with_its_arity_is_named_not_masked_as_a_path():
    sig = error_signature("** (CompileError) test/live_test.exs:12: undefined function get/2 (expected X to define "
                          "such a function or for it to be imported, but none are available)")
    assert "get/" in sig and "<path>:" in sig  # the file is a path, the function is not


@pytest.mark.parametrize("said", [
    "KeyError: 'user_id' from current_user in app/auth.py after I logged in again",
    "I get KeyError: 'user_id' when I open /profile, any idea?",
    "al abrir el perfil sale KeyError: 'user_id' cuando inicio sesión",
    "Traceback (most recent call last):\n  File \"app/auth.py\", line 12, in current_user\n"
    "    return session[\"user_id\"]\nKeyError: 'user_id'",
])
def test_a_signature_is_the_error_not_the_words_a_person_wrote_around_it(said):
    assert error_signature(said) == "KeyError: <str>"


def test_a_tools_own_message_keeps_its_words_after_a_quoted_value():
    assert error_signature("AttributeError: 'NoneType' object has no attribute 'id'") == \
        "AttributeError: <str> object has no attribute <str>"
    assert error_signature("tests/t.py:3: ProgrammingError: SQLite objects created in a thread can only be used "
                           "in that same thread.").startswith("ProgrammingError: SQLite objects created in a thread can")


@pytest.mark.parametrize("text,shown", [
    ("src/a.ts:3:1 - error TS2304: Cannot find name 'Blob'.", "TS2304: Cannot find name 'Blob'."),
    ("Error: Database out of sync with JSONL. Run 'bd sync --import-only' to fix.\n\nThe JSONL file changed",
     "Error: Database out of sync with JSONL. Run 'bd sync --import-only' to fix."),
    # the kind is named apart from the line that holds the message
    ("     error: undefined function assert_broadcast/2 (expected X to define it)\n     │\n\n"
     "** (CompileError) test/x_test.exs: cannot compile module X (errors have been logged)",
     "CompileError: undefined function assert_broadcast/2 (expected X to define it)"),
])
def test_an_error_is_shown_with_the_names_its_signature_masks(text, shown):
    from memoir.cards.signatures import shown_error
    sig = error_signature(text)
    assert "<" in sig
    assert shown_error(text, sig) == shown


def test_an_error_whose_line_is_not_in_the_text_is_shown_as_its_signature():
    from memoir.cards.signatures import shown_error
    assert shown_error("nothing here", "KeyError: <str>") == "KeyError: <str>"
    assert shown_error("KeyError: 'a'", "KeyError: 'a'") == "KeyError: 'a'"


def test_the_sentence_a_tool_prints_after_its_error_is_read_as_its_own_explanation():
    from memoir.cards.signatures import explained
    text = ("Error: Database out of sync with JSONL. Run 'bd sync --import-only' to fix.\n\n"
            "The JSONL file has been updated (e.g., after 'git pull') but the database\n"
            "hasn't been imported yet. This would cause you to see stale data.\n\nTo fix:\n  bd sync --import-only")
    assert explained(text, error_signature(text)) == (
        "The JSONL file has been updated (e.g., after 'git pull') but the database hasn't been imported yet.")
    trace = 'Traceback (most recent call last):\n  File "a.py", line 2, in <module>\nKeyError: \'x\'\n'
    assert explained(trace, error_signature(trace)) == ""
    frames = "TypeError: x is not a function\n    at main (/app/index.js:3:5)\n    at Object.<anonymous> (/app/index.js:9:1)"
    assert explained(frames, error_signature(frames)) == ""


def test_a_powershell_error_record_has_one_signature_in_any_language_and_is_shown_in_its_own():
    """PowerShell localizes the message but not the category or the error id: those are the key."""
    record = ("{where}\n+ cd \"C:\\\\x\" && dir\n+              ~~\n{message}\n"
              "    + CategoryInfo          : ParserError: (:) [], ParentContainsErrorRecordException\n"
              "    + FullyQualifiedErrorId : InvalidEndOfLine\n")
    english = record.format(where="At line:1 char:15",
                            message="The token '&&' is not a valid statement separator in this version.")
    chinese = record.format(where="所在位置 行:1 字符: 15", message="标记“&&”不是此版本中的有效语句分隔符。")
    assert error_signature(english) == error_signature(chinese) == "ParserError: InvalidEndOfLine"
    from memoir.cards.signatures import shown_error
    assert shown_error(chinese, "ParserError: InvalidEndOfLine") == "ParserError: 标记“&&”不是此版本中的有效语句分隔符。"
    assert shown_error(english, "ParserError: InvalidEndOfLine").endswith("is not a valid statement separator in this version.")
