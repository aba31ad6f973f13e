"""Recall's candidates: the vector and lexical matches of a query, fused by rank.

The lexical-only index here answers when no model is warm; it reads FTS5 through plain apsw and
imports neither numpy nor torch nor sqlite-vec, so a hook process can afford it.
"""

from __future__ import annotations

import functools
import json
import re
import weakref
from collections.abc import Sequence
from pathlib import Path

from memoir.cards.signals import names_failure
from memoir.index.apsw_errors import apsw, translate
from memoir.index.plan import choose_fts_terms, fts_match_expression, fts_terms, quote_terms, term_tokens

KNN_K = 8  # nearest cards by vector; more only adds candidates the similarity gate rejects
FTS_K = 8  # best lexical matches
# The vector path fetches POOL times its k: ranks are then counted over the cards recall may inject
# (`recall_gates.rank_eligible`), so held-back or superseded near-duplicates cannot crowd those out.
# The lexical path keeps its k: past its top k, bm25 is too weak to count as a shared name or key
# (a card found there only would escape the vector-only margin on a word or two).
POOL = 3
RRF_K = 60  # reciprocal-rank fusion constant (Cormack et al.): damps the weight of rank 1
MAX_QUERY_INPUT = 50_000  # chars of prompt sanitized at most; a pasted log beyond this adds nothing
LEXICAL_MIN_TERMS = 2  # a card must contain at least this many query terms, so a single shared word never suffices
MAX_FOLDERS = 64  # a project's paths a brief asks for at most: three bound values each, under SQLite's 999
READ_BUSY_MS = 50  # a reader never waits long on a lock: the deadline is 300 ms in all


def fuse(knn: list[tuple[str, float]], fts: list[tuple[str, float]]) -> dict[str, dict]:
    """Reciprocal-rank fusion: order by rank in each list, never by adding cosine to bm25."""
    out: dict[str, dict] = {}
    for rank, (card_id, score) in enumerate(knn, 1):
        out.setdefault(card_id, {"rrf": 0.0})
        out[card_id].update(knn_rank=rank, cosine=score)
        out[card_id]["rrf"] += 1.0 / (RRF_K + rank)
    for rank, (card_id, score) in enumerate(fts, 1):
        out.setdefault(card_id, {"rrf": 0.0})
        out[card_id].update(fts_rank=rank, bm25=score)
        out[card_id]["rrf"] += 1.0 / (RRF_K + rank)
    return out


_WORDS = re.compile(r"\w+")
_QUOTED = re.compile(r'"((?:[^"]|"")*)"')


def query_terms(text: str) -> list[str]:
    """The word tokens the FTS path searches for (its stopwords dropped), lowercased and unique."""
    terms: list[str] = []
    for quoted in _QUOTED.findall(fts_match_expression(text) or ""):
        for word in _WORDS.findall(quoted.replace('""', '"').lower()):
            if word not in terms:
                terms.append(word)
    return terms


# Words every coding session uses about its work, whatever it is about: sharing them with a card
# is no overlap on the subject ("fix", "error", "new" in "what was the fix for the cron leak").
GENERIC_TERMS = frozenset(
    "error errors fix fixed fixes fixing fail fails failed failing failure bug bugs issue issues problem problems "
    "test tests work works working worked run runs running ran build builds new old add added use used using "
    "get got getting make made change changed changes still again now keep keeps kept try trying tried happen "
    "happens happened wrong broken thing things way should could would does did done".split()
)


def subject_terms(terms: list[str]) -> list[str]:
    """The query terms that can name a subject: no session-work words, no one-character tokens."""
    return [t for t in terms if len(t) > 1 and t not in GENERIC_TERMS]


def lexical_coverage(terms: list[str], card_text: str) -> float:
    """Share of query terms found in the card's text; 0 below `LEXICAL_MIN_TERMS` hits (or every
    term, for a shorter query). An identifier's parts count too: `CELERY_BROKER_URL` holds "broker"."""
    if not terms:
        return 0.0
    words = word_set(card_text)
    hits = sum(1 for t in terms if t in words)
    return hits / len(terms) if hits >= min(LEXICAL_MIN_TERMS, len(terms)) else 0.0


# A term at most this share of the cards hold (and never fewer than `DISTINCT_MIN_DOCS`) can name a
# subject; a word in more of them names the stack every card of a project shares ("helm", "api").
DISTINCT_SHARE = 0.10
DISTINCT_MIN_DOCS = 3


def distinctive_terms(conn, terms: list[str]) -> list[str]:
    """The query's terms few cards hold, by the index's own counts; the rarest found term always counts,
    so a question whose every word is common still has a subject."""
    if not terms:
        return []
    counts = doc_counts(conn, terms)
    total = conn.execute("SELECT count(*) FROM cards").fetchall()[0][0]
    limit = max(DISTINCT_MIN_DOCS, DISTINCT_SHARE * total, min((n for n in counts.values() if n), default=0))
    return [t for t, n in counts.items() if n <= limit]


