"""One job per board, all at once (docs/farm.md, "Many boards"): each board
in a thread of its own, one board's error or lost link never stops the
others, and an interrupt closes every board's link so the command ends at
once (its places are released by rvne.farm.leases)."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from ..errors import RvneError


@dataclass
class Outcome:
    board: str                      # the place's name
    result: Any = None              # what the job returned
    error: Optional[str] = None     # its one-line error instead
    seconds: float = 0.0


class Links:
    """The links the jobs opened, to close from the main thread on an interrupt."""

    def __init__(self):
        self._lock = threading.Lock()
        self._open = []
        self.closing = False

    def add(self, link):
        with self._lock:
            if self.closing:
                link.close()
                raise RvneError("interrupted")
            self._open.append(link)
        return link

    def close_all(self):
        with self._lock:
            self.closing = True
            links, self._open = self._open, []
        for link in links:
            try:
                link.close()
            except Exception:       # noqa: BLE001 - a half-dead link must not stop closing the others
                pass


def run_all(boards, job: Callable[[Any, Links], Any]) -> List[Outcome]:
    """job(board, links) for every board concurrently; outcomes in the boards' order."""
    links = Links()

    def one(board):
        start = time.monotonic()
        try:
            return Outcome(board.place, result=job(board, links), seconds=time.monotonic() - start)
        except (RvneError, OSError) as exc:
            return Outcome(board.place, error=str(exc) or type(exc).__name__, seconds=time.monotonic() - start)

    pool = ThreadPoolExecutor(max_workers=max(1, len(boards)), thread_name_prefix="rvne-board")
    try:
        futures = [pool.submit(one, b) for b in boards]
        return [f.result() for f in futures]
    except BaseException:
        links.close_all()
        raise
    finally:
        pool.shutdown(wait=True)


def table(rows, header) -> str:
    """Columns padded to their widest cell."""
    rows = [list(map(str, header))] + [list(map(str, r)) for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
