"""A later card that changes a decision supersedes the older card about it (issue 24, mechanism 5),
pinned on small hand-made sessions whose signatures, identifiers and titles differ."""

from __future__ import annotations

from memoir.cards.distill.decisions import retracted, retractions, subject_terms
from memoir.cards.distill.rules import apply_rules
from memoir.cards.draft import draft_card
from memoir.cards.segment import segment_session
from memoir.cards.values import Card, Source
from tests.turns import Script

DAY = 24 * 60
SHOP = "/home/dev/shop"


def _drafts(script: Script) -> list:
    return [(exp, draft_card(exp)) for exp in segment_session(script.turns)]


def env_flags_session(cwd: str = SHOP) -> Script:
    """Day 0: per-store flags in env vars, after an incidental import error; then an unrelated task."""
    return (Script("s-flags-env", cwd=cwd)
            .user("some stores want gift wrapping at checkout, others don't. add per-store on/off flags, "
                  "keep it simple, no new tables", at=0)
            .runs("pytest tests/test_checkout.py")
            .error("E   ModuleNotFoundError: No module named 'shop.flags'")
            .says("The import fails because shop/flags.py does not exist yet; adding it.")
            .runs("pytest tests/test_checkout.py").result("12 passed in 1.3s")
            .says("Done and committed. Per-store flags come from env vars: `SHOP_FLAG_GIFT_WRAP=\"3,9\"` "
                  "(comma-separated store ids) is parsed in settings into `FEATURE_FLAGS`, and `shop/flags.py` "
                  "has `store_has(store_id, name)`; the checkout view offers gift wrapping only when the store "
                  "has `gift_wrap`. Tests pass.")
            .user("unrelated: the invoice pdf test fails with a font error, can you fix it?", at=30)
            .runs("pytest tests/test_invoice.py")
            .error("E   OSError: cannot open resource DejaVuSans.ttf")
            .says("The fix is bundling DejaVuSans.ttf under `shop/static/fonts/` and pointing `INVOICE_FONT_DIR` "
                  "at it, because the CI image has no system fonts.")
            .runs("pytest tests/test_invoice.py").result("4 passed in 0.8s")
            .says("Fixed: the invoice pdf test passes with the bundled DejaVuSans.ttf font under "
                  "`shop/static/fonts/` and `INVOICE_FONT_DIR` pointing at it; the CI image has no system fonts."))


def table_flags_session(cwd: str = SHOP, day: int = 40) -> Script:
    """Weeks later: the flags move to a table. No error output at all, other words and names."""
    return (Script("s-flags-table", cwd=cwd)
            .user("store 12 says gift wrapping never shows although we switched it on, and I won't redeploy "
                  "for every flip", at=day * DAY)
            .runs("kubectl get deploy shop-web -o yaml | grep GIFT").result("SHOP_FLAG_GIFT_WRAP: 3,9")
            .says("The web deployment's value was never updated for store 12. Moving the flags into the database.")
            .runs("pytest tests/").result("57 passed in 4.0s")
            .says("Done, committed. This replaces the env-var flags from last month. Per-store flags now live "
                  "in table `shop_storefeatureflag` with an admin page, so a flip needs no rollout, and "
                  "`store_has()` reads the table. Tests pass."))


def _by_title(cards, word: str) -> Card:
    return next(c for c in cards if word in c.conclusion)


def test_a_later_card_that_replaces_a_decision_supersedes_the_older_one_whatever_its_signature_and_title():
    old = _drafts(env_flags_session())
    new = _drafts(table_flags_session())
    flags_old = _by_title([c for _, c in old], "env vars")
    flags_new = _by_title([c for _, c in new], "shop_storefeatureflag")
    assert flags_old.error_signature != flags_new.error_signature and flags_old.title != flags_new.title
    plan = apply_rules(old + new, [])
    by_id = {c.id: c for c in plan.write}
    assert by_id[flags_old.id].status == "superseded"
    assert by_id[flags_old.id].superseded_by == flags_new.id
    assert by_id[flags_new.id].supersedes == (flags_old.id,)
    assert by_id[flags_new.id].status == "active"


