"""Stable identities for findings, so code scanning keeps one alert per problem across commits.

The identity is the rule, the file and the *text* of the flagged line (whitespace-normalised),
never the line number: inserting an import above a finding must not turn it into a new alert.
When the line cannot be read, the message stands in for it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Optional, Union

from acclint.findings import Finding
from acclint.reports.sources import SourceCache

# SARIF asks for versioned keys; ours is not GitHub's reserved `primaryLocationLineHash`, which
# the upload action computes itself and warns about when a tool's value disagrees with its own.
FINGERPRINT_KEY = "acclint/v1"


def normalise(text: str) -> str:
    return " ".join(text.split())


class Fingerprinter:
    """Call with each finding in output order; identical identities get `:1`, `:2`, ... suffixes."""

    def __init__(self, base_dir: Union[str, Path, None] = None):
        self._sources = SourceCache(base_dir)
        self._seen: Counter[str] = Counter()

    def line_text(self, path: str, line: int) -> Optional[str]:
        lines = self._sources.lines(path)
        if lines is None or not 1 <= line <= len(lines):
            return None
        return normalise(lines[line - 1]) or None

    def __call__(self, finding: Finding, identity_path: str) -> str:
        """`identity_path` is the path as reported (the SARIF uri), so it is the same on every
        machine even when `finding.path` is absolute."""
        text = self.line_text(finding.path, finding.line)
        anchor = f"line:{text}" if text is not None else f"message:{normalise(finding.message)}"
        key = "\0".join((finding.rule, identity_path, anchor))
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
        self._seen[digest] += 1
        return f"{digest}:{self._seen[digest]}"
