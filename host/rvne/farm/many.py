"""One job per board, all at once (docs/farm.md, "Many boards"): each board
in a process of its own, so the host's side of each check (the float64
reference and its error bounds: Python and numpy, CPU-bound) runs on a core
of its own instead of taking turns under one interpreter lock. One board's
error or lost link never stops the others; an interrupt ends every board's
process at once (their places are released by rvne.farm.leases).

Processes are spawned, never forked: the parent holds a gRPC session whose
threads a fork would copy mid-call."""

import dataclasses
import multiprocessing
import time
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from ..errors import RvneError


@dataclass
class Outcome:
    board: str                      # the place's name
    result: Any = None              # what the job returned
    error: Optional[str] = None     # its one-line error instead
    seconds: float = 0.0


def _one(job, board, args) -> Outcome:
    start = time.monotonic()
    try:
        return Outcome(board.place, result=job(board, *args), seconds=time.monotonic() - start)
    except (RvneError, OSError) as exc:
        return Outcome(board.place, error=str(exc) or type(exc).__name__, seconds=time.monotonic() - start)


def run_all(boards, job: Callable, *args) -> List[Outcome]:
    """job(board, *args) for every board at once, each in a spawned process
    (`job` and `args` must pickle: a module-level function, plain values);
    the outcomes in the boards' order."""
    plain = [dataclasses.replace(b, resources={}) for b in boards]     # labgrid's objects stay here
    pool = multiprocessing.get_context("spawn").Pool(processes=len(plain))
    try:
        pending = [pool.apply_async(_one, (job, b, args)) for b in plain]
        outcomes = [p.get() for p in pending]
        pool.close()
        return outcomes
    except BaseException:
        pool.terminate()            # an interrupt or a signal: the boards' processes end now
        raise
    finally:
        pool.join()


def table(rows, header) -> str:
    """Columns padded to their widest cell."""
    rows = [list(map(str, header))] + [list(map(str, r)) for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
