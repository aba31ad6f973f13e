"""The parsed cards the index keeps beside its rows (index/card_fields.py): stored exactly or not at all."""

from __future__ import annotations

import datetime
import json
import zlib

import pytest

from memoir.cards.store import parse_card, render_card
from memoir.index.card_fields import card_blob, card_of_blob
from tests.index_fixtures import make_card
from tests.recall_cards import BASE, fake_aws_key


def test_a_stored_card_reads_back_as_the_card_its_file_parses_to():
    for card in (parse_card(render_card(BASE)), *(parse_card(render_card(make_card(i))) for i in range(8))):
        back = card_of_blob(card_blob(card))
        assert back == card and back.extra == card.extra


def test_a_front_matter_value_json_cannot_carry_is_not_stored():
    """A hand-added `reviewed: 2026-01-05` parses to a date; the file is parsed instead."""
    card = parse_card(render_card(BASE)).with_(extra={"reviewed": datetime.date(2026, 1, 5)})
    assert card_blob(card) is None


def test_a_card_another_card_parser_stored_is_refused():
    data = json.loads(zlib.decompress(card_blob(parse_card(render_card(BASE)))))
    data["parser"] = "an-older-parser"
    with pytest.raises(ValueError):
        card_of_blob(zlib.compress(json.dumps(data).encode()))


def test_a_card_holding_a_secret_is_not_copied_into_the_index():
    """A hand edit can put a key in a card file; recall then parses the file (and its gate holds the card)."""
    text = render_card(BASE).replace(BASE.background, f"{BASE.background} export AWS_ACCESS_KEY_ID={fake_aws_key()}")
    card = parse_card(text)
    assert fake_aws_key() in card.background and card_blob(card) is None
