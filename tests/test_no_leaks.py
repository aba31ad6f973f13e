"""Nothing leaks: the secrets corpus planted in every place a session holds text, then every byte under the home searched.

The sessions are built at test time (tests/fixtures/secrets/build_sessions.py) from
tests/fixtures/secrets/corpus.jsonl (provider shapes) and unlisted.jsonl (shapes no provider
table names); memoir's real CLI runs over them with the real index and model (`run`, `recall`
with a secret-bearing prompt, deep `search`, lexical `search --turns`, `status`, `report`), the
Claude Code hook asks the warm recall service with the same prompt, and memoir runs once more into a home whose card folder refuses writes (`chattr +i`), so every
card becomes a queue item. Then every file under both homes is read as bytes (card files, the
index databases, the ledger, queue items, every .jsonl and .log), and SQLite files are also read row
by row, so a value split over database pages is still found. A secret counts as found in its
plain, JSON-escaped or lower-cased form; a failure names the corpus id, its shape and the file.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoir.cards.config import Settings
from memoir.cards.sanitize import sanitize
from memoir.flows import hook_client
from memoir.flows.cli.hook_settings import hook_command
from memoir.flows.cli.main import cli
from memoir.flows.recall_service import ask
from memoir.flows.hook_calls import read_calls
from tests.fixtures.secrets.build_sessions import CORPUS, PROVIDERS, UNLISTED, build_sessions, load_corpus, path_safe

CAP = Settings.blob_cap  # the sanitizer takes the user's cap from its caller; the default one here

ENTRIES = ([*load_corpus(CORPUS), *load_corpus(UNLISTED), *load_corpus(PROVIDERS)]
           if CORPUS.exists() and UNLISTED.exists() and PROVIDERS.exists() else [])
SECRETS = [e for e in ENTRIES if "secret" in e]
NEAR_MISSES = [e for e in ENTRIES if "near_miss" in e]
PARTIAL = 16  # a run this long of a secret's own characters is a partial leak (a redaction cut short)


def _cli(home: Path, *args: str) -> str:
    res = CliRunner().invoke(cli, ["--home", str(home), *args], catch_exceptions=False)
    assert res.exit_code == 0, f"memoir {' '.join(args[:1])} exited {res.exit_code}: {res.output[-2000:]}"
    return res.output


def _sqlite_text(path: Path) -> str:
    """Every text value of every table a plain sqlite3 can read (virtual tables it cannot load are skipped)."""
    parts: list[str] = []
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return ""
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            try:
                for row in db.execute(f'SELECT * FROM "{table}"'):
                    for value in row:
                        if isinstance(value, bytes):
                            value = value.decode("utf-8", "replace")
                        if isinstance(value, str):
                            parts.append(value)
            except sqlite3.Error:
                continue
    finally:
        db.close()
    return "\n".join(parts)


def _hook_asks(home: Path, prompt: str, workspace: str) -> None:
    """The installed hook command asks with `prompt`: once cold (it starts the recall service), once warm."""
    hook = shlex.split(hook_command(None))
    env = {**os.environ, "MEMOIR_HOME": str(home), "MEMOIR_SYNC_TIMEOUT_MS": "60000"}
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt, "session_id": "sess-leak",
                        "cwd": workspace, "transcript_path": "/tmp/t.jsonl"})
    state = home / "state"
    subprocess.run(hook, input=event, capture_output=True, text=True, env=env, timeout=120, check=True)
    pid = int((state / hook_client.LOCK_NAME).read_text())
    try:
        # Waits as long as the service process lives (a busy machine loads the model slowly); pytest's
        # timeout bounds the test, and a service that died ends the wait at once.
        while ask(state, {"op": "ping"}, 1.0) is None:
            assert Path(f"/proc/{pid}").exists(), "the recall service died before it answered"
            time.sleep(0.2)
        subprocess.run(hook, input=event, capture_output=True, text=True, env=env, timeout=120, check=True)
        outcome = read_calls(str(state))[-1]["outcome"]
        assert outcome in ("injected", "empty"), f"the warm hook's call ended {outcome}"
    finally:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)


def _standalone(secret: str) -> bool:
    """A secret the sanitizer knows without its context (a token, an e-mail, an address) can be planted in a path."""
    return path_safe(secret) and secret not in sanitize(f"/srv/{secret}/app", CAP)


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """(home, {file: lower-cased text}, run summary) after every command that writes under the home."""
    if not SECRETS:
        pytest.fail(f"no secrets corpus at {CORPUS}")
    tmp = tmp_path_factory.mktemp("no-leaks")
    home, logs = tmp / "home", tmp / "logs"
    build_sessions(logs, ENTRIES, in_path=_standalone)
    summary = json.loads(_cli(home, "run", "--logs", str(logs), "--json"))
    prompt = "why does the loader fail with these lines:\n" + "\n".join(e["line"] for e in SECRETS)
    workspace = "/srv/" + next((e["secret"] for e in SECRETS if _standalone(e["secret"])), "app") + "/settingsvc"
    _cli(home, "recall", prompt, "--json", "--workspace", workspace, "--timeout-ms", "60000")
    _cli(home, "search", prompt, "--json")
    _cli(home, "search", "--turns", prompt, "--json")
    _hook_asks(home, prompt, workspace)
    _cli(home, "status", "--json")
    _cli(home, "report")  # HOME/report.html, made from the cards and every log above
    # A second home whose card folder refuses writes: every card becomes a queue item instead.
    refused = tmp / "refused"
    (refused / "cards").mkdir(parents=True)
    subprocess.run(["chattr", "+i", str(refused / "cards")], check=True)
    try:
        queued = json.loads(_cli(refused, "run", "--logs", str(logs), "--no-index", "--json"))["queued"]
    finally:
        subprocess.run(["chattr", "-i", str(refused / "cards")], check=True)
    files: dict[str, str] = {}
    for root, prefix in ((home, ""), (refused, "refused/")):
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            data = path.read_bytes()
            text = data.decode("utf-8", "replace")
            if data[:16] == b"SQLite format 3\x00":
                text += "\n" + _sqlite_text(path)
            files[prefix + str(path.relative_to(root))] = text.lower()
    return home, files, {**summary, "queued_when_refused": queued}


def _forms(secret: str) -> set[str]:
    return {f.lower() for f in (secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1])}


def _where(files: dict[str, str], needles: set[str]) -> list[str]:
    return [name for name, text in files.items() if any(n in text for n in needles)]


def test_the_planted_sessions_make_cards_from_every_host(attacked):
    home, files, summary = attacked
    cards = [name for name in files if name.startswith("cards/") and name.endswith(".md")]
    hosts = {h for name in cards for h in ("claude-code", "codex", "aider") if f"host: {h}" in files[name]}
    assert hosts == {"claude-code", "codex", "aider"}, summary
    assert len(cards) >= len(SECRETS) // 5, summary
    assert sum(summary["redacted"].values()) >= len(SECRETS), summary["redacted"]
    queue_items = [name for name in files if name.startswith("refused/queue/pending/card_write--")]
    assert len(queue_items) == summary["queued_when_refused"]["card_write"] == len(cards)


@pytest.mark.parametrize("entry", SECRETS, ids=[f"{e['id']}-{e['shape']}" for e in SECRETS])
def test_no_secret_reaches_any_file_under_the_home(attacked, entry):
    _, files, _ = attacked
    secret = entry["secret"]
    leaked = _where(files, _forms(secret))
    assert not leaked, f"secret {entry['id']} ({entry['shape']}) stored in: {', '.join(leaked)}"
    if len(secret) >= PARTIAL * 3 // 2 and not any(c.isspace() for c in secret):
        windows = {secret[i:i + PARTIAL].lower() for i in range(0, len(secret) - PARTIAL + 1)}
        partial = _where(files, windows)
        assert not partial, f"part of secret {entry['id']} ({entry['shape']}) stored in: {', '.join(partial)}"


def _near_miss_context(entry: dict) -> str:
    """The line's text before the near-miss, when no other corpus line holds it: where it stands in a card, the near-miss must follow."""
    line = entry["line"]
    context = line[: line.index(entry["near_miss"])].lower()
    if len(context.strip()) < 8 or any(context in e["line"].lower() for e in ENTRIES if e is not entry):
        return ""
    return context


def _intact(after: str, near: str) -> bool:
    """The near-miss itself, or its start where the card cut the line (`…`)."""
    if after == near:
        return True
    cut = after.find("…")
    # At 0 (or right after the `[` of a `[…]` mark): the card's line was cut right before it.
    return cut >= 0 and near.startswith(after[:cut].removesuffix("["))


@pytest.mark.parametrize("entry", NEAR_MISSES, ids=[f"{e['id']}-{e['shape']}" for e in NEAR_MISSES])
def test_every_near_miss_is_stored_intact(attacked, entry):
    _, files, _ = attacked
    near = entry["near_miss"].lower()
    assert _where(files, {near}), f"near-miss {entry['id']} ({entry['shape']}) is nowhere under the home"
    context = _near_miss_context(entry)
    if not context:
        return  # too little text before it, or text another line shares: its place cannot be told
    for name, text in files.items():
        if not name.startswith("cards/"):
            continue
        at = text.find(context)
        while at >= 0:
            after = text[at + len(context): at + len(context) + len(near)]
            assert _intact(after, near), f"near-miss {entry['id']} ({entry['shape']}) became {after!r} in {name}"
            at = text.find(context, at + 1)
