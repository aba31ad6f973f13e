"""Text as a model reads it, with the disguises taken off: what the injection checks and the neutraliser see.

A planted instruction hides from a pattern in ways a model still reads through: a zero-width space
inside a word ("Ig\u200bnore previous"), fullwidth brackets (`＜system＞`), mathematical letters,
HTML entities (`&lt;/memoir-context&gt;`), bidi controls that reorder what is shown, or Unicode tag
characters that carry ASCII invisibly. `plain` undoes each, so one set of shapes (the quality gates'
own) sees what the model would. Ordinary text in any language comes back unchanged: only
compatibility forms whose plain form is ASCII are folded, never accents, CJK or Hangul, and the
typographic punctuation (… “ ”), Latin-1's signs (² ½) and super- and subscripts stay.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata

# Zero-width characters, bidi embeddings, overrides and isolates, the word joiner, the BOM, the soft hyphen.
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_TAGS = re.compile("[\U000e0000-\U000e007f]")  # Unicode tag characters: invisible ASCII
_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
# Kept as written: Latin-1's own signs (² ½ º) and General Punctuation with super- and subscripts (… ⁿ ₂).
_KEPT = (range(0x80, 0x100), range(0x2000, 0x20A0))


@functools.lru_cache(maxsize=4096)
def _folded(ch: str) -> str:
    """A compatibility character whose plain form is ASCII (fullwidth `＜`, mathematical `𝐢`), as that
    ASCII; any other character as it is."""
    if ord(ch) < 0x80 or any(ord(ch) in kept for kept in _KEPT):
        return ch
    plain = unicodedata.normalize("NFKC", ch)
    return plain if plain != ch and plain.isascii() else ch


def plain(text: str) -> str:
    """`text` with HTML entities decoded (twice: a double-escaped `&amp;lt;` too), invisible and
    reordering characters removed, tag characters turned into the ASCII they hide, and compatibility
    forms of ASCII folded to it."""
    if "&" in text and _ENTITY.search(text):
        text = html.unescape(html.unescape(text))
    if _TAGS.search(text):
        text = _TAGS.sub(lambda m: chr(ord(m.group(0)) - 0xE0000) if 0xE0020 <= ord(m.group(0)) <= 0xE007E else "", text)
    text = _INVISIBLE.sub("", text)
    if text.isascii():
        return text
    return "".join(_folded(ch) for ch in text)


def json_unescaped(text: str) -> str:
    """`text` with a JSON string's escaped quotes and newlines read back: a tool call is kept as JSON, so
    a line an edit wrote (`f("x", 4)`) stands there as `f(\\"x\\", 4)`."""
    return text.replace('\\"', '"').replace("\\n", "\n")
