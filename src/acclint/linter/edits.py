"""What a rule may offer with a finding: a mechanical fix, declared as data, applied by `linter.fix`.

A rule builds a `Fix` from a few `Change`s and passes it to `report(..., autofix=...)`. A change
that names no file or place means the finding's own file and range; the engine fills them in.

Safe fixes cannot break the program and do exactly what the rule's fix text says (add an
`export` before the launch line, insert `.contiguous()`); unsafe fixes change results or speed on
purpose (`cudnn.benchmark = False`, seeding a generator) and need `--unsafe-fixes`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from acclint.findings import Location


@dataclass(frozen=True)
class Change:
    path: Optional[str] = None  # the file to edit (absolute); None = the finding's file
    at: Optional[Location] = None  # the node or line it applies to; None = the finding's range
    imports: tuple = ()  # Python modules the new code names: `import m` is added unless present


@dataclass(frozen=True)
class ReplaceValue(Change):
    """Python: the expression at `at` becomes `code` (for an assignment, its right-hand side)."""

    code: str = ""


@dataclass(frozen=True)
class SetArgument(Change):
    """Python: the call at `at` gets `keyword=code`, replacing the argument passed by that keyword
    (or at `position`), else appended."""

    keyword: str = ""
    code: str = ""
    position: Optional[int] = None


@dataclass(frozen=True)
class InsertStatement(Change):
    """Python: `code` goes before the statement holding `at`, or, with `into_body`, first into the
    block of the `if` whose test is at `at`."""

    code: str = ""
    into_body: bool = False


@dataclass(frozen=True)
class ChainMethod(Change):
    """Python: the method call at `at` (`r.m(...)`) becomes `r.<method>().m(...)`."""

    method: str = ""


@dataclass(frozen=True)
class InsertLine(Change):
    """Shell: the line `text` goes before the line of `at`, with that line's indentation."""

    text: str = ""


@dataclass(frozen=True)
class Fix:
    title: str  # what applying it does, e.g. "set cudnn.benchmark = False"
    safe: bool
    changes: tuple

    def bound(self, path: str, at: Location) -> "Fix":
        """The fix with every change's missing file and place taken from its finding."""
        changes = tuple(replace(c, path=c.path or path, at=c.at or at) for c in self.changes)
        return replace(self, changes=changes)


def safe_fix(title: str, *changes: Change) -> Fix:
    return Fix(title, True, changes)


def unsafe_fix(title: str, *changes: Change) -> Fix:
    return Fix(title, False, changes)


def span_location(span) -> Location:
    """A shell reader `Span` as a finding's Location."""
    return Location(span.line, span.column, span.end_line, span.end_column)