def holds_any(terms: list[str], text: str) -> bool:
    """Does `text` hold one of `terms` as a word (or as a part of an identifier)?"""
    words = word_set(text)
    return any(t in words for t in terms)


@functools.lru_cache(maxsize=4096)
def word_set(text: str) -> frozenset[str]:
    """The lowercased words of `text`, with each identifier's parts (`celery_broker_url`: "broker").
    Kept per text: recall asks it twice of each candidate's text, and again whenever a prompt finds
    that card once more."""
    words = set(_WORDS.findall(text.lower()))
    words |= {part for w in words if "_" in w for part in w.split("_") if part}
    return frozenset(words)


_COMPOUND = re.compile(r"[A-Za-z][\w]*(?:[._/-][A-Za-z]\w*){2,}|[A-Za-z]\w*_\w+_\w+")


def query_names(text: str) -> tuple[str, ...]:
    """The compound names a query holds (`kiosk.tasks.notify_front_desk`, `PAYMENTS_RETRY_LIMIT_MS`):
    a name of three parts or more says which thing the question is about, not only its module. A
    path or file name (`src/Cart.test.tsx:21`) says where an error showed, not what it is about."""
    return tuple(dict.fromkeys(m.lower() for m in _COMPOUND.findall(text)
                               if len(m) >= 8 and "/" not in m and len(m.rsplit(".", 1)[-1]) > 4))


def holds_a_name(names: tuple[str, ...], text: str) -> bool:
    """Does `text` hold one of `names` whole (always, when there are none)?"""
    low = text.lower()
    return not names or any(n in low for n in names)


def coverage_text(card, retrieval: str) -> str:
    """What a question's terms are matched against: the retrieval text and the card's goal (the
    question its session started from, in the asker's own words), never its evidence."""
    return retrieval + "\n" + card.goal.strip()


# A failure's kind that names no class: the message alone says which error it is.
GENERIC_KINDS = frozenset("error fatal failed failure exception".split())
_PLACEHOLDER = re.compile(r"<[A-Za-z]+>")
_MESSAGE_WORD = re.compile(r"[a-z][a-z0-9_]{2,}")
_MESSAGE_STOP = frozenset("the and for not was with from into this that are can any".split())


def pasted_error(signature: str) -> tuple[str, tuple[str, ...]] | None:
    """The error a prompt pastes, from its signature: the kind when it names a class ('' when it is a
    bare "error:") and the words of its message; None when the signature is no error line at all
    (a sentence in words, a log prefix such as "go:")."""
    kind, colon, message = signature.strip().partition(":")
    kind = kind.strip()
    named = names_failure(kind)
    if not colon or not (named or kind.lower() in GENERIC_KINDS):
        return None
    words = tuple(dict.fromkeys(w for w in _MESSAGE_WORD.findall(_PLACEHOLDER.sub(" ", message).lower())
                                if w not in _MESSAGE_STOP))
    return (kind if named else "", words)


def names_pasted_error(pasted: tuple[str, tuple[str, ...]] | None, text: str) -> bool:
    """Do a card's own words name the error the prompt pastes: its class, and most of its message?

    `text` is what the card says it is about (title, goal, conclusion, failure conditions), never
    its signature alone: a signature is often an error met on the way, not the card's subject.
    """
    if pasted is None:
        return True
    kind, words = pasted
    low = text.lower()
    if kind and kind.lower() not in low:
        return False
    found = set(_MESSAGE_WORD.findall(low))
    return not words or 2 * sum(1 for w in words if w in found) > len(words)


# --- the lexical-only index (no numpy, no torch, no sqlite-vec) ------------------------------------


