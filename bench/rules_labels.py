"""The rule stage against hand labels: signatures, verification, status and supersession, per set.

    python -m bench.rules --labelled            # both sets, side by side
    python -m bench.rules_labels [--json]       # the same, on its own

Two sets, written apart and labelled before memoir ran on them:
- `tests/fixtures/real/` — real Claude Code, Codex and Aider logs (labels: `signature`, `verified`);
- `tests/fixtures/second_set/` — 17 terse debugging sessions in six other projects (labels also
  give `status`, `verified_line`, `failure_conditions`, `supersedes`, `merges_with`).

Each labelled experience that deserves a card is matched to the card whose source lines overlap
it most in the same file. A signature matches when most of the label's words are in the card's
signature; verification when the card has `verified_by` (and, where the label names a line, the
verifying turn sits within `LINE_SLACK` lines of it); status when the card's status is the label's
(a label superseded by another label expects `superseded`).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from memoir.cards.collect import collect
from memoir.cards.config import load_settings
from memoir.cards.store import CardStore
from memoir.flows.pipeline import run_pipeline

ROOT = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
SETS = {"real": ROOT / "real", "second_set": ROOT / "second_set"}
LINE_SLACK = 3
_LABEL_FILES = ("labels.jsonl", "questions.jsonl", "LABELS.md", "README.md", "build.py")


@dataclass
class SetReport:
    name: str
    experiences: int = 0
    with_card: int = 0
    matched: int = 0
    signature_labelled: int = 0
    signature_found: int = 0
    signature_any: int = 0
    verified_labelled: int = 0
    verified_found: int = 0
    verified_at_line: int = 0
    status_labelled: int = 0
    status_match: int = 0
    supersessions: int = 0
    supersessions_found: int = 0
    merges: int = 0
    merges_found: int = 0
    active: int = 0
    candidate: int = 0
    active_unverified: int = 0
    misses: list = field(default_factory=list)

    def share(self, hit: int, of: int) -> float:
        return hit / of if of else 1.0

    def to_dict(self) -> dict:
        out = asdict(self)
        out.update(signature_any_share=round(self.share(self.signature_any, self.signature_labelled), 3),
                   signature_share=round(self.share(self.signature_found, self.signature_labelled), 3),
                   verified_share=round(self.share(self.verified_found, self.verified_labelled), 3),
                   status_share=round(self.share(self.status_match, self.status_labelled), 3))
        return out


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z][a-z0-9_]{2,}", text.lower())}


def signature_matches(label: str, found: str) -> bool:
    want = _words(label)
    if not found:
        return False
    return not want or len(want & _words(found)) >= max(1, (len(want) + 1) // 2)


def _rel(path: str, root: Path) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return path


def evaluate_set(name: str, folder: Path) -> SetReport:
    labels = [json.loads(ln) for ln in (folder / "labels.jsonl").read_text().splitlines() if ln.strip()]
    report = SetReport(name)
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp) / "logs"
        shutil.copytree(folder, logs, ignore=shutil.ignore_patterns(*_LABEL_FILES))
        settings = load_settings(home=Path(tmp) / "home")
        run_pipeline(settings, [logs], with_index=False)
        cards, _ = CardStore(settings.cards_dir, settings.state_dir).load_all()
        collected = collect([logs], ledger=None)
        line_of = {(host, sid, t.seq): t.line for (host, sid), turns in collected.sessions.items() for t in turns}
        spans = defaultdict(list)  # file -> [(lo, hi, card)]
        for card in cards:
            for s in card.sources:
                spans[_rel(s.file, logs)].append((s.lines[0], s.lines[1], card, s))

    superseded_ids = {lb.get("supersedes") for lb in labels if lb.get("supersedes")}
    card_of: dict[str, object] = {}
    for lb in labels:
        report.experiences += 1
        if not lb.get("card"):
            continue
        report.with_card += 1
        best, overlap = None, 0
        for lo, hi, card, src in spans.get(lb["file"], ()):
            o = min(hi, lb["end_line"]) - max(lo, lb["start_line"]) + 1
            if o > overlap:
                best, overlap = (card, src), o
        if best is None:
            report.misses.append(f"{lb.get('id', lb['file'])}: no card")
            continue
        card, src = best
        report.matched += 1
        if "id" in lb:
            card_of[lb["id"]] = card
        if lb.get("signature"):
            report.signature_labelled += 1
            report.signature_any += bool(card.error_signature)
            if signature_matches(lb["signature"], card.error_signature):
                report.signature_found += 1
            else:
                report.misses.append(f"{lb.get('id', lb['file'])}: signature {card.error_signature!r} for {lb['signature']!r}")
        verified_line = lb.get("verified_line")
        if verified_line or lb.get("verified"):
            report.verified_labelled += 1
            if card.verified_by:
                report.verified_found += 1
                line = line_of.get((src.host, src.session_id, int(card.verified_by[1:])), 0)
                if not verified_line or abs(line - verified_line) <= LINE_SLACK:
                    report.verified_at_line += 1
                else:
                    report.misses.append(f"{lb.get('id', lb['file'])}: verified at line {line}, label line {verified_line}")
            else:
                report.misses.append(f"{lb.get('id', lb['file'])}: not verified (label line {verified_line})")
        if lb.get("status") in ("active", "candidate"):
            want = "superseded" if lb.get("id") in superseded_ids else lb["status"]
            report.status_labelled += 1
            if card.status == want:
                report.status_match += 1
            else:
                report.misses.append(f"{lb.get('id')}: status {card.status} ({card.gate}) for {want}")
    for lb in labels:
        if lb.get("supersedes"):
            report.supersessions += 1
            new, old = card_of.get(lb["id"]), card_of.get(lb["supersedes"])
            if new is not None and old is not None and old.superseded_by == new.id:
                report.supersessions_found += 1
            else:
                report.misses.append(f"{lb['id']}: supersession of {lb['supersedes']} not found")
        if lb.get("merges_with"):
            report.merges += 1
            a, b = card_of.get(lb["id"]), card_of.get(lb["merges_with"])
            if a is not None and a is b:
                report.merges_found += 1
            else:
                report.misses.append(f"{lb['id']}: merge with {lb['merges_with']} not found")
    live = [c for c in cards]
    report.active = sum(c.status == "active" for c in live)
    report.candidate = sum(c.status == "candidate" for c in live)
    report.active_unverified = sum(c.status == "active" and not (c.verified_by or c.confirmed_by) for c in live)
    return report


def print_reports(reports: list[SetReport]) -> None:
    rows = [
        ("experiences (with a card)", lambda r: f"{r.experiences} ({r.with_card})"),
        ("matched to a card", lambda r: f"{r.matched}/{r.with_card}"),
        ("has a signature", lambda r: f"{r.share(r.signature_any, r.signature_labelled):.2f} ({r.signature_any}/{r.signature_labelled})"),
        ("  … that matches the label", lambda r: f"{r.share(r.signature_found, r.signature_labelled):.2f} ({r.signature_found}/{r.signature_labelled})"),
        ("verified_by found", lambda r: f"{r.share(r.verified_found, r.verified_labelled):.2f} ({r.verified_found}/{r.verified_labelled})"),
        ("  … at the labelled turn", lambda r: f"{r.verified_at_line}/{r.verified_labelled}"),
        ("status as labelled", lambda r: f"{r.share(r.status_match, r.status_labelled):.2f} ({r.status_match}/{r.status_labelled})"),
        ("supersessions found", lambda r: f"{r.supersessions_found}/{r.supersessions}"),
        ("merges found", lambda r: f"{r.merges_found}/{r.merges}"),
        ("active / candidate cards", lambda r: f"{r.active} / {r.candidate}"),
        ("active without verification", lambda r: f"{r.active_unverified}"),
    ]
    print(f"{'':32}" + "".join(f"{r.name:>20}" for r in reports))
    for label, fn in rows:
        print(f"{label:32}" + "".join(f"{fn(r):>20}" for r in reports))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print the reports as JSON")
    ap.add_argument("--misses", action="store_true", help="list every label the cards missed")
    args = ap.parse_args(argv)
    reports = [evaluate_set(name, folder) for name, folder in SETS.items()]
    if args.json:
        print(json.dumps([r.to_dict() for r in reports], indent=2))
        return 0
    print_reports(reports)
    if args.misses:
        for r in reports:
            for m in r.misses:
                print(f"  [{r.name}] {m}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
