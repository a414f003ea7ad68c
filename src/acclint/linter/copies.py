"""Identical files reported once: byte-identical copies of a script (committed beside the run logs of
each experiment, a launch script copied per model) are one cause, not one finding per copy.

Files are compared by the hash of their bytes, never by name, and only those with findings are read.
Among copies, the same rule at the same place is one finding: the one the copy proves (or the gravest,
else the first path) stands and names the others: "(and 8 identical copies: a/train.py, ...)". The
rest is folded away. A fix applied to the one shown changes its bytes: the next scan shows the copies.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Optional

from acclint.findings import SEVERITY_RANK

_SHOWN = 3  # copies named in the message; the rest are counted


def fold_identical_copies(findings: list, abspaths: dict) -> list:
    """`findings` with those of byte-identical files folded into one per (rule, place).
    `abspaths`: reported path -> file on disk, for the files whose bytes are on disk."""
    digests = {path: _digest(abspaths[path]) for path in {f.path for f in findings} if path in abspaths}
    groups: dict = {}  # digest -> paths with that content
    for path, digest in sorted(digests.items()):
        if digest is not None:
            groups.setdefault(digest, []).append(path)
    copies = {path: tuple(paths) for paths in groups.values() if len(paths) > 1 for path in paths}
    if not copies:
        return findings
    places: dict = {}  # (copies, rule, line, column) -> findings of that place in every copy
    for finding in findings:
        group = copies.get(finding.path)
        if group is not None:
            places.setdefault((group, finding.rule, finding.line, finding.column), []).append(finding)
    out = []
    for finding in findings:
        group = copies.get(finding.path)
        if group is None:
            out.append(finding)
            continue
        same = places[(group, finding.rule, finding.line, finding.column)]
        shown = min(same, key=_rank)
        if finding is shown:
            out.append(_naming(finding, [f.path for f in same if f is not finding]))
    return out


def _rank(finding) -> tuple:
    return (not finding.proven, SEVERITY_RANK.get(finding.severity, len(SEVERITY_RANK)), finding.path)


def _naming(finding, others: list):
    if not others:
        return finding
    others = sorted(set(others))
    names = ", ".join(others[:_SHOWN]) + (", ..." if len(others) > _SHOWN else "")
    noun = "copy" if len(others) == 1 else "copies"
    return replace(finding, message=f"{finding.message.rstrip()} (and {len(others)} identical {noun}: {names})")


def _digest(abspath: str) -> Optional[str]:
    try:
        with open(abspath, "rb") as handle:
            return hashlib.blake2b(handle.read(), digest_size=16).hexdigest()
    except OSError:
        return None
