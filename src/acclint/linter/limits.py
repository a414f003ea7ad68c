"""Bounded cost per file: which files are too large or of generated shape to analyse, and the
per-file time budget. Figures behind the defaults: benchmarks/README.md (bench_big_file.py).

libcst's parse dominates a file's cost and grows with its tokens, not its bytes: measured on
generated files of five shapes, peak memory is about 60 MB plus 2.1 KB per token and the parse
takes 4-15 s per MB. So a file is judged by its size in bytes (what a user can see and set) and
by its token count (what memory follows): 1 MB of the densest ordinary code holds about 0.4
tokens per byte, so `max-file-size` also allows 0.4 tokens per byte of it; at the 1 MB default
that keeps one file's analysis under about 0.9 GB whatever its shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

DEFAULT_MAX_FILE_SIZE = 1_000_000  # bytes
DEFAULT_TIME_BUDGET = 60.0  # seconds: about 8x the slowest file the default size lets through
TOKENS_PER_BYTE = 0.4  # the token allowance that comes with each byte of max-file-size
# Generated-shape rules apply from this fraction of max-file-size up: a small generated file is cheap.
GENERATED_FRACTION = 0.25
LITERAL_SHARE = 0.9  # one top-level literal this much of the file's bytes: data, not code
HEADER_LINES = 10
# The slowest parse measured (a dense one-literal file): a file that may take longer than the
# budget to parse is analysed in a process that can be killed (see workers.py).
WORST_PARSE_S_PER_BYTE = 15e-6

_TOKEN = re.compile(r"\w+|[^\w\s]")
_GENERATED_MARK = re.compile(
    r"@generated|do not edit|\bauto-?generated\b|\bgenerated (?:by|from|automatically)\b|"
    r"\bautomatically generated\b|\bthis file (?:is|was) generated\b", re.IGNORECASE)
_STATEMENT_START = re.compile(r"^[A-Za-z_@]", re.MULTILINE)
_LITERAL_ASSIGNMENT = re.compile(r"[A-Za-z_][\w.]*\s*(?::[^=\n]*)?=\s*[\[{(]")

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "kib": 1024, "mib": 1024**2, "gib": 1024**3}
_SECONDS = {"": 1.0, "s": 1.0, "ms": 0.001, "m": 60.0, "min": 60.0}
_NUMBER_UNIT = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*$", re.IGNORECASE)
_NO_LIMIT = ("none", "off", "unlimited")


class LimitError(ValueError):
    """A limit written in a form acclint does not read; the message says which forms it does."""


@dataclass(frozen=True)
class Limits:
    max_file_size: Optional[int] = DEFAULT_MAX_FILE_SIZE  # bytes; None: no limit
    time_budget: Optional[float] = DEFAULT_TIME_BUDGET  # seconds per file; None: no budget

    @property
    def max_tokens(self) -> Optional[int]:
        return None if self.max_file_size is None else int(self.max_file_size * TOKENS_PER_BYTE)

    def size_skip(self, size: int) -> Optional[str]:
        """The reason to skip a file of `size` bytes unread, or None."""
        if self.max_file_size is not None and size > self.max_file_size:
            shown, limit = format_size(size), format_limit(self.max_file_size)
            if shown.replace(".0 ", " ") == limit:  # `1.0 MB > 1 MB` says nothing: count the bytes
                shown, limit = f"{size:,} bytes", f"{self.max_file_size:,}"
            return f"too large ({shown} > {limit}, max-file-size)"
        return None

    def shape_skip(self, text: str, size: int) -> Optional[str]:
        """The reason to skip Python source whose parse would cost too much or buy nothing, or None."""
        if self.max_file_size is None:
            return None
        # Every token takes at least one character: a file no longer than the allowance needs no count.
        tokens = len(_TOKEN.findall(text)) if len(text) > self.max_tokens else 0
        if tokens > self.max_tokens:
            return (f"too large ({tokens:,} tokens > {self.max_tokens:,}, the token allowance of "
                    f"max-file-size {format_limit(self.max_file_size)})")
        if size < self.max_file_size * GENERATED_FRACTION:
            return None
        floor = format_limit(int(self.max_file_size * GENERATED_FRACTION))
        mark = generated_mark(text)
        if mark:
            return f"generated (its header says {mark!r}; {format_size(size)} > {floor})"
        share = literal_share(text)
        if share >= LITERAL_SHARE:
            return f"generated shape (one literal is {share:.0%} of the file; {format_size(size)} > {floor})"
        return None

    def may_outlast_budget(self, size: int) -> bool:
        """Whether the native parse alone might run past the budget (it cannot be interrupted in-process)."""
        return self.time_budget is not None and size * WORST_PARSE_S_PER_BYTE >= self.time_budget / 2

    def budget_skip(self) -> str:
        return f"took longer than the {format_seconds(self.time_budget)} time budget (file-time-budget)"


NO_LIMITS = Limits(max_file_size=None, time_budget=None)


def generated_mark(text: str) -> Optional[str]:
    """The generated-file marker in the first lines (a comment or docstring saying so), or None."""
    head = "\n".join(text[:4096].splitlines()[:HEADER_LINES])
    match = _GENERATED_MARK.search(head)
    return match.group(0) if match else None


def literal_share(text: str) -> float:
    """The share of the file taken by its largest top-level statement when that statement assigns
    a bracketed literal (`TABLE = {...}`), else 0. Statements are cut at lines starting in column
    0 with a name or decorator; a literal whose entries start so is cut too, so it counts as
    code (scanned): the rule errs towards scanning."""
    starts = [m.start() for m in _STATEMENT_START.finditer(text)]
    if not text or not starts:
        return 0.0
    ends = starts[1:] + [len(text)]
    start, end = max(zip(starts, ends), key=lambda pair: pair[1] - pair[0])
    return (end - start) / len(text) if _LITERAL_ASSIGNMENT.match(text, start) else 0.0


def parse_size(value, origin: str = "max-file-size") -> Optional[int]:
    """Bytes from `2MB`, `500KB`, `1MiB`, `1048576` or a number; None (no limit) from 0 or `none`."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise LimitError(f"{origin} must be a size such as 1MB, 500KB or 1048576 (bytes), or none")
    if isinstance(value, str) and value.strip().lower() in _NO_LIMIT:
        return None
    number, unit = _number_unit(value, origin, _UNITS, "a size such as 1MB, 500KB or 1048576 (bytes), or none")
    size = int(number * _UNITS[unit])
    return size or None


