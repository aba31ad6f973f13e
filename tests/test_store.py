import pytest

from memoir.cards.values import SECTION_TITLES, Card, Source
from memoir.cards.store import CardFileError, CardStore, parse_card, render_card


def _card(**kw):
    base = dict(
        id="c-0123456789abcdef", status="active", topics=("python", "tests"), task_type="debug",
        workspace="/home/dev/shop", created="2026-11-02T09:00:00Z", updated="2026-11-02T09:10:00Z",
        sources=(Source("s-1", "claude-code", "/logs/s-1.jsonl", (1, 9), (0, 8)),),
        goal="Fix the flaky checkout test", conclusion="Making the session fixture function-scoped fixes it.",
        evidence="- [t1] ran `pytest`", counterexamples="", follow_up="- TODO: add a regression test",
    )
    base.update(kw)
    return Card(**base)


def test_card_round_trips_through_its_file():
    card = _card(conclusion="Use this:\n\n```py\nx = 1\n```\n\n## not a heading inside text")
    assert parse_card(render_card(card)) == card


def test_rendering_is_deterministic_and_has_six_headings():
    text = render_card(_card())
    assert text == render_card(_card())
    for title in SECTION_TITLES.values():
        assert f"\n## {title}\n" in text


def test_a_file_without_front_matter_is_a_clear_error():
    with pytest.raises(CardFileError, match="front matter"):
        parse_card("# just a note\n", origin="x.md")


def test_a_batch_writes_texts_rendered_elsewhere_and_renders_the_ones_missing(tmp_path):
    store = CardStore(tmp_path / "cards", tmp_path / "state")
    a, b = _card(), _card(id="c-00000000000000bb", goal="Fix the slow import")
    outcomes = store.write_many([a, b], rendered=[render_card(a), None])
    assert [o.action for o in outcomes] == ["new", "new"]
    assert [store.path_for(c.id).read_text() for c in (a, b)] == [render_card(a), render_card(b)]


def test_unchanged_card_is_not_rewritten(tmp_path):
    store = CardStore(tmp_path / "cards", tmp_path / "state")
    assert store.write(_card()).action == "new"
    mtime = store.path_for(_card().id).stat().st_mtime_ns
    assert store.write(_card()).action == "unchanged"
    assert store.path_for(_card().id).stat().st_mtime_ns == mtime


def test_hand_edited_card_is_never_overwritten(tmp_path):
    store = CardStore(tmp_path / "cards", tmp_path / "state")
    store.write(_card())
    store.save_manifest()
    path = store.path_for(_card().id)
    edited = path.read_text().replace("function-scoped", "module-scoped (edited by hand)")
    path.write_text(edited)
    again = CardStore(tmp_path / "cards", tmp_path / "state")
    assert again.write(_card(conclusion="A new rule conclusion that differs.")).action == "hand_edited"
    assert path.read_text() == edited


def test_write_leaves_no_temp_files(tmp_path):
    store = CardStore(tmp_path / "cards", tmp_path / "state")
    store.write(_card())
    assert [p.name for p in (tmp_path / "cards").iterdir()] == ["c-0123456789abcdef.md"]


def test_every_field_is_sanitized_again_when_the_card_is_written(tmp_path):
    """Whatever reached a card past the turn sanitizer (a cwd, a file path, a hand edit) is not written."""
    card = _card(workspace="/mnt/10.42.7.19/shop", title="Fix login to postgres://app:Xy9zHunter2k@db/app",
                 sources=(Source("s-1", "claude-code", "/home/jane.doe@corp.com/s-1.jsonl", (1, 9), (0, 8)),),
                 evidence="- [t1] ran `deploy`\npassword: Xy9zHunter2k")
    store = CardStore(tmp_path / "cards", tmp_path / "state")
    assert store.write(card).action == "new"
    data = store.path_for(card.id).read_text()
    for raw in ("10.42.7.19", "jane.doe@corp.com", "Xy9zHunter2k"):
        assert raw not in data
    assert "/s-1.jsonl" in data and "## Evidence\n\n- [t1] ran `deploy`" in data
    assert store.write(card).action == "unchanged"  # the same card renders to the same bytes


def test_a_card_file_whose_id_is_a_path_is_refused_and_no_file_is_named_by_it(tmp_path):
    """Issue 42: a shared card file saying `id: ../../../../tmp/x` must not be listed, exported or forgotten
    under that id: the id names a file, so it can never be a path."""
    import pytest as _pytest

    from memoir.cards.store import CardFileError, CardStore, is_card_id, parse_card

    assert is_card_id("c-0123456789abcdef") and is_card_id("my-note_1.v2")
    for bad in ("../../../../tmp/x", "a/b", "..", "x..y", "", "/etc/passwd", "a\x00b", "x" * 200):
        assert not is_card_id(bad), bad
    text = "---\nid: ../../../../tmp/x\nstatus: active\n---\n\n# t\n\n## Conclusion\n\nok\n"
    with _pytest.raises(CardFileError, match="not a card id"):
        parse_card(text)
    store = CardStore(tmp_path / "cards", tmp_path / "state")
    with _pytest.raises(CardFileError):
        store.path_for("../outside")
    (tmp_path / "cards").mkdir(parents=True, exist_ok=True)
    (tmp_path / "cards" / "c-evil.md").write_text(text, encoding="utf-8")
    cards, problems = store.load_all()
    assert cards == [] and problems and "not a card id" in str(problems[0])
