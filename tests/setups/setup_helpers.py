"""Shared by the tests of `acclint diff`: fixture paths, a line oracle, running a diff."""

from __future__ import annotations

from pathlib import Path

from acclint.setups import diff_setups, extract

FIXTURES = Path(__file__).parent / "fixtures"


def line_of(path: Path, text: str, occurrence: int = 1) -> int:
    """The 1-based line of the n-th line containing `text`: an oracle independent of acclint."""
    found = 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if text in line:
            found += 1
            if found == occurrence:
                return number
    raise AssertionError(f"{text!r} not in {path}")


def run_diff(left, right, ignore=()):
    return diff_setups(extract(str(left)), extract(str(right)), ignore=ignore)


def by_key(result) -> dict:
    return {mismatch.key: mismatch for mismatch in result.mismatches}
