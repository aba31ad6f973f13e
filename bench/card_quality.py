"""How good are the cards memoir makes from real logs? Compared with labels a person wrote first.

    python -m bench.card_quality [--fixtures tests/fixtures/real] [--json] [--cards]

Labels (`labels.jsonl` beside the logs) give, per experience a person would see: its first and
last host-log line, whether it deserves a card, and a reference conclusion. memoir runs on a
copy of the logs (rule stage, no index) and the bench prints:

- boundary precision / recall: a cut memoir made between two experiences of a file matches a
  labelled boundary when it falls between the end of one labelled experience and the start of
  the next (± `SLACK` lines for host bookkeeping lines);
- commit boundaries: labelled boundaries of kind `commit` that memoir also cut at;
- settled share: active cards whose conclusion is a settled statement;
- junk share: active cards that are a greeting, warm-up, hidden reasoning, a mid-work sentence
  or a question, or that cover only what the labels say deserves no card.

Beside the labels' figures (the team's own, a regression check) it prints the figure that measures
the cards: the verdicts of a reviewer who did not write the rules (`../shared/eval/JUDGE.md`, kept
in `bench/reviews/`), KEEP share and WRONG count among today's active cards it judged.

Then, for every labelled set (the real fixtures, the second set, and `../shared/eval/`'s real labels
and recall set when this checkout has that folder), active precision and coverage side by side:
each active card counts for the labelled experience its sources overlap most; precision = active
cards on an experience worth a card / active cards; coverage = experiences worth a card (and not
superseded by a later one) with an active card / those experiences.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

SLACK = 2
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "real"
SECOND_SET = FIXTURES.parent / "second_set"


@dataclass(frozen=True)
class Label:
    file: str
    start_line: int
    end_line: int
    card: bool
    kind: str = ""
    boundary: str = ""
    conclusion: str = ""


@dataclass
class Report:
    files: int = 0
    labelled_experiences: int = 0
    labelled_cards: int = 0
    boundaries: int = 0
    cuts: int = 0
    matched_boundaries: int = 0
    matched_cuts: int = 0
    commit_boundaries: int = 0
    commit_boundaries_cut: int = 0
    active: int = 0
    active_settled: int = 0
    active_junk: int = 0
    statuses: dict = field(default_factory=dict)
    junk: list = field(default_factory=list)
    missed: list = field(default_factory=list)
    extra: list = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.matched_cuts / self.cuts if self.cuts else 1.0

    @property
    def recall(self) -> float:
        return self.matched_boundaries / self.boundaries if self.boundaries else 1.0

    @property
    def settled_share(self) -> float:
        return self.active_settled / self.active if self.active else 1.0

    @property
    def junk_share(self) -> float:
        return self.active_junk / self.active if self.active else 0.0

    def to_dict(self) -> dict:
        out = asdict(self)
        out.update(boundary_precision=round(self.precision, 3), boundary_recall=round(self.recall, 3),
                   settled_share=round(self.settled_share, 3), junk_share=round(self.junk_share, 3))
        return out


def load_labels(path: Path) -> list[Label]:
    labels = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            labels.append(Label(d["file"], int(d["start_line"]), int(d["end_line"]), bool(d["card"]),
                                d.get("kind", ""), d.get("boundary", ""), d.get("conclusion", "")))
    return labels


def junk_reason(card, labels: list[Label]) -> str:
    """Why an active card is junk ('' when it is not): by the labels, then by its conclusion."""
    from memoir.cards.conclude import settled_text
    from memoir.cards.cues import is_chatter

    for s in card.sources:
        overlapping = [lb for lb in labels if _rel(s.file, lb.file)
                       and lb.start_line <= s.lines[1] and s.lines[0] <= lb.end_line]
        if overlapping and not any(lb.card for lb in overlapping):
            return f"labelled_no_card:{overlapping[0].kind}"
    if is_chatter(card.goal):
        return "greeting"
    text = card.conclusion.strip()
    if "<thinking" in text or "<think>" in text:
        return "hidden_reasoning"
    if text.rstrip().endswith("?"):
        return "question"
    if not settled_text(text, allow_trim=False):
        return "mid_work"
    return ""


def _rel(path: str, label_file: str) -> bool:
    return path.replace("\\", "/").endswith("/" + label_file)


def _experience_spans(logs: Path, settings) -> dict[str, list[tuple[int, int, str]]]:
    """Per log file (relative path): every stretch memoir cut, carded or skipped, by first line."""
    from memoir.cards.collect import collect
    from memoir.cards.segment import SegmentRules, segment_with_skips
    from datetime import timedelta
    from memoir.flows.ingest import is_subagent

    collected = collect([logs], ledger=None)
    spans: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    rules = SegmentRules(pause=timedelta(minutes=settings.pause_minutes))
    for turns in collected.sessions.values():
        if not turns or is_subagent(turns):
            continue
        turns = sorted((t for t in turns if not t.is_sidechain), key=lambda t: (t.seq, t.line))
        if not turns:
            continue
        rel = str(Path(turns[0].source_file).relative_to(logs))
        experiences, skipped = segment_with_skips(turns, rules)
        for e in experiences:
            spans[rel].append((*e.lines, "card"))
        for s in skipped:
            spans[rel].append((*s.lines, s.reason))
    return {k: sorted(v) for k, v in spans.items()}


def evaluate(fixtures: Path = FIXTURES, show_cards: bool = False) -> Report:
    from memoir.cards.config import load_settings
    from memoir.cards.store import CardStore
    from memoir.flows.pipeline import run_pipeline

    labels = load_labels(fixtures / "labels.jsonl")
    report = Report()
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp) / "logs"
        shutil.copytree(fixtures, logs, ignore=shutil.ignore_patterns("*.jsonl.labels", "labels.jsonl", "*.md.labels", "LABELS.md"))
        settings = load_settings(home=Path(tmp) / "home")
        run_pipeline(settings, [logs], with_index=False)
        cards, _ = CardStore(settings.cards_dir, settings.state_dir).load_all()
        spans = _experience_spans(logs, settings)

    by_file: dict[str, list[Label]] = defaultdict(list)
    for lb in labels:
        by_file[lb.file].append(lb)
    report.files = len(by_file)
    report.labelled_experiences = len(labels)
    report.labelled_cards = sum(lb.card for lb in labels)
    for name, file_labels in sorted(by_file.items()):
        file_labels.sort(key=lambda lb: lb.start_line)
        windows = [(a.end_line - SLACK, b.start_line + SLACK, a.boundary) for a, b in zip(file_labels, file_labels[1:])]
        cuts = [start for start, _, _ in spans.get(name, [])[1:]]
        report.boundaries += len(windows)
        report.cuts += len(cuts)
        used: set[int] = set()
        for i, (lo, hi, kind) in enumerate(windows):
            hit = next((c for c in cuts if lo < c <= hi and c not in used), None)
            if kind == "commit":
                report.commit_boundaries += 1
            if hit is not None:
                used.add(hit)
                report.matched_boundaries += 1
                report.commit_boundaries_cut += kind == "commit"
            else:
                report.missed.append(f"{name}: boundary ({kind}) between lines {lo + SLACK} and {hi - SLACK}")
        report.matched_cuts += len(used)
        report.extra.extend(f"{name}: cut at line {c}" for c in cuts if c not in used)

    report.statuses = dict(Counter(c.status for c in cards))
    for card in cards:
        if card.status != "active":
            continue
        report.active += 1
        reason = junk_reason(card, labels)
        if reason:
            report.active_junk += 1
            report.junk.append(f"{card.id} {reason}: {card.title or card.goal[:60]}")
        elif card.conclusion.strip():
            report.active_settled += 1
    if show_cards:
        for card in sorted(cards, key=lambda c: (c.sources[0].file, c.sources[0].lines)):
            s = card.sources[0]
            print(f"{card.status:10} {card.gate[:24]:24} {Path(s.file).name[:40]} L{s.lines[0]}-{s.lines[1]}  {card.title}")
    return report


# --- active precision and coverage, every labelled set ------------------------------------------------


@dataclass
class SetFigures:
    name: str
    active: int = 0
    active_on_card: int = 0  # active cards whose experience is worth a card
    worth: int = 0  # experiences worth a card, not superseded
    covered: int = 0
    active_ids: tuple[str, ...] = ()

    @property
    def precision(self) -> float:
        return self.active_on_card / self.active if self.active else 1.0

    @property
    def coverage(self) -> float:
        return self.covered / self.worth if self.worth else 1.0


def _labelled_sets(shared: Path | None) -> list[tuple[str, Path, list[dict], list[str]]]:
    """(name, log folder, labels, label paths to copy from) for every set this checkout has."""
    from bench.shared_eval import read_jsonl

    out = [("real", FIXTURES, read_jsonl(FIXTURES / "labels.jsonl"), []),
           ("second_set", SECOND_SET, read_jsonl(SECOND_SET / "labels.jsonl"), [])]
    if shared is not None:
        real = read_jsonl(shared / "eval" / "real-labels.jsonl")
        out.append(("eval real-labels", shared / "samples", real, sorted({lb["file"] for lb in real})))
        recall_set = shared / "eval" / "recall-set"
        out.append(("eval recall-set", recall_set / "sessions",
                    read_jsonl(recall_set / "labels" / "experiences.jsonl"), []))
    return out


def set_figures(name: str, folder: Path, labels: list[dict], only: list[str]) -> SetFigures:
    """Run memoir (rules, no index) over a copy of `folder` (or of the files `only` names in it)."""
    from bench.shared_eval import best_label, superseded_keys
    from memoir.cards.config import load_settings
    from memoir.cards.store import CardStore
    from memoir.flows.pipeline import run_pipeline

    figures = SetFigures(name)
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp) / "logs"
        if only:
            for rel in only:
                (logs / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(folder / rel, logs / rel)
        else:
            shutil.copytree(folder, logs, ignore=shutil.ignore_patterns(
                "*.jsonl.labels", "labels.jsonl", "questions.jsonl", "*.md.labels", "LABELS.md", "README.md", "build.py"))
        settings = load_settings(home=Path(tmp) / "home")
        run_pipeline(settings, [logs], with_index=False)
        cards, _ = CardStore(settings.cards_dir, settings.state_dir).load_all()
        placed = [(c, best_label(c, labels, logs)) for c in cards if c.status == "active"]
    stale = superseded_keys(labels)
    worth = [lb for lb in labels if lb["card"] and (lb["file"], lb["start_line"]) not in stale]
    figures.active = len(placed)
    figures.active_ids = tuple(sorted(c.id for c, _ in placed))
    figures.active_on_card = sum(1 for _, lb in placed if lb is not None and lb["card"])
    figures.worth = len(worth)
    hit = {(lb["file"], lb["start_line"]) for _, lb in placed if lb is not None}
    figures.covered = sum(1 for lb in worth if (lb["file"], lb["start_line"]) in hit)
    return figures


REVIEWS = Path(__file__).resolve().parent / "reviews"
VERDICTS = ("KEEP", "WEAK", "JUNK", "WRONG")


def latest_review(folder: Path = REVIEWS) -> tuple[str, dict[tuple[str, str], str]]:
    """(file name, {(set, card id): verdict}) of the newest review a reader who did not write the
    rules gave (`../shared/eval/JUDGE.md`), or ('', {}) when there is none."""
    files = sorted(folder.glob("*-after.jsonl")) or sorted(folder.glob("*.jsonl"))
    if not files:
        return "", {}
    verdicts = {}
    for line in files[-1].read_text(encoding="utf-8").splitlines():
        row = json.loads(line) if line.strip() else {}
        if "verdict" in row:  # a reviewer's list of problems with no card has none
            verdicts[(row["set"], row["card"])] = row["verdict"]
    return files[-1].name, verdicts


def reviewer_figure(name: str, active_ids: tuple[str, ...], verdicts: dict[tuple[str, str], str]) -> str:
    """The reader's figure for the active cards of one set: KEEP share among the cards it judged,
    WRONG count, and how many of today's active cards it never saw (a stale review says so)."""
    seen = [verdicts[(name, c)] for c in active_ids if (name, c) in verdicts]
    counts = Counter(seen)
    unseen = len(active_ids) - len(seen)
    keep = f"{counts['KEEP'] / len(seen):.3f} ({counts['KEEP']}/{len(seen)})" if seen else "-"
    return f"KEEP {keep} WRONG {counts['WRONG']}" + (f", {unseen} active not reviewed" if unseen else "")


