"""Progress on long work, drawn by rich on stderr: shown only on a
terminal and without -q, so pipes, logs and --json stay clean
(docs/esp32s3.md, Board-tool conventions)."""

import contextlib
import sys
import time


def enabled(quiet=False, stream=None) -> bool:
    stream = sys.stderr if stream is None else stream
    if quiet:
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _console(stream=None):
    from rich.console import Console

    return Console(file=sys.stderr if stream is None else stream)


@contextlib.contextmanager
def status(message: str, quiet=False):
    """A spinner with `message` while the block runs (a build, a boot)."""
    if not enabled(quiet):
        yield
        return
    with _console().status(message):
        yield


class Frames:
    """Frames done of a known total, with rate and ETA. Context manager;
    advance(n) after each batch."""

    def __init__(self, total: int, label: str, quiet=False):
        self.total, self.label = total, label
        self.on = enabled(quiet)
        self._progress = None
        self.done = 0
        self.started = time.monotonic()

    def __enter__(self):
        if self.on:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("frames"),
                TextColumn("{task.fields[rate]}"), TextColumn("ETA"), TimeRemainingColumn(),
                console=_console(), transient=True)
            self._progress.__enter__()
            self._task = self._progress.add_task(self.label, total=self.total, rate="")
        return self

    def advance(self, n: int):
        self.done += n
        if self._progress is not None:
            spent = max(time.monotonic() - self.started, 1e-9)
            self._progress.update(self._task, advance=n, rate=f"{self.done / spent:.0f} frames/s")

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.__exit__(*exc)
        return False


class Bytes:
    """Bytes sent of a known total, with transfer speed and ETA (rvne
    update). Context manager; update(done, total) as bytes are acknowledged."""

    def __init__(self, label: str, quiet=False):
        self.label = label
        self.on = enabled(quiet)
        self._progress = None
        self._task = None

    def __enter__(self):
        if self.on:
            from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                                       TransferSpeedColumn)

            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                      TransferSpeedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                      console=_console(), transient=True)
            self._progress.__enter__()
        return self

    def update(self, done: int, total: int):
        if self._progress is None:
            return
        if self._task is None:
            self._task = self._progress.add_task(self.label, total=total)
        self._progress.update(self._task, completed=done, total=total)

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.__exit__(*exc)
        return False
