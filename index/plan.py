"""Pure decisions about the index: what text represents a card, what changes, how a query is quoted.

Nothing here touches disk or the model, so tests pin it with literals.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memoir.cards.values import Card

RETRIEVAL_MAX_CHARS = 1500  # MiniLM reads 256 word pieces; more text is stored but never embedded
FTS_MAX_TERMS = 24  # a pasted paragraph must not turn into a 200-way OR scan
FTS_POSTINGS_BUDGET = 5000  # postings one lexical query may rank: bounds its latency at 100k cards
FTS_MAX_TERMS_USED = 8
# Words that match nearly every card: they slow the lexical path and add nothing to bm25.
STOPWORDS = frozenset(
    "a an and are as at be but by can do does for from how i if in is it its me my no not of on "
    "or our so than that the their then there these this to was we what when where which who why "
    "will with you your please hi hello thanks".split()
)


@dataclass(frozen=True, slots=True)
class IndexPlan:
    """Card ids to embed for the first time, to re-embed, and to drop from the index."""

    add: tuple[str, ...] = ()
    update: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()

    @property
    def changed(self) -> tuple[str, ...]:
        return self.add + self.update

    @property
    def empty(self) -> bool:
        return not (self.add or self.update or self.remove)


def plan_index_changes(card_hashes: dict[str, str], indexed: dict[str, str]) -> IndexPlan:
    """Compare card file hashes with the hashes the index rows were built from.

    A card whose file hash is already indexed is skipped: re-embedding it would give the same vector.
    """
    add = sorted(i for i in card_hashes if i not in indexed)
    update = sorted(i for i, h in card_hashes.items() if i in indexed and indexed[i] != h)
    remove = sorted(i for i in indexed if i not in card_hashes)
    return IndexPlan(tuple(add), tuple(update), tuple(remove))


def retrieval_text(card: Card) -> str:
    """What a card is found by: title, conclusion, failure conditions, error signature, topics. Never evidence.

    Evidence is long and full of incidental tool output; embedding it would make every card about
    stack traces. The error signature is kept because queries usually quote the error itself, and
    the title because it reads like the question a later session asks (the failure and its fix in
    one line). The goal is left out: measured on both labelled recall sets, it pulled unrelated
    prompts closer (correct-empty 0.905 → 0.81 on tests/fixtures/second_set).
    """
    parts = [card.title.strip(), card.conclusion.strip()]
    if card.counterexamples.strip():
        parts.append("Fails when: " + card.counterexamples.strip())
    if card.error_signature.strip():
        parts.append("Error: " + card.error_signature.strip())
    if card.topics:
        parts.append("Topics: " + ", ".join(card.topics))
    text = "\n".join(p for p in parts if p)
    return text[:RETRIEVAL_MAX_CHARS]


# A term is a run of anything but whitespace and the characters FTS5 gives meaning to.
_TERM = re.compile(r"[^\s\"'()*:^+{}\[\],;!?<>|=`~]+")


def fts_terms(query: str) -> list[str]:
    """The words of free text worth a lexical lookup: no FTS syntax, no stopwords, no repeats."""
    terms: list[str] = []
    seen: set[str] = set()
    for raw in _TERM.findall(query):
        term = raw.strip(".-/\\")
        key = term.lower()
        if not re.search(r"\w", term) or key in STOPWORDS or key in seen:
            continue
        seen.add(key)
        terms.append(term)
        if len(terms) >= FTS_MAX_TERMS:
            break
    return terms


def term_tokens(term: str) -> tuple[str, ...]:
    """The tokens the FTS table's tokenizer (unicode61, `_` kept inside words) makes of a term."""
    return tuple(re.findall(r"\w+", term.lower()))


def quote_terms(terms: list[str]) -> str | None:
    """Each term as a quoted FTS5 string, joined by OR; None when there is none."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms) or None


def choose_fts_terms(doc_counts: list[tuple[str, int]], budget: int = FTS_POSTINGS_BUDGET,
                     max_terms: int = FTS_MAX_TERMS_USED) -> list[str]:
    """Rarest terms first, while their postings fit the budget; terms that match nothing go.

    bm25 cost grows with every posting an OR query touches, and a word found in half the cards
    adds almost nothing to the ranking; error codes and config keys are rare, so they stay.
    The rarest term is always kept.
    """
    ranked = sorted((n, i, t) for i, (t, n) in enumerate(doc_counts) if n > 0)
    keep: list[str] = []
    total = 0
    for n, _, term in ranked:
        if keep and (total + n > budget or len(keep) >= max_terms):
            break
        keep.append(term)
        total += n
    return keep


def fts_match_expression(query: str) -> str | None:
    """Turn free text into a safe FTS5 MATCH expression: each term quoted, joined by OR.

    Quoting hands every term to the table's tokenizer as a phrase, so `compilerOptions.strict`
    and `foo.bar` match as adjacent tokens, `max_connections` as one token, and nothing the user
    types (quotes, parentheses, `*`, `-`, `:`) is parsed as FTS syntax. None when no term is left.
    """
    return quote_terms(fts_terms(query))