def test_the_rest_of_the_older_session_stays_valid():
    old = _drafts(env_flags_session())
    assert len(old) == 2, [e.boundary for e, _ in old]
    plan = apply_rules(old + _drafts(table_flags_session()), [])
    font = _by_title(plan.write, "DejaVuSans")
    assert font.status == "active" and not font.superseded_by


def test_an_older_session_read_late_is_superseded_by_the_newer_card_on_disk():
    first = apply_rules(_drafts(table_flags_session()), [])
    plan = apply_rules(_drafts(env_flags_session()), first.write)
    by_id = {c.id: c for c in plan.write}
    old = _by_title(plan.write, "env vars")
    assert old.status == "superseded" and old.superseded_by in by_id
    assert by_id[old.superseded_by].supersedes == (old.id,)


def test_a_decision_changed_in_another_workspace_supersedes_nothing():
    plan = apply_rules(_drafts(env_flags_session()) + _drafts(table_flags_session(cwd="/home/dev/other-shop")), [])
    assert plan.superseded == []


def test_a_retraction_that_names_no_subject_of_the_older_card_supersedes_nothing():
    unrelated = (Script("s-cache", cwd=SHOP).user("the product page is slow, cache the price lookups", at=40 * DAY)
                 .runs("pytest tests/test_prices.py").result("9 passed in 0.7s")
                 .says("Done, committed. This replaces the earlier per-request price query with a 60-second "
                       "`lru_cache` on `price_for(sku)` in `shop/prices.py`; tests pass."))
    drafts = _drafts(unrelated)
    assert retractions(drafts[0][1].conclusion)  # it does say something was replaced: the price query
    plan = apply_rules(_drafts(env_flags_session()) + drafts, [])
    assert plan.superseded == []


def _card(cid: str, conclusion: str, *, created: str, session: str = "", turns=(0, 3), title: str = "") -> Card:
    src = Source(session or f"s-{cid}", "claude-code", f"/logs/{cid}.jsonl", (1, 9), turns)
    return Card(id=cid, title=title, workspace=SHOP, created=created, updated=created, sources=(src,),
                conclusion=conclusion, task_type="debug")


def test_the_from_to_shape_names_what_was_left():
    (r,) = retractions("We switched reqwest from `native-tls` to `rustls-tls`; the musl build links now.")
    assert r.subject == subject_terms("`native-tls`")
    older = [_card("c-tls", "Keep reqwest on `native-tls` and install `libssl-dev` in the build image.",
                   created="2026-09-01T00:00:00Z"),
             _card("c-retry", "Retries use `send_with_retry` with exponential backoff capped at 8s.",
                   created="2026-09-02T00:00:00Z")]
    new = _card("c-new", "We switched reqwest from `native-tls` to `rustls-tls`; the musl build links now.",
                created="2026-10-01T00:00:00Z")
    assert [c.id for c in retracted(new, older)] == ["c-tls"]


def test_a_named_month_points_at_that_months_card_only():
    new = _card("c-new", "Done: this reverses the September decision. `helm_release` now has `atomic = false` "
                         "and `cleanup_on_fail = true` in `modules/app/helm.tf`, because an atomic rollback ran "
                         "old api code on a migrated schema.", created="2026-11-18T10:00:00Z")
    september = _card("c-sep", "The stuck api release was rolled back; `helm_release` in `modules/app/helm.tf` "
                               "now sets `atomic = true` so a failed upgrade rolls back on its own.",
                      created="2026-09-22T10:00:00Z")
    same_day = _card("c-nov", "The atomic rollback of the api `helm_release` ran old code on a migrated schema "
                              "after the pre-upgrade hook in `modules/app/helm.tf` renamed the column.",
                     created="2026-11-18T09:00:00Z")
    assert [c.id for c in retracted(new, [september, same_day])] == ["c-sep"]


