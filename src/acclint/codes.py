"""The rule-code scheme: `ACL` + the category's digit + two digits (ACL104 is a seed rule).

One table ties each scanning category to its digit, so the code says what a finding is about
before its text does. Built-in rules, project plugins and tools/new_rule.py all check codes here.
`hyperparameter` has no digit: its differences show only in `acclint diff`, never as a finding.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

from acclint.findings import CATEGORIES

CATEGORY_DIGITS = {
    "seed": "1",
    "determinism": "2",
    "model-config": "3",
    "fused-op": "4",
    "contiguity": "5",
    "mixed-precision": "6",
    "framework-default": "7",
    "debug-tooling": "8",
    "parallel": "9",
}
CODE_PATTERN = re.compile(r"ACL[1-9]\d{2}")
NAME_PATTERN = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def code_problem(code, category) -> Optional[str]:
    """Why `code` is not a valid code for a rule of `category`, or None."""
    if category not in CATEGORY_DIGITS:
        scanning = ", ".join(CATEGORY_DIGITS)
        extra = " (it has no scan rules)" if category in CATEGORIES else ""
        return f"unknown category {category!r}{extra}; expected one of {scanning}"
    if not isinstance(code, str) or not CODE_PATTERN.fullmatch(code):
        return f"code {code!r} is not ACL followed by three digits (e.g. ACL{CATEGORY_DIGITS[category]}01)"
    if code[3] != CATEGORY_DIGITS[category]:
        return (f"code {code} does not match category {category!r}: its codes are "
                f"ACL{CATEGORY_DIGITS[category]}xx")
    return None


def next_free_code(category: str, taken: Iterable[str]) -> str:
    """The lowest unused code of `category` (ACL101, ACL102, ...)."""
    digit = CATEGORY_DIGITS[category]
    used = set(taken)
    for number in range(1, 100):
        code = f"ACL{digit}{number:02d}"
        if code not in used:
            return code
    raise ValueError(f"category {category!r} has no free code left (ACL{digit}01-ACL{digit}99 all used)")
