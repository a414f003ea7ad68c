"""A one-line progress display on stderr for scans that take a while.

It appears only after `delay` seconds (about a second: short scans stay silent), redraws at most
ten times a second, and erases itself when the scan ends. Whoever runs the scan decides whether
it is wanted (`wanted()`); the engine only calls `phase` and `advance`.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Optional, TextIO

DEFAULT_DELAY_S = 1.0
_REDRAW_S = 0.1
_CLEAR = "\r\x1b[K"


class NoProgress:
    def phase(self, name: str, total: Optional[int] = None) -> None:
        pass

    def advance(self, count: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


class Progress(NoProgress):
    def __init__(self, stream: TextIO, delay: float = DEFAULT_DELAY_S):
        self.stream = stream
        self.delay = delay
        self.start = time.monotonic()
        self.name, self.total, self.done = "", None, 0
        self._drawn_at: Optional[float] = None

    def phase(self, name: str, total: Optional[int] = None) -> None:
        self.name, self.total, self.done = name, total, 0
        self._draw(force=True)

    def advance(self, count: int = 1) -> None:
        self.done += count
        self._draw(force=self.total is not None and self.done >= self.total)

    def _draw(self, force: bool) -> None:
        now = time.monotonic()
        if now - self.start < self.delay:
            return
        if not force and self._drawn_at is not None and now - self._drawn_at < _REDRAW_S:
            return
        count = f" {self.done}/{self.total}" if self.total is not None else ""
        self.stream.write(f"{_CLEAR}acclint: {self.name}{count}")
        self.stream.flush()
        self._drawn_at = now

    def close(self) -> None:
        if self._drawn_at is not None:
            self.stream.write(_CLEAR)
            self.stream.flush()


def wanted(*, quiet: bool, machine_output_on_stdout: bool, stream: TextIO = sys.stderr) -> bool:
    """On a terminal only: not when piped, not in CI, not with --quiet, not under JSON/SARIF on stdout
    (a terminal showing machine output is being read by a program, or copied)."""
    if quiet or machine_output_on_stdout or os.environ.get("CI"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def for_scan(*, quiet: bool, machine_output_on_stdout: bool) -> NoProgress:
    if not wanted(quiet=quiet, machine_output_on_stdout=machine_output_on_stdout):
        return NoProgress()
    # ACCLINT_PROGRESS_DELAY: seconds before the line appears (tests set 0 to see it on a small scan).
    try:
        delay = float(os.environ.get("ACCLINT_PROGRESS_DELAY", DEFAULT_DELAY_S))
    except ValueError:
        delay = DEFAULT_DELAY_S
    return Progress(sys.stderr, delay)
