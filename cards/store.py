"""Card files: render, parse, and write them atomically. The files are the source of truth.

The store remembers the hash of what it last wrote for each card, so a file a person edited
is never overwritten by a later run (the run reports it instead).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

# libyaml's C emitter/parser when present: card front matter is on every run's hot path.
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

from memoir.cards.values import SECTION_TITLES, SECTIONS, Card, Source
from memoir.cards.sanitize import sanitize
from memoir.cards.sanitize.fields import FIELD_CAP, sanitize_field, sanitize_id, sanitize_value
from memoir.cards.render import render
from memoir.cards.title import display_title
from memoir.cards.lesson import CONCLUSION_BUDGET
from memoir.cards.errors import CardsError, LibraryTooNew
from memoir.cards.schema import (
    CARD_SCHEMA,
    file_schema,
    refuse_newer,
    too_new_message,
    upgraded_text,
    without_schema_line,
)
from memoir.cards.private import make_private_dir

FRONT_MATTER_ORDER = (
    "schema", "id", "status", "quality", "topics", "task_type", "workspace", "project", "created", "updated",
    "error_signature", "gate", "verified_by", "confirmed_by", "supersedes", "superseded_by", "sources",
)


_CARD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def is_card_id(value: str) -> bool:
    """An id a card file may carry: it names a file in the cards folder, so it can never be a path
    (`../../tmp/x`) or hide one (`..`, a slash, a NUL). Card files are shared and merged: this is input."""
    return bool(_CARD_ID.fullmatch(value)) and ".." not in value


class CardFileError(CardsError):
    """A card file cannot be parsed; it says which file and what to fix."""


def write_atomic(path: Path, data: str | bytes, *, sync_dir: bool = True) -> None:
    """Temp file in the same directory, fsync, rename: readers see the old or the new file.

    `sync_dir=False` lets a batch writer fsync the directory once at the end (`fsync_dir`).
    """
    make_private_dir(path.parent)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if sync_dir:
        fsync_dir(path.parent)


def remove_temp_files(folder: Path) -> int:
    """Delete `write_atomic` leftovers (`.<name>.<random>.tmp`) of a killed write; returns how many.

    Readers never take them for cards; call this only under the run lock, when no write is live.
    """
    if not folder.is_dir():
        return 0
    gone = 0
    for path in folder.glob(".*.tmp"):
        try:
            path.unlink()
            gone += 1
        except FileNotFoundError:
            continue
    return gone


def fsync_dir(directory: Path) -> None:
    """Make renames in `directory` durable; best effort where the filesystem refuses."""
    try:
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def content_hash(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def front_matter(card: Card) -> dict:
    data = {
        "schema": CARD_SCHEMA,
        "id": card.id,
        "status": card.status,
        "quality": card.quality,
        "topics": list(card.topics),
        "task_type": card.task_type,
        "workspace": card.workspace,
        "project": card.project,
        "created": card.created,
        "updated": card.updated,
        "error_signature": card.error_signature,
        "gate": card.gate,
        "verified_by": card.verified_by,
        "confirmed_by": card.confirmed_by,
        "supersedes": list(card.supersedes),
        "superseded_by": card.superseded_by,
        "sources": [s.to_dict() for s in card.sources],
    }
    if not card.project:
        del data["project"]  # a folder that is no git project: the file reads as it did before projects
    for key in sorted(card.extra):
        data.setdefault(key, card.extra[key])
    return data


_TEXT_FIELDS = ("title", "task_type", "workspace", "project", "error_signature") + SECTIONS


def sanitized_card(card: Card) -> Card:
    """The card as it may be written: every field a person or the index reads, sanitized once more.

    The turns were sanitized before drafting; this pass catches what reached a card another way
    (a hand edit, a model's paraphrase, a cwd or file path) and is the identity on a clean card.
    """
    changes: dict = {f: sanitize(getattr(card, f), FIELD_CAP) for f in _TEXT_FIELDS}
    changes["topics"] = tuple(sanitize_field(t) for t in card.topics)
    changes["sources"] = tuple(replace(s, file=sanitize_field(s.file), session_id=sanitize_id(s.session_id))
                               for s in card.sources)
    if card.extra:
        changes["extra"] = sanitize_value(card.extra)
    changed = {k: v for k, v in changes.items() if v != getattr(card, k)}
    return card.with_(**changed) if changed else card


def render_card(card: Card) -> str:
    """Deterministic Markdown: same card, same bytes; sanitized field by field (`sanitized_card`)."""
    card = sanitized_card(card)
    fm = yaml.dump(front_matter(card), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    return render(
        "card.md.j2",
        card=card,
        front_matter=fm,
        conclusion_budget=CONCLUSION_BUDGET,
        title=display_title(card),
        sections=[(name, SECTION_TITLES[name]) for name in SECTIONS],
    )


def render_cards(cards: Sequence[Card]) -> list[str]:
    """`render_card` of each card: a unit of work another process can do (`flows.ingest.store_cards`)."""
    return [render_card(card) for card in cards]


_H1 = re.compile(r"^# (.+)$", re.M)
_TURN_REF = re.compile(r"t\d+")
_HEADING = re.compile(r"^## (" + "|".join(re.escape(t) for t in SECTION_TITLES.values()) + r")[ \t]*$", re.M)


def parse_card(text: str, origin: str = "<card>") -> Card:
    """Read a card file back into a `Card`; a hand-edited file parses as long as its headings stand.

    Raises:
        CardFileError: the file does not parse.
        LibraryTooNew: a newer memoir wrote it (`cards/schema.py`).
    """
    refuse_newer(text, origin)
    if not text.startswith("---"):
        raise CardFileError(f"{origin}: no YAML front matter; the file must start with '---'")
    end = text.find("\n---", 3)
    if end < 0:
        raise CardFileError(f"{origin}: front matter is not closed with '---'")
    try:
        meta = yaml.load(text[3:end], Loader=_Loader) or {}
    except yaml.YAMLError as exc:
        raise CardFileError(f"{origin}: front matter is not valid YAML: {exc}") from exc
    if not isinstance(meta, dict) or not meta.get("id"):
        raise CardFileError(f"{origin}: front matter has no 'id'")
    if not is_card_id(str(meta["id"])):
        raise CardFileError(f"{origin}: id {str(meta['id'])[:80]!r} is not a card id (letters, digits, '.', '_' or '-', "
                            "at most 128, no path): fix the id or remove the file")
    body = text[end + 4:]
    heading = _H1.search(body.split("\n## ", 1)[0])
    by_title = {v: k for k, v in SECTION_TITLES.items()}
    sections = {name: "" for name in SECTIONS}
    matches = list(_HEADING.finditer(body))
    for i, m in enumerate(matches):
        stop = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        sections[by_title[m.group(1)]] = body[m.end():stop].strip("\n").rstrip()
    known = set(FRONT_MATTER_ORDER) | {"conclusion_budget"}  # the template states it; not the card's own
    confirmed = str(meta.get("confirmed_by") or "")
    # Files written before the rename said `confirmed_by: tN` for a passing test run; that is
    # `verified_by` now, and `confirmed_by` means a person (`user`) alone.
    legacy = bool(_TURN_REF.fullmatch(confirmed))
    verified = str(meta.get("verified_by") or (confirmed if legacy else ""))
    card = Card(
        id=str(meta["id"]),
        status=str(meta.get("status") or "active"),
        quality=str(meta.get("quality") or "rule"),
        topics=tuple(str(t) for t in meta.get("topics") or ()),
        task_type=str(meta.get("task_type") or ""),
        workspace=str(meta.get("workspace") or ""),
        project=str(meta.get("project") or ""),
        created=str(meta.get("created") or ""),
        updated=str(meta.get("updated") or ""),
        error_signature=str(meta.get("error_signature") or ""),
        gate=str(meta.get("gate") or ""),
        verified_by=verified,
        confirmed_by="" if legacy else confirmed,
        supersedes=tuple(str(s) for s in meta.get("supersedes") or ()),
        superseded_by=str(meta.get("superseded_by") or ""),
        sources=tuple(Source.from_dict(s) for s in meta.get("sources") or () if isinstance(s, dict)),
        extra={k: v for k, v in meta.items() if k not in known},
        **sections,
    )
    title = heading.group(1).strip() if heading else ""
    # A file without a title of its own shows the fallback heading; reading it back keeps none.
    return card.with_(title=title) if title and title != display_title(card) else card


@dataclass(frozen=True)
class WriteReport:
    card_id: str
    action: str  # new | updated | unchanged | hand_edited | failed
    path: Path
    error: str = ""


class CardStore:
    """The card directory plus the manifest of what memoir itself last wrote there."""

    def __init__(self, cards_dir: Path, state_dir: Path):
        self.cards_dir = Path(cards_dir)
        self.manifest_path = Path(state_dir) / "written.json"
        self._manifest: dict[str, str] | None = None

    def path_for(self, card_id: str) -> Path:
        if not is_card_id(card_id):
            raise CardFileError(f"{card_id[:80]!r} is not a card id: a card's file is named by its id, never a path")
        return self.cards_dir / f"{card_id}.md"

    @property
    def manifest(self) -> dict[str, str]:
        if self._manifest is None:
            try:
                self._manifest = json.loads(self.manifest_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self._manifest = {}
        return self._manifest

    def save_manifest(self) -> None:
        """Persist what was written; also the point where a batch's renames are made durable."""
        write_atomic(self.manifest_path, json.dumps(self.manifest, sort_keys=True, indent=0) + "\n")

    def ids(self) -> list[str]:
        if not self.cards_dir.is_dir():
            return []
        return sorted(p.stem for p in self.cards_dir.glob("c-*.md"))

    def read(self, card_id: str) -> Card:
        path = self.path_for(card_id)
        return self.parse(card_id, path.read_text(encoding="utf-8"))

    def parse(self, card_id: str, text: str) -> Card:
        """The card in `text`, the file of `card_id`; CardFileError when it cannot be parsed or its front matter
        names another id."""
        path = self.path_for(card_id)
        card = parse_card(text, origin=str(path))
        if card.id != card_id:
            # Two files claiming one id would let a shared file stand in for another card.
            raise CardFileError(f"{path}: front matter id {card.id!r} does not match the file name; rename the "
                                f"file to {card.id}.md or fix its id (the card is skipped until then)")
        return card

    def read_text(self, card_id: str) -> str | None:
        try:
            return self.path_for(card_id).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def load_all(self) -> tuple[list[Card], list[str]]:
        """Every parseable card, plus one message per file that could not be read."""
        cards, problems = [], []
        for card_id in self.ids():
            try:
                cards.append(self.read(card_id))
            except (OSError, UnicodeDecodeError, CardFileError) as exc:
                problems.append(str(exc))
        return cards, problems

    def is_hand_edited(self, card_id: str, current: str | None = None) -> bool:
        current = self.read_text(card_id) if current is None else current
        if current is None:
            return False
        written = self.manifest.get(card_id)
        return written is not None and written != content_hash(current)

    def hand_edited_ids(self) -> list[str]:
        """Every card whose file differs from what memoir last wrote: the run leaves these alone."""
        out = []
        for card_id, written in sorted(self.manifest.items()):
            try:
                data = self.path_for(card_id).read_bytes()
            except OSError:
                continue  # gone: a hand delete, which `cards.forget` turns into a tombstone
            if content_hash(data) != written:
                out.append(card_id)
        return out

    def retire(self, ids: Iterable[str]) -> tuple[list[str], list[str]]:
        """Remove cards memoir wrote whose source turns their log no longer gives; (removed, kept).

        A card a person edited stays (the hand wins). The manifest forgets the id before the file
        goes, so a crash in between never reads as a hand delete (which would tombstone the turns).
        """
        removed, kept = [], []
        for card_id in ids:
            text = self.read_text(card_id)
            if text is None:
                continue  # gone already: a hand delete is `cards.forget`'s to judge
            if self.is_hand_edited(card_id, text):
                kept.append(card_id)
                continue
            removed.append(card_id)
        if removed:
            for card_id in removed:
                self.manifest.pop(card_id, None)
            self.save_manifest()
            for card_id in removed:
                self.path_for(card_id).unlink(missing_ok=True)
            fsync_dir(self.cards_dir)
        return removed, kept

    def upgrade_schema(self) -> list[str]:
        """Bring every card file to `CARD_SCHEMA` in place, each by one atomic write; returns the ids.

        Refuses first, before any write, when a file is of a newer schema (`LibraryTooNew`). A file
        memoir wrote stays memoir's (the manifest follows it); a hand-edited one stays hand-edited.
        Only under the run lock: it rewrites files a run could be writing. An upgrade killed
        midway is finished by the next one, which also points the manifest at files it upgraded.
        """
        texts: dict[str, str] = {}
        newer: list[tuple[str, int]] = []
        repaired = False
        for card_id in self.ids():
            try:
                text = self.path_for(card_id).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # reported by whoever reads the library
            schema = file_schema(text)
            if schema > CARD_SCHEMA:
                newer.append((card_id, schema))
            elif schema < CARD_SCHEMA:
                texts[card_id] = text
            elif (before := self.manifest.get(card_id)) and before != content_hash(text) \
                    and upgraded_text(without_schema_line(text)) == text \
                    and before == content_hash(without_schema_line(text)):
                self.manifest[card_id] = content_hash(text)  # upgraded by a run killed before its manifest
                repaired = True
        if newer:
            first, schema = newer[0]
            raise LibraryTooNew(too_new_message(str(self.path_for(first)), schema, len(newer) - 1))
        upgraded = []
        for card_id, text in texts.items():
            new = upgraded_text(text)
            if new is None:
                continue
            ours = self.manifest.get(card_id) == content_hash(text)
            write_atomic(self.path_for(card_id), new, sync_dir=False)
            if ours:
                self.manifest[card_id] = content_hash(new)
            upgraded.append(card_id)
        if upgraded:
            fsync_dir(self.cards_dir)
        if upgraded or repaired:
            self.save_manifest()
        return upgraded

    def _decide(self, card: Card, force: bool, text: str | None = None) -> tuple[str, str]:
        """(action, text): what writing `card` would do, without touching the disk."""
        text = render_card(card) if text is None else text
        current = self.read_text(card.id)
        if current == text:
            return "unchanged", text
        if current is not None and not force and self.is_hand_edited(card.id, current):
            return "hand_edited", text
        return ("new" if current is None else "updated"), text

    def write(self, card: Card, *, force: bool = False) -> WriteReport:
        """Write one card unless the bytes are the same or a person edited the file (the hand wins)."""
        return self.write_many([card], force=force)[0]

    def write_many(self, cards: list[Card], *, force: bool = False,
                   rendered: Sequence[str | None] = ()) -> list[WriteReport]:
        """Write a batch with one flush for all of it: temp files, one sync, renames, one dir fsync.

        A crash at any point leaves each card file old or new, never partial (only stray
        `.c-*.tmp` files, which `remove_temp_files` removes). A card whose write fails (permission,
        read-only filesystem, quota) comes back as action `failed` with the error; the rest go on.
        `rendered`: `render_card` of each card, worked out elsewhere (None: rendered here).
        """
        outcomes: list[WriteReport] = []
        staged: list[tuple[Card, str, str, int]] = []
        for card, text in itertools.zip_longest(cards, rendered[:len(cards)]):
            path = self.path_for(card.id)
            try:
                action, text = self._decide(card, force, text)
            except OSError as exc:
                outcomes.append(WriteReport(card.id, "failed", path, str(exc)))
                continue
            if action in ("unchanged", "hand_edited"):
                if action == "unchanged":
                    self.manifest[card.id] = content_hash(text)
                outcomes.append(WriteReport(card.id, action, path))
                continue
            try:
                tmp = _write_temp(path, text)
            except OSError as exc:
                outcomes.append(WriteReport(card.id, "failed", path, str(exc)))
                continue
            staged.append((card, text, tmp, len(outcomes)))
            outcomes.append(WriteReport(card.id, action, path))
        if staged:
            os.sync()
            for card, text, tmp, at in staged:
                try:
                    os.replace(tmp, self.path_for(card.id))
                except OSError as exc:
                    _unlink_quietly(tmp)
                    outcomes[at] = WriteReport(card.id, "failed", outcomes[at].path, str(exc))
                    continue
                self.manifest[card.id] = content_hash(text)
            fsync_dir(self.cards_dir)
        return outcomes



def _write_temp(path: Path, text: str) -> str:
    make_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp


def _unlink_quietly(path: str | Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
