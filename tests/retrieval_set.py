"""A labelled retrieval set over the example sessions in `cards/examples/`, and how to score it.

Each query names its right card(s) by a distinctive phrase of the expected card's goal or
conclusion (see cards/examples/README.md), never by card id: ids follow segmentation, phrases
follow the session. `expect=()` means the right answer is nothing: the topic is absent from the
examples, the only matching card is incomplete, or the card names another workspace's files.

Scored as of `AS_OF`, shortly after the example sessions (2026-10-12..19), so the age gate for
fast-changing topics judges them as a user would have met them, whatever today's date is.

    python bench/recall_quality.py      # prints the figures
    pytest tests/test_recall_quality.py # asserts the floors
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

AS_OF = datetime(2026, 11, 2, tzinfo=timezone.utc)
SHOP = "/home/dev/projects/shopapi"
SHORTY = "/home/dev/projects/shorty"


@dataclass(frozen=True)
class Labelled:
    query: str
    expect: tuple[str, ...] = ()  # phrases; a card is right if its goal+conclusion contains one
    workspace: str = ""
    note: str = ""


QUERIES: tuple[Labelled, ...] = (
    # --- shopapi (Claude Code) ---------------------------------------------------------------
    Labelled("POST /orders returns 500: sqlite3.ProgrammingError: SQLite objects created in a thread can "
             "only be used in that same thread", ("check_same_thread",), note="A1"),
    Labelled("FastAPI sync endpoints share one sqlite3 connection and crash under concurrent requests",
             ("check_same_thread",), note="A1 paraphrase"),
    Labelled("sqlite3.ProgrammingError SQLite objects created in a thread can only be used in that same thread",
             ("check_same_thread",), workspace=SHOP, note="A1, same workspace"),
    Labelled("sqlite3.ProgrammingError SQLite objects created in a thread can only be used in that same thread",
             (), workspace=SHORTY, note="A1 names app/db.py of another workspace: TooFarFromWorkspace"),
    Labelled("pytest -n 4 fails with sqlite3.OperationalError: database is locked in the refund tests",
             ("seed_orders",), note="B1 (A2, same error, raised the timeout instead)"),
    Labelled("load test with 8 writer threads fails with database is locked after about 5 seconds",
             ("seed_orders", "busy timeout"), note="A2 or B1"),
    Labelled("paginate GET /products with limit and offset query parameters", ("order by id",), note="A3"),
    Labelled("cart total is off by a fraction of a cent after applying a 10% promo discount",
             ("integer cents",), note="A4"),
    Labelled("POST /orders takes 3 seconds because it sends the confirmation e-mail over SMTP synchronously",
             ("smtp",), note="A5"),
    Labelled("PydanticImportError: BaseSettings has been moved to the pydantic-settings package",
             ("pydantic-settings",), note="A6"),
    Labelled("after bumping pydantic to 2.9 the app does not start any more", ("pydantic-settings",),
             note="A6 paraphrase"),
    Labelled("pydantic settings env_file is not found when I start uvicorn from the app/ directory",
             ("env_file",), note="A7"),
    Labelled("SQLite ALTER TABLE ADD COLUMN fails: Cannot add a column with non-constant default",
             ("constant default",), note="B2"),
    Labelled("set up pre-commit hooks with ruff and ruff-format", ("ruff-pre-commit",), note="B3"),
    Labelled("TypeError: Type is not JSON serializable: decimal.Decimal after switching to ORJSONResponse",
             ("orjson",), note="B4"),
    Labelled("uvicorn --reload never reloads when I edit files through a Docker Desktop bind mount on my Mac",
             ("watchfiles",), note="B5"),
    Labelled("docker compose dev container does not pick up file changes, hot reload broken",
             ("watchfiles",), note="B5 paraphrase"),
    Labelled("test_category_products_order passes locally but fails on CI every other run", (),
             note="B6: the only card is incomplete"),
    # --- feedcli (Codex) -------------------------------------------------------------------------
    Labelled("TS2339: Property 'items' does not exist on type 'unknown' after switching to undici fetch",
             ("undici",), note="C1"),
    Labelled("node dist/cli.js crashes with ERR_MODULE_NOT_FOUND after the TypeScript build",
             ("file extensions", "explicit extensions"), note="C2"),
    Labelled("Node ESM cannot resolve extensionless relative imports emitted by tsc",
             ("file extensions", "explicit extensions"), note="C2 paraphrase"),
    Labelled("fs.promises.writeFile fails with ENOENT because ~/.config/feedcli does not exist yet",
             ("parent directories",), note="C3"),
    Labelled("vitest test with fake timers hangs until it is killed: Test timed out in 5000ms",
             ("advancetimersbytime",), note="C4"),
    # --- shorty (Codex, Go) ---------------------------------------------------------------------------
    Labelled("fatal error: concurrent map writes in the Go hit counter", ("concurrent map writes",), note="D1"),
    Labelled("http: superfluous response.WriteHeader call from handleRedirect", ("superfluous",), note="D2"),
    # Before Go 1.22 the fix is `tc := tc`; from 1.22 on, the `go` line in go.mod gives each iteration its own variable.
    Labelled("Go table test with t.Parallel only runs the last case", ("tc := tc", "go 1.22"), note="D3"),
    Labelled("x509: certificate signed by unknown authority in a FROM scratch Docker image",
             ("ca bundle", "ca-certificates"), note="D4"),
    # --- logtally (aider, Rust) ----------------------------------------------------------------------
    Labelled("error[E0502]: cannot borrow self.records as mutable because it is also borrowed as immutable",
             ("e0502",), note="E1"),
    Labelled("cannot find derive macro Parser in this scope after upgrading clap to 4.5", ("derive",), note="E2"),
    Labelled("chrono ParseError(TooLong) when parsing timestamps that end in +02:00",
             ("parse_from_rfc3339",), note="E3"),
    Labelled("my Rust log reader is 13x slower than ripgrep on a 2 GB file", ("bufreader",), note="E4"),
    Labelled("reading a file byte by byte in Rust is very slow", ("bufreader",), note="E4 paraphrase"),
    # --- nothing is right ------------------------------------------------------------------------------
    Labelled("how do I tune postgres shared_buffers and work_mem for a 16 GB server"),
    Labelled("React useEffect runs in an infinite loop and re-renders forever"),
    Labelled("kubernetes pod stuck in CrashLoopBackOff after deploying the new image"),
    Labelled("pip install fails building a C extension: Microsoft Visual C++ 14.0 or greater is required"),
    Labelled("GraphQL resolver returns null for a nested field"),
    Labelled("OAuth2 refresh token request returns invalid_grant"),
    Labelled("add i18n translations for the settings page in German and French"),
    Labelled("thanks, that worked!"),
    Labelled("write a short poem about autumn leaves"),
    Labelled("configure nginx as a reverse proxy for websockets"),
    Labelled("NullPointerException in a Spring Boot REST controller"),
    Labelled("Redis connection pool exhausted under load"),
    Labelled("center a div horizontally and vertically with flexbox"),
    Labelled("SwiftUI list does not update when the observed object changes"),
)


@dataclass
class Scores:
    """Precision of injected cards, recall@2 over answerable queries, and the correct-empty rate."""

    injected: int = 0
    injected_right: int = 0
    answerable: int = 0
    answerable_hit: int = 0
    unanswerable: int = 0
    unanswerable_empty: int = 0
    misses: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.injected_right / self.injected if self.injected else 1.0

    @property
    def recall_at_2(self) -> float:
        return self.answerable_hit / self.answerable if self.answerable else 1.0

    @property
    def correct_empty(self) -> float:
        return self.unanswerable_empty / self.unanswerable if self.unanswerable else 1.0


def is_right(card_text: str, expect: tuple[str, ...]) -> bool:
    low = card_text.lower()
    return any(p.lower() in low for p in expect)


def score(recaller, store, now: datetime = AS_OF, queries=QUERIES) -> Scores:
    """Run every labelled query through `recaller` (generous budget: this measures quality, not speed).

    A query counts as answerable only if an *active* card matches its phrases in this build: a
    right card that the quality gates held back (`candidate`, `incomplete`) must not be injected,
    so for recall its right answer is nothing. That keeps the figures about recall, whatever the
    upstream stages decide.
    """
    s = Scores()
    cards, _ = store.load_all()
    active = [c.goal + "\n" + c.conclusion for c in cards if c.status == "active"]
    for q in queries:
        result = recaller.recall(q.query, workspace=q.workspace, now=now, budget_ms=30_000)
        texts = {c.id: (store.read(c.id).goal + "\n" + c.conclusion) for c in result.cards}
        right = [cid for cid, t in texts.items() if is_right(t, q.expect)]
        s.injected += len(texts)
        s.injected_right += len(right)
        for cid in texts:
            if cid not in right:
                s.wrong.append(f"{q.note or q.query[:50]}: injected {cid}")
        if q.expect and any(is_right(t, q.expect) for t in active):
            s.answerable += 1
            if right:
                s.answerable_hit += 1
            else:
                s.misses.append(f"{q.note or q.query[:50]}: {result.outcome} "
                                f"{[(c['id'], c['gate'], c['similarity']) for c in result.record.get('candidates', [])[:3]]}")
        else:
            s.unanswerable += 1
            if not texts:
                s.unanswerable_empty += 1
    return s


def build_example_home(settings, examples: Path, embedder, *, activate_held: bool = False) -> int:
    """Cards from the example sessions (the nightly pipeline), then their index.

    `activate_held=True` measures recall alone: cards the quality gates held back as `candidate`
    are made active (incomplete ones stay incomplete), so the figures do not move when upstream
    gates are tuned. Returns how many cards were activated.
    """
    from memoir.cards.store import CardStore
    from memoir.flows.pipeline import run_pipeline
    from memoir.index.db import open_index
    from memoir.index.sync import sync_index

    run_pipeline(settings, [examples])
    store = CardStore(settings.cards_dir, settings.state_dir)
    activated = 0
    if activate_held:
        cards, _ = store.load_all()
        for c in cards:
            if c.status == "candidate" and not c.superseded_by:
                store.write(c.with_(status="active", gate=""), force=True)
                activated += 1
        store.save_manifest()
    with open_index(settings.index_dir, embedder) as index:
        sync_index(store, index)
    return activated