def print_sets(shared: Path | None) -> None:
    review, verdicts = latest_review()
    print("set                active  active precision (labels: the team's own)  coverage of experiences worth a card"
          "  reviewer (JUDGE.md, not the team)")
    for name, folder, labels, only in _labelled_sets(shared):
        f = set_figures(name, folder, labels, only)
        print(f"{name:18} {f.active:6}  {f.precision:.3f} ({f.active_on_card}/{f.active}){'':29}"
              f"{f.coverage:.3f} ({f.covered}/{f.worth}){'':21}{reviewer_figure(name, f.active_ids, verdicts)}")
    if shared is None:
        print("(no ../shared/eval here: memoir's own sets only)")
    if review:
        sets = sorted({s for s, _ in verdicts})
        print(f"\nreviewer's verdicts ({REVIEWS.name}/{review}: a reader given only JUDGE.md and judge_pack.py's output; "
              "the labels above are the team's own and are a regression check, not the measure):")
        for name in sets:
            counts = Counter(v for (s, _), v in verdicts.items() if s == name)
            total = sum(counts.values())
            print(f"  {name:18} {total:3} active  " + "  ".join(f"{v} {counts[v]}" for v in VERDICTS)
                  + f"  KEEP share {counts['KEEP'] / total:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fixtures", type=Path, default=FIXTURES, help="folder of real logs with labels.jsonl")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--cards", action="store_true", help="also list every card memoir made")
    parser.add_argument("--shared", type=Path, default=None,
                        help="the shared folder holding eval/ and samples/ (default: ../shared when it exists)")
    parser.add_argument("--no-sets", action="store_true", help="skip the per-set precision and coverage table")
    args = parser.parse_args(argv)
    report = evaluate(args.fixtures, args.cards)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        return 0
    print(f"fixtures: {args.fixtures}  files {report.files}, labelled experiences {report.labelled_experiences} "
          f"({report.labelled_cards} worth a card)")
    print(f"boundary precision {report.precision:.3f}  recall {report.recall:.3f}  "
          f"({report.matched_boundaries}/{report.boundaries} labelled, {report.matched_cuts}/{report.cuts} cuts)")
    print(f"commit boundaries cut {report.commit_boundaries_cut}/{report.commit_boundaries}")
    print(f"cards by status {report.statuses}")
    print(f"active cards {report.active}: settled conclusion {report.settled_share:.3f}, junk {report.junk_share:.3f}")
    for line in report.junk:
        print(f"  junk: {line}")
    for line in report.missed:
        print(f"  missed: {line}")
    for line in report.extra:
        print(f"  extra: {line}")
    if not args.no_sets:
        from bench.shared_eval import shared_dir

        print()
        print_sets(shared_dir(args.shared))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
