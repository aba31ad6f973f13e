"""The memos of the reading helpers, forgotten between sessions so none outlives the session it read.

Segmenting and drafting memoize answers by text or by a tuple of turns (`functools.lru_cache`,
`values.per_turns`). Each memo is bounded by entries, not bytes: thousands of kept tool outputs
held the texts of many sessions at once and made a run's peak memory grow with the corpus. A
session asks nearly nothing of another session's texts, so dropping them costs little time.
"""

from __future__ import annotations

import sys

_PACKAGE = "memoir.cards."
_found: tuple[list, frozenset[str]] = ([], frozenset())  # (memos, the modules they were looked for in)


def _memos() -> list:
    """Every memoized function of memoir.cards' loaded modules, looked up again when a module loads."""
    global _found
    loaded = frozenset(n for n in tuple(sys.modules) if n.startswith(_PACKAGE))
    if loaded != _found[1]:
        seen: dict[int, object] = {}
        for name in sorted(loaded):
            for value in vars(sys.modules[name]).values():
                if callable(getattr(value, "cache_clear", None)) and callable(value):
                    seen.setdefault(id(value), value)
        _found = (list(seen.values()), loaded)
    return _found[0]


def forget_memos() -> int:
    """Clear every memo of memoir.cards; returns how many were cleared. Answers never depend on them."""
    memos = _memos()
    for memo in memos:
        memo.cache_clear()
    return len(memos)
