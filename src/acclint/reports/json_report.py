"""The machine format (`--format json`), exactly the documented contract.

Keys are listed here rather than taken from the dataclasses, so a field added to `Finding`
for internal use cannot silently change the contract's shape or order.
"""

from __future__ import annotations

import json

from acclint.findings import ScanResult
from acclint.reports.common import sorted_errors, sorted_findings, sorted_skipped

CONTRACT_VERSION = 1
FINDING_KEYS = (
    "rule",
    "category",
    "severity",
    "path",
    "line",
    "column",
    "end_line",
    "end_column",
    "message",
    "fix",
    "proven",
)
ERROR_KEYS = ("path", "message", "code")  # code: E902 io-error, E999 syntax-error, E000 internal
SKIPPED_KEYS = ("path", "reason")


def _pick(record, keys: tuple[str, ...]) -> dict:
    return {key: getattr(record, key) for key in keys}


def _finding(finding) -> dict:
    return {**_pick(finding, FINDING_KEYS), "premises": [p.to_dict() for p in finding.premises]}


def report_dict(result: ScanResult) -> dict:
    return {
        "version": CONTRACT_VERSION,
        "files_scanned": result.files_scanned,
        "findings": [_finding(f) for f in sorted_findings(result.findings)],
        "errors": [_pick(e, ERROR_KEYS) for e in sorted_errors(result.errors)],
        # Not in the contract's required keys; consumers must tolerate extra keys.
        "skipped": [_pick(s, SKIPPED_KEYS) for s in sorted_skipped(result.skipped)],
    }


def render_json(result: ScanResult) -> str:
    # ensure_ascii=False: messages quote source text, keep it readable.
    return json.dumps(report_dict(result), indent=2, ensure_ascii=False)
