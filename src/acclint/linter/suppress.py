"""Inline suppressions: `# noqa: ACL101,ACL203`, `# acclint: ignore[ACL101]`, bare `# noqa`."""

from __future__ import annotations

import re

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+\d+(?:[\s,]+[A-Z]+\d+)*))?", re.IGNORECASE)
_IGNORE = re.compile(r"#\s*acclint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
ALL = frozenset()  # an empty set means every rule


def suppressions(text: str) -> dict:
    """line -> frozenset of suppressed codes (ALL for a bare marker). Only lines with a marker."""
    found: dict = {}
    lowered = text.lower()
    if "noqa" not in lowered and "acclint" not in lowered:
        return found
    for number, line in enumerate(text.splitlines(), start=1):
        if "#" not in line:
            continue
        for pattern in (_NOQA, _IGNORE):
            match = pattern.search(line)
            if match:
                codes = match.group("codes")
                parsed = frozenset(c.upper() for c in re.split(r"[\s,]+", codes.strip()) if c) if codes else ALL
                previous = found.get(number)
                found[number] = ALL if (previous is ALL or not parsed) else (previous or frozenset()) | parsed
    return found


def is_suppressed(table: dict, code: str, line: int, end_line: int) -> bool:
    # The first or the last line of a finding carries its marker (as for multi-line calls).
    for number in {line, end_line}:
        codes = table.get(number)
        if codes is not None and (not codes or code in codes):
            return True
    return False
