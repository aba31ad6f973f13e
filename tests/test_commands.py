"""What a tool call is (`cards.commands`), read from the call text the readers render (`cards.hosts.base`)."""

from __future__ import annotations

from memoir.cards.commands import is_change, list_key
from memoir.cards.hosts.base import TOOL_CALL_CHARS, tool_call_text
from memoir.cards.values import Turn
from tests.turns import Script


def _call(name: str, args: dict) -> Turn:
    return Turn("copilot-cli", "s", 1, "assistant", "tool_call", tool_call_text(name, args), tool_name=name)


def test_an_editor_asked_only_to_view_a_file_is_a_look_and_its_other_commands_are_changes():
    view = _call("str_replace_editor", {"command": "view", "path": r"c:\Users\me\app"})
    create = _call("str_replace_editor", {"command": "create", "path": r"c:\Users\me\app\.gitignore",
                                          "file_text": "node_modules/\n"})
    replace = _call("str_replace_based_edit_tool", {"command": "str_replace", "path": "a.py", "old_str": "x",
                                                    "new_str": "y"})
    assert not is_change(view)
    assert is_change(create) and is_change(replace)
    assert is_change(_call("Edit", {"file_path": "view.py", "old_string": '"command":"view"', "new_string": ""}))


def test_a_write_keeps_its_path_when_its_content_is_longer_than_the_call_text_shows():
    content = "line of the new file\n" * (TOOL_CALL_CHARS // 10)
    for name, args in (("write_file", {"content": content, "file_path": "/repo/src/app.ts"}),  # Gemini CLI
                       ("str_replace_editor", {"command": "create", "file_text": content, "path": "/repo/README.md"})):
        call = _call(name, args)
        assert len(call.text) < len(content)  # bounded
        assert args.get("file_path", args.get("path")) in call.text[:200]


def test_arguments_keep_their_name_order_but_for_long_texts():
    assert tool_call_text("shell", {"workdir": "/r", "command": ["bash", "-lc", "pytest -q"], "timeout_ms": 1000}) \
        == 'shell {"command":["bash","-lc","pytest -q"],"timeout_ms":1000,"workdir":"/r"}'
    patch = ["apply_patch", "*** Begin Patch\n" + "+x\n" * 200]  # a long command keeps its place: not a text
    assert tool_call_text("shell", {"workdir": "/r", "command": patch}).startswith('shell {"command":["apply_patch"')


def test_a_bare_item_added_to_a_list_is_named_by_the_lists_key():
    s = Script()
    s.edits("/w/tsconfig.json", '"lib": [\n  "ES2020"\n]', '"lib": [\n  "ES2020",\n  "DOM"\n],')
    edit = s.turns[-2]
    assert list_key(edit, '"DOM"') == "lib"
    assert list_key(edit, '"lib": ["DOM"]') == ""  # a line with a key of its own names itself
    s.edits("/w/pyproject.toml", 'dependencies = [\n  "httpx",\n]', 'dependencies = [\n  "httpx",\n  "anyio",\n]')
    assert list_key(s.turns[-2], '"anyio",') == "dependencies"
    s.edits("/w/app.py", "x = 1", "x = 1\nfoo")
    assert list_key(s.turns[-2], "foo") == ""  # no list opens above it
