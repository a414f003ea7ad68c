"""The exit code of a scan, as CI reads it (docs/output.md#exit-codes): 0 clean, 1 findings or files that could not be
read or parsed, 2 usage or internal error. A typo in a CI job's path must not turn the check green."""

from __future__ import annotations

from acclint.findings import INTERNAL_ERROR, ScanResult

CLEAN, FAILED, ERROR = 0, 1, 2


def exit_status(result: ScanResult, *, failed: bool, exit_zero: bool = False) -> int:
    """`failed`: the findings (or, with --diff, the fixes) call for 1. A per-file error also does;
    one that is a bug of ours (E000) calls for 2. --exit-zero turns 1 into 0, never 2 into 0."""
    if any(error.code == INTERNAL_ERROR for error in result.errors):
        return ERROR
    if exit_zero:
        return CLEAN
    return FAILED if failed or result.errors else CLEAN
