"""The per-file time budget inside one process: an alarm that interrupts Python-level analysis.

SIGALRM's handler runs between bytecodes, so it stops the walk, the positions pass and the
rules at once, but not libcst's native parser (measured: an alarm set 0.3 s into an 8 s parse
fires when the parse returns). Where the parse itself may outlast the budget, the file is
analysed in a worker process that is killed at the deadline instead (pool.py). Without SIGALRM
(Windows) or off the main thread (acclint used as a library from a thread) the alarm is off and
only worker processes enforce the budget.
"""

from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from typing import Optional


class BudgetExceeded(BaseException):
    """Raised by the alarm. A BaseException, so that `except Exception` in analysis code cannot swallow it."""


def _ring(signum, frame) -> None:
    raise BudgetExceeded()


@contextmanager
def alarm(seconds: Optional[float]):
    if not seconds or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _ring)
    started = time.monotonic()
    earlier, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if earlier:  # someone else's timer (pytest-timeout, the host program): give back what is left of it
            signal.setitimer(signal.ITIMER_REAL, max(earlier - (time.monotonic() - started), 0.001))
