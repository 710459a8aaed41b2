"""Acquire the places a command names and release, on every way out, the
ones it acquired (docs/farm.md, "What rvne does with a place")."""

import contextlib
from typing import Callable, Dict, Optional, Sequence

from ..errors import FarmError
from .coordinator import Coordinator


@contextlib.contextmanager
def boards(patterns: Sequence[str] = (), tags: Optional[Dict[str, str]] = None, wait: Optional[float] = 0.0,
           address: Optional[str] = None, say: Callable[[str], None] = lambda line: None):
    """Yield (coordinator, [Board, ...]) for the places named by `patterns`
    and carrying `tags`. A place this user already holds is used and left
    held; the others are released when the block ends, however it ends
    (an error, Ctrl-C, SIGTERM raised as an exception by rvne.cli)."""
    with Coordinator(address) as coord:
        names = coord.select(patterns, tags)
        if not names:
            raise FarmError("no place named: pass --place NAME (or --tag K=V, or set LG_PLACE)")
        mine = []
        try:
            found = []
            for name in names:
                if coord.acquire(name, wait):
                    mine.append(name)
                    say(f"rvne: acquired place {name}")
                else:
                    say(f"rvne: using place {name}, which you already hold (left held)")
                found.append(coord.board(name, name in mine))
            yield coord, found
        finally:
            for name in reversed(mine):
                try:
                    coord.release(name)
                    say(f"rvne: released place {name}")
                except FarmError as exc:
                    say(f"rvne: warning: {exc}")