def test_a_part_after_compaction_that_overturns_the_earlier_judgment_supersedes_it():
    before = _card("c-before", "The cause is the `pool_size = 2` setting in `settings.toml`: the worker waits "
                               "for a free connection.", created="2026-11-02T09:00:00Z", session="s-long", turns=(0, 8))
    after = _card("c-after", "The earlier diagnosis was wrong: `pool_size` was never reached. The worker blocks on "
                             "the `redis` lock in `jobs/lock.py`, which had no timeout; set `LOCK_TIMEOUT = 5`.",
                  created="2026-11-02T09:00:00Z", session="s-long", turns=(12, 20))
    assert [c.id for c in retracted(after, [before])] == ["c-before"]


def test_ordinary_sentences_are_no_retraction():
    for text in ("A writer now waits up to 5s for the lock instead of failing.",
                 "Replace the token in `.env` and restart the server.",
                 "The earlier fix still holds; this adds a retry on 503.",
                 "Tests moved green after the change.",
                 "What was wrong: `pool_size` was 2 in settings.toml, so the worker waited for a connection.",
                 "Nothing was wrong with the DSN; the test reused a closed handle."):
        assert retractions(text) == [], text


RETRACTIONS_BY_LANGUAGE = {
    "en": "Committing in `seed_orders` was not the real cause: the fixture's second connection `audit_conn` kept "
          "the write lock; closing `audit_conn` releases the lock.",
    "es": "Hacer commit en `seed_orders` no era la causa real: la segunda conexión `audit_conn` del fixture "
          "retenía el bloqueo; cerrar `audit_conn` lo libera.",
    "fr": "Committer dans `seed_orders` n'était pas la vraie cause : la seconde connexion `audit_conn` gardait "
          "le verrou ; fermer `audit_conn` le libère.",
    "de": "Das Committen in `seed_orders` war nicht die eigentliche Ursache: die zweite Verbindung `audit_conn` "
          "hielt die Sperre; `audit_conn` zu schließen gibt sie frei.",
    "cs": "Commit v `seed_orders` nebyl skutečnou příčinou: druhé spojení `audit_conn` drželo zámek; zavření "
          "`audit_conn` ho uvolní.",
}


def _locked_session(sid: str, day: int, fix_path: str, old: str, new: str, conclusion: str,
                    error: str = "E   sqlite3.OperationalError: database is locked") -> Script:
    return (Script(sid, cwd=SHOP)
            .user("test_orders hangs or fails again, please fix", at=day * DAY)
            .runs("pytest tests/test_orders.py")
            .error(error)
            .edits(f"{SHOP}/{fix_path}", old, new)
            .runs("pytest tests/test_orders.py").result("9 passed in 0.7s")
            .says(conclusion))


def test_a_later_session_that_calls_the_earlier_cause_wrong_supersedes_it_in_any_language():
    """The earlier card credits a commit in the fixture; weeks later, the same failure's real cause is found
    and the later conclusion says, in the agent's language, that the commit was not the cause. The errors
    differ (the signature rules cannot pair them): only what the later card says can."""
    for lang, said in RETRACTIONS_BY_LANGUAGE.items():
        old = _drafts(_locked_session("s-commit", 0, "tests/conftest.py", "    yield orders",
                                      "    db.commit()\n    yield orders",
                                      "Committing inside the `seed_orders` fixture releases the write lock before "
                                      "the worker reads, so the test no longer sees database is locked."))
        new = _drafts(_locked_session(f"s-close-{lang}", 30, "tests/conftest.py", "    yield orders",
                                      "    yield orders\n    audit_conn.close()", said,
                                      error="E   TimeoutError: the worker waited 5.0 s for the orders table"))
        plan = apply_rules(old + new, [])
        by_id = {c.id: c for c in plan.write}
        older = next(c for _, c in old if "Committing inside" in c.conclusion)
        newer = next(c for _, c in new if "audit_conn" in c.conclusion)
        assert by_id[older.id].status == "superseded", (lang, by_id[older.id].status, plan.counters)
        assert by_id[older.id].superseded_by == newer.id, lang
        assert by_id[newer.id].status != "superseded", lang
