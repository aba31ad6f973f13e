"""The hook's record of its calls, `state/hook.jsonl`, as `memoir status`, the report and the bench read it.

The hook client (flows/hook_client.py, stdlib only) writes it; this side reads it with the one
JSON-lines reader.
"""

from __future__ import annotations

from pathlib import Path

from memoir.cards.jsonl import JsonlError, read_jsonl
from memoir.flows.hook_client import HOOK_LOG


def read_calls(state_dir: str) -> list[dict]:
    """Every well-formed line of hook.jsonl (and its rotated predecessor), oldest first."""
    out: list[dict] = []
    for name in (HOOK_LOG + ".1", HOOK_LOG):
        try:
            out.extend(read_jsonl(Path(state_dir) / name))
        except JsonlError:
            continue
    return out