def parse_seconds(value, origin: str = "file-time-budget") -> Optional[float]:
    """Seconds from `30`, `30s`, `500ms`, `2m`; None (no budget) from 0 or `none`."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise LimitError(f"{origin} must be a duration such as 60, 30s or 500ms, or none")
    if isinstance(value, str) and value.strip().lower() in _NO_LIMIT:
        return None
    number, unit = _number_unit(value, origin, _SECONDS, "a duration such as 60, 30s or 500ms, or none")
    return number * _SECONDS[unit] or None


def _number_unit(value, origin: str, units: dict, expected: str) -> tuple:
    if isinstance(value, (int, float)):
        if value < 0:
            raise LimitError(f"{origin} must not be negative ({value})")
        return float(value), ""
    match = _NUMBER_UNIT.match(value)
    if not match or match.group(2).lower() not in units:
        raise LimitError(f"{origin}: cannot read {value!r}; expected {expected}")
    return float(match.group(1)), match.group(2).lower()


def format_size(size: int) -> str:
    """`10.0 MB`, `250.3 KB`, `900 B` (decimal units, as the limit is written)."""
    if size >= 10**6:
        return f"{size / 10**6:.1f} MB"
    if size >= 10**3:
        return f"{size / 10**3:.1f} KB"
    return f"{size} B"


def format_limit(size: int) -> str:
    """A limit as a person writes it: `1 MB`, `500 KB`, `2.5 MB`."""
    return format_size(size).replace(".0 ", " ")


def format_seconds(seconds: float) -> str:
    return f"{seconds * 1000:g} ms" if seconds < 1 else f"{seconds:g} s"
