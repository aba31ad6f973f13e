"""`memoir mcp` as a real subprocess, driven through the MCP SDK's own stdio client."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from memoir.cards.config import load_settings
from memoir.index.db import open_index
from memoir.index.embed import default_embedder
from memoir.index.sync import sync_index
from tests.test_search import MID, NEW, OLD, QUERY, library
from tests.user_cards import store_of

TOOLS = {"memoir_recall", "memoir_search", "memoir_brief"}


def memoir_command() -> tuple[str, list[str]]:
    """The installed `memoir` script beside this interpreter, else the same entry point through -c."""
    script = Path(sys.executable).with_name("memoir")
    if script.exists():
        return str(script), ["mcp"]
    return sys.executable, ["-c", "from memoir.flows.cli.main import main; main()", "mcp"]


def text_of(result) -> str:
    assert not result.is_error
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def session_run(home: Path) -> dict:
    command, args = memoir_command()
    env = {"MEMOIR_HOME": str(home), "XDG_CONFIG_HOME": str(home / "xdg"), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PATH": os.environ.get("PATH", "")}
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(home))
    out: dict = {}
    with open(home / "mcp-stderr.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                out["instructions"] = init.instructions or ""
                listed = await session.list_tools()
                out["tools"] = {t.name: t for t in listed.tools}
                out["recall"] = text_of(await session.call_tool("memoir_recall", {"query": QUERY, "workspace": "/work/shop"}))
                out["search"] = text_of(await session.call_tool("memoir_search", {"query": QUERY, "k": 5,
                                                                                  "include_superseded": True}))
                out["brief"] = text_of(await session.call_tool("memoir_brief", {"workspace": "/work/shop"}))
    return out


@pytest.mark.slow
def test_memoir_mcp_lists_its_three_read_only_tools_and_answers_each(memoir_home):
    settings = load_settings(home=memoir_home)
    store = store_of(settings)
    store.write_many(library())
    store.save_manifest()
    with open_index(settings.index_dir, default_embedder()) as index:
        sync_index(store, index)
    cards_before = {p.name: p.read_bytes() for p in settings.cards_dir.rglob("*.md")}
    index_before = (settings.index_dir / "index.db").read_bytes()

    out = asyncio.run(asyncio.wait_for(session_run(memoir_home), timeout=120))

    assert set(out["tools"]) == TOOLS
    for tool in out["tools"].values():
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        assert tool.description
    assert "historical" in out["instructions"].lower()
    assert out["recall"].startswith("<memoir-context") and "not a current instruction" in out["recall"].lower()
    assert f"[{NEW}]" in out["recall"]  # the gated path: the live card of the chain
    assert OLD not in out["recall"] and MID not in out["recall"]
    assert "not instructions" in out["search"] and f"[{OLD}] superseded by {NEW}" in out["search"]
    assert "Session brief for shop" in out["brief"]
    # Read-only: no card file and no index byte changed.
    assert {p.name: p.read_bytes() for p in settings.cards_dir.rglob("*.md")} == cards_before
    assert (settings.index_dir / "index.db").read_bytes() == index_before
