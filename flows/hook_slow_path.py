"""The hook client's slow path: what it asks of memoir once memoir is importable.

flows/hook_client.py stays stdlib-only on its fast path (one request to the warm recall service);
when it must resolve settings itself, scrub an error's text, answer a SessionStart without the
service, report a broken config or start the previous session's run after a brief, it makes memoir
importable and calls these. This module never imports the client (the client runs as a top-level
`hook_client` too).
"""

from __future__ import annotations

import site

from memoir.cards.config import Settings, default_config_file, load_settings
from memoir.cards.private import foreign_folders  # noqa: F401 - the client asks it of a home before a cold brief
from memoir.flows.hook_backlog import start_backlog  # noqa: F401 - the client calls it once a brief is out


def resolve_settings() -> Settings:
    """The one settings resolution (memoir.cards.config), from site-packages, never the user's folder."""
    return load_settings()


def request_settings(settings) -> dict:
    """What the service needs of the caller's settings to answer as the caller would be answered."""
    return {"home": str(settings.home), "max_injected": settings.max_injected, "min_score": settings.min_score,
            "min_conclusion_chars": settings.min_conclusion_chars, "sync_timeout_ms": settings.sync_timeout_ms}


def scrubbed(text: str) -> str:
    """An error's text through memoir's sanitizer (tens of ms of imports: the error path alone pays them)."""
    from memoir.cards.sanitize import sanitize  # deferred: start-up

    return sanitize(text, Settings.blob_cap)


def config_error(exc: BaseException, env: dict) -> tuple[str, str]:
    """(the default home's state dir, the line's detail) for a config that cannot be used.

    Only the error's kind and the file are written: a bad value may be a secret.
    """
    state = str(Settings().state_dir)
    where = default_config_file(env)
    return state, f"config cannot be used ({type(exc).__name__}, {where}); `memoir status` says why"


def lexical_brief(settings, workspace: str) -> str:
    """SessionStart without the service: the workspace brief from the index, in this process."""
    site.main()  # apsw lives in site-packages, which `-S` left out
    from memoir.index.containers import session_brief  # deferred: start-up
    from memoir.index.recall import Recaller, brief_cards  # deferred: start-up

    with Recaller(settings, embedder=None) as recaller:
        return session_brief(workspace, brief_cards(recaller, workspace))
