"""What one turn says (`cards.cues`): a warm-up or a thank-you is no request, in any language."""

from __future__ import annotations

from memoir.cards.cues import is_chatter, remembered


def test_warm_ups_and_thanks_are_chatter_in_the_languages_sessions_are_written_in():
    for text in ("hi", "Thanks!", "hola", "¡gracias!", "Merci !", "danke", "díky", "안녕하세요", "你好", "谢谢！",
                 "ありがとうございます"):
        assert is_chatter(text), text


def test_a_greeting_with_a_request_after_it_is_a_request():
    for text in ("hola, el login falla", "你好，帮我看看这个报错", "hi, the build fails on CI"):
        assert not is_chatter(text), text


def test_a_question_about_remembering_is_no_rule_to_remember():
    assert remembered("记住：总是用 pnpm") == "总是用 pnpm"
    assert remembered("记得为什么失败吗？") == ""