class LexicalIndex:
    """FTS5 over the index file through plain apsw: the answer when no model is warm.

    Raises the typed failures of `index.errors` when the file cannot be opened."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.conn = apsw.Connection(str(self.path), flags=apsw.SQLITE_OPEN_READONLY)
        except apsw.Error as exc:
            raise translate(exc, self.path) from exc
        self.conn.set_busy_timeout(READ_BUSY_MS)

    def fts(self, text: str, k: int = FTS_K, within=None) -> list[tuple[str, float]]:
        """`Index.fts` without sqlite-vec: the one lexical search, on a read-only connection."""
        return fts_search(self.conn, text, k, within)

    def close(self) -> None:
        self.conn.close()


def recent_card_ids(conn, workspaces: str | Sequence[str], limit: int) -> list[str]:
    """Newest active or incomplete cards of these folders (a workspace and the other paths of its
    project), one inside one of them, or one that one of them lies inside."""
    folders = [w.rstrip("/") or "/" for w in ([workspaces] if isinstance(workspaces, str) else workspaces) if w]
    folders = list(dict.fromkeys(folders))[:MAX_FOLDERS]
    if not folders:
        return []
    one = ("workspace = ? OR workspace LIKE ? ESCAPE '\\' "
           "OR (workspace != '' AND substr(?, 1, length(workspace) + 1) = workspace || '/')")
    sql = (f"SELECT id FROM cards WHERE status IN ('active', 'incomplete') AND ({' OR '.join([one] * len(folders))}) "
           "ORDER BY updated DESC, id LIMIT ?")
    args = [a for ws in folders for a in (ws, _like_prefix(ws), ws)]
    return [i for (i,) in conn.execute(sql, (*args, limit))]


def _like_prefix(folder: str) -> str:
    """A LIKE pattern for every path under `folder`, its wildcards escaped."""
    return folder.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"


def fts_search(conn, text: str, k: int, within=None) -> list[tuple[str, float]]:
    """Lexical matches by bm25 (higher is better) over `conn`'s cards; any user text is safe to pass.

    Only the query's rarer terms are searched (`choose_fts_terms`), so a question full of common
    words costs what its error code costs. `Index.fts` and `LexicalIndex.fts` both ask this. With
    `within` (sorted rowids, `Index.scope`) only those rows are ranked: the terms chosen and each
    score are the full search's (bm25 counts over every card), so the answer is the full ranking
    with every other row taken out.
    """
    terms = fts_terms(text)
    if not terms or k <= 0:
        return []
    try:
        counts = doc_counts(conn, terms)
        expr = quote_terms(choose_fts_terms([(t, counts[t]) for t in terms]))
        if expr is None:
            return []  # no term occurs in any card
        if within is not None:
            return _fts_within(conn, expr, k, within)
        # FTS5 picks the top k by rank itself only when the query is just `ORDER BY rank LIMIT`.
        sql = ("SELECT c.id, -f.rank FROM (SELECT rowid, rank FROM fts_cards WHERE fts_cards MATCH ? "
               "ORDER BY rank LIMIT ?) AS f JOIN cards AS c ON c.n = f.rowid ORDER BY f.rank, c.id")
        return [(i, float(s)) for i, s in conn.execute(sql, (expr, k))]
    except apsw.SQLError:
        # Built from quoted terms only; if FTS5 still rejects it, a lexical miss is the right answer
        # for a recall path that must never fail on user text.
        return []


def _fts_within(conn, expr: str, k: int, within) -> list[tuple[str, float]]:
    """`fts_search` among `within`'s rows. `+rowid` keeps the filter out of FTS5's plan, which would
    otherwise run the whole query once per rowid (~180 ms for 1,000); filtered after the match, bm25
    is computed for the workspace's matches alone (1M cards / 1,000 workspaces: p50 ~2 ms, p99 ~6)."""
    found = conn.execute("SELECT rowid, -rank FROM fts_cards WHERE fts_cards MATCH ? "
                         "AND +rowid IN (SELECT value FROM json_each(?))", (expr, json.dumps(within.tolist()))).fetchall()
    if len(found) > k:  # the k best, and every row tied with the k-th: ids break the ties, as in the full search
        cut = sorted((s for _, s in found), reverse=True)[k - 1]
        found = [(n, s) for n, s in found if s >= cut]
    ids = dict(conn.execute("SELECT n, id FROM cards WHERE n IN (SELECT value FROM json_each(?))",
                            (json.dumps([n for n, _ in found]),)))
    return sorted(((ids[n], float(s)) for n, s in found if n in ids), key=lambda h: (-h[1], h[0]))[:k]


DOC_COUNTS_MAX = 50_000  # token counts a connection keeps (a prompt's words recur: the language is small)
_doc_counts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # conn -> (stamp, token -> count)


def doc_count(conn, term: str) -> int:
    """Cards holding a term (for a phrase: its rarest token, an upper bound)."""
    return doc_counts(conn, [term])[term]


def doc_counts(conn, terms: list[str]) -> dict[str, int]:
    """`doc_count` of each term, each token asked of `fts_vocab` once per state of the file: a recall
    asks for the same words twice (the lexical search, then the distinctive terms), and the next
    prompt mostly for words an earlier one used, at ~0.1 ms a lookup (more when the cores are busy).
    The state is SQLite's `data_version` (commits by other connections) with this connection's own
    `total_changes`."""
    stamp = (conn.execute("PRAGMA data_version").fetchall()[0][0], conn.total_changes())
    held = _doc_counts.get(conn)
    if held is None or held[0] != stamp or len(held[1]) >= DOC_COUNTS_MAX:
        held = _doc_counts[conn] = (stamp, {})
    known = held[1]
    out = {}
    for term in terms:
        counts = []
        for token in term_tokens(term):
            count = known.get(token)
            if count is None:
                row = conn.execute("SELECT doc FROM fts_vocab WHERE term = ?", (token,)).fetchall()
                count = known[token] = row[0][0] if row else 0
            counts.append(count)
        out[term] = min(counts, default=0)
    return out
