"""One job per board, all at once (docs/farm.md, "Many boards"): each board
in a process of its own, so the host's side of each check (the float64
reference and its error bounds: Python and numpy, CPU-bound) runs on a core
of its own instead of taking turns under one interpreter lock. One board's
error or lost link never stops the others; an interrupt ends every board's
process at once (their places are released by rvne.farm.leases).

Processes are spawned, never forked: the parent holds a gRPC session whose
threads a fork would copy mid-call. Each runs numpy's BLAS on one thread:
the boards are the parallelism, and BLAS threads of several processes
spinning on the same cores made two boards cost 2.8x one board's CPU
(tools/bench_farm.py, docs/farm.md)."""

import contextlib
import dataclasses
import multiprocessing
import os
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


BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@contextlib.contextmanager
def _blas_on_one_thread():
    """The environment the pool's processes start with (numpy reads it at
    import): one BLAS thread each, unless the user set a number."""
    set_here = [k for k in BLAS_THREADS if k not in os.environ]
    os.environ.update({k: "1" for k in set_here})
    try:
        yield
    finally:
        for k in set_here:
            os.environ.pop(k, None)


def run_all(boards, job: Callable, *args) -> List[Outcome]:
    """job(board, *args) for every board at once, each in a spawned process
    (`job` and `args` must pickle: a module-level function, plain values);
    the outcomes in the boards' order."""
    plain = [dataclasses.replace(b, resources={}) for b in boards]     # labgrid's objects stay here
    with _blas_on_one_thread():
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
