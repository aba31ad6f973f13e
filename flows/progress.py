"""Progress on long work: one rich display on stderr when a person is watching, silence otherwise.

The library cores (cards/, index/, the run steps) take an optional plain callable
`progress(stage, done, total, detail="")` and never import rich; only this module draws.
`total == 0` means "working, size unknown" (a spinner with the elapsed time), e.g. a model load.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Mapping
from typing import IO, Protocol

# Stage names the cores report, and what a person reads beside the bar.
LABELS = {
    "collect": "Reading log files",
    "transform": "Segmenting and drafting",
    "distill": "Checking cards against the library",
    "store": "Writing card files",
    "model": "Loading the embedding model",
    "embed": "Embedding cards",
    "index": "Updating the index",
    "index check": "Checking the index",
    "replay": "Replaying queued work",
    "turn index": "Indexing turns for search (after the commit: stopping keeps what is done)",
}
UNITS = {"collect": "files", "embed": "cards", "replay": "items", "store": "cards"}
FORCE_ENV = "MEMOIR_PROGRESS"  # "1" draws even when stderr is no terminal (tests, `script`), "0" never


class Progress(Protocol):
    def __call__(self, stage: str, done: int, total: int, detail: str = "") -> None: ...


def wanted(as_json: bool, env: Mapping[str, str] | None = None, stream: IO | None = None) -> bool | None:
    """Draw progress? Never with --json; forced by MEMOIR_PROGRESS in `env`; else only on a terminal.

    `env` is the process environment the entrypoint read (memoir.cards.config.environment).
    Returns None for "no", False for "yes, it is a terminal" and True for "yes, forced" (rich
    must then be told to draw on a stream that is not a terminal).
    """
    env = {} if env is None else env
    if as_json or env.get(FORCE_ENV) == "0":
        return None
    if env.get(FORCE_ENV) == "1":
        return True
    stream = sys.stderr if stream is None else stream
    return False if stream.isatty() else None


class Display:
    """A `Progress` callable drawing one line per stage with rich; a no-op when disabled.

    Use it as a context manager (or call `close()`): the display starts on the first report, so
    a quick command that reports nothing prints nothing.
    """

    def __init__(self, as_json: bool = False, *, force: bool | None = None, stream: IO | None = None,
                 env: Mapping[str, str] | None = None):
        mode = wanted(as_json, env, stream) if force is None else (True if force else None)
        self.enabled = mode is not None
        self._forced = bool(mode)
        self._stream = stream
        self._bars = None
        self._tasks: dict[str, int] = {}
        self._counted: dict[str, bool] = {}

    def _start(self):
        from rich.console import Console  # deferred: start-up (rich)
        from rich.progress import (  # deferred: start-up (rich)
            BarColumn,
            Progress as Bars,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        stream = self._stream if self._stream is not None else sys.stderr
        console = Console(file=stream, force_terminal=True if self._forced else None)
        self._bars = Bars(SpinnerColumn(finished_text="✓"), TextColumn("{task.description}"), BarColumn(),
                          TextColumn("{task.fields[count]}"), TextColumn("{task.fields[detail]}"),
                          TimeElapsedColumn(), TimeRemainingColumn(compact=True), console=console, transient=False)
        self._bars.start()

    def __call__(self, stage: str, done: int, total: int, detail: str = "") -> None:
        if not self.enabled:
            return
        if self._bars is None:
            self._start()
        task = self._tasks.get(stage)
        if task is None:
            # A stage first reported with a total is counted (done/total and a bar); one first
            # reported without is a spinner with the elapsed time until it ends.
            self._counted[stage] = total > 0
            task = self._tasks[stage] = self._bars.add_task(LABELS.get(stage, stage), total=total or None,
                                                            count="", detail="")
        count = f"{done}/{total} {UNITS.get(stage, '')}".strip() if self._counted[stage] else ""
        self._bars.update(task, completed=done, total=total or None, count=count, detail=detail)
        if total and done >= total:
            self._bars.stop_task(task)

    def close(self) -> None:
        if self._bars is not None:
            self._bars.stop()
            self._bars = None

    def __enter__(self) -> Display:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def spinner(text: str):
    """A spinner with `text` on stderr while a person watches; nothing when stderr is a pipe or a file."""
    if not sys.stderr.isatty():
        return contextlib.nullcontext()
    from rich.console import Console  # deferred: start-up (rich)

    return Console(stderr=True).status(text)


def stage(progress: Callable | None, name: str, detail: str = ""):
    """Report a step of unknown length: a spinner from now until the returned `done()` is called."""
    if progress is not None:
        progress(name, 0, 0, detail)

    def done(final_detail: str = detail) -> None:
        if progress is not None:
            progress(name, 1, 1, final_detail)

    return done


class AnnouncedLoad:
    """An embedder that reports its first, slow model load (seconds) as the `model` stage.

    Everything else is the wrapped embedder's; `model_id` and `dim` stay known without a load.
    """

    def __init__(self, embedder, progress: Callable | None):
        self.inner = embedder
        self.progress = progress

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def _load_first(self) -> None:
        if self.progress is not None and not getattr(self.inner, "loaded", True):
            done = stage(self.progress, "model")
            self.inner.encode(["load"])  # the first call loads the model; one word is cheap
            done()

    def encode(self, texts):
        if len(texts):
            self._load_first()
        return self.inner.encode(texts)

    def encode_one(self, text: str):
        self._load_first()
        return self.inner.encode_one(text)


def announced(embedder, progress: Callable | None):
    """`embedder`, reporting its model load through `progress` when there is one to report to."""
    return embedder if progress is None else AnnouncedLoad(embedder, progress)
