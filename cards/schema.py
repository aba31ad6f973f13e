"""Card file schema versions: the one this memoir writes, older files it upgrades, newer ones it refuses.

Every card file says `schema: N` first in its front matter. A file without it was written before
the field existed (schema 0): it reads the same, and the next run adds the line in place. A file
with a higher number was written by a newer memoir that may have changed what a field means, so
this memoir refuses the library rather than read it wrong or overwrite it with an older shape.
Pure text functions; the store (`cards/store.py`) does the writing.
"""

from __future__ import annotations

import re

from memoir.cards.errors import LibraryTooNew

CARD_SCHEMA = 1  # bump when a field changes meaning, and teach `upgraded_text` the step from the one before
_FIELD = re.compile(r"^schema:[ \t]*(\S*)[ \t]*$", re.M)


def front_matter_text(text: str) -> str:
    """The YAML between the opening `---` and the closing one ("" when the file has none)."""
    if not text.startswith("---"):
        return ""
    end = text.find("\n---", 3)
    return text[3:end] if end >= 0 else ""


def file_schema(text: str) -> int:
    """The schema a card file declares; 0 for a file written before the field existed.

    A value that is not a whole number reads as newer than any: a field this memoir cannot read.
    """
    found = _FIELD.search(front_matter_text(text))
    if found is None:
        return 0
    value = found.group(1).strip("'\"")
    return int(value) if value.isdigit() else CARD_SCHEMA + 1


def too_new_message(origin: str, schema: int, others: int = 0) -> str:
    more = f" (and {others} more card files)" if others else ""
    return (f"{origin}{more} was written by a newer memoir (card schema {schema}; this memoir reads up to "
            f"{CARD_SCHEMA}); upgrade memoir (`pip install -U memoir`) before using it on this library. "
            "Nothing was read or changed.")


def refuse_newer(text: str, origin: str) -> None:
    """Raise `LibraryTooNew` when `text` is a card file of a newer schema."""
    schema = file_schema(text)
    if schema > CARD_SCHEMA:
        raise LibraryTooNew(too_new_message(origin, schema))


def upgraded_text(text: str) -> str | None:
    """The file brought to `CARD_SCHEMA` (None when it already is, or is no card file at all).

    Schema 0 → 1 adds the `schema: 1` line first in the front matter, byte for byte as a card
    rendered now starts, and changes nothing else: a hand edit stays as the person left it.
    """
    if not front_matter_text(text) or file_schema(text) >= CARD_SCHEMA:
        return None
    return f"---\nschema: {CARD_SCHEMA}\n" + text[len("---\n"):] if text.startswith("---\n") else None


def without_schema_line(text: str) -> str:
    """The file as schema 0 wrote it: `upgraded_text` undone (the text itself when it has no such line)."""
    head = f"---\nschema: {CARD_SCHEMA}\n"
    return "---\n" + text[len(head):] if text.startswith(head) else text
