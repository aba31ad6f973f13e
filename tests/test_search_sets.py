"""bench.search's sets: every labelled answer is a turn memoir reads, and the long set is what it claims."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from memoir.cards.collect import CollectReport, collect_file

FIXTURES = Path(__file__).parent / "fixtures"
SETS = ("conversational", "coding_sessions")


def read_set(name: str) -> tuple[list[dict], dict[str, set[int]]]:
    """The set's questions, and per session id the lines of the turns memoir reads (thinking left out)."""
    root = FIXTURES / name
    questions = [json.loads(line) for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    out = CollectReport()
    for path in sorted(root.glob("claude-code/*/*.jsonl")):
        collect_file(path, "claude-code", None, out)
    lines: dict[str, set[int]] = {}
    for turns in out.sessions.values():
        for t in turns:
            if t.kind != "thinking" and t.text.strip():
                lines.setdefault(t.session_id, set()).add(t.line)
    return questions, lines


@pytest.mark.parametrize("name", SETS)
def test_every_answer_line_is_a_turn_memoir_reads_in_the_questions_session(name):
    questions, lines = read_set(name)
    assert questions
    for q in questions:
        assert (FIXTURES / name / q["file"]).exists(), q["q"]
        assert q["answer_lines"] and set(q["answer_lines"]) <= lines[q["session_id"]], q["q"]
        for group in q.get("all_of", ()):
            assert group and set(group) <= set(q["answer_lines"]), q["q"]


def test_the_long_set_has_long_sessions_and_every_kind_of_question():
    questions, lines = read_set("coding_sessions")
    kinds = Counter(q["kind"] for q in questions)
    assert len(questions) >= 60 and kinds["identifier"] >= 10 and kinds["span"] >= 3 and kinds["paraphrase"] >= 30
    assert len(lines) == 4 and all(len(found) >= 250 for found in lines.values())  # hundreds of turns each
    spans = [q for q in questions if q["kind"] == "span"]
    assert all(len(q["all_of"]) == 2 and max(q["answer_lines"]) - min(q["answer_lines"]) > 100 for q in spans)


def test_the_long_set_on_disk_is_what_its_builder_writes():
    build = FIXTURES / "coding_sessions" / "build.py"
    done = subprocess.run([sys.executable, str(build), "--check"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
