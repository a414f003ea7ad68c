"""The records a scan produces. Shared by the engine, the rules and the reporters."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Optional

CATEGORIES = (
    "seed",
    "determinism",
    "hyperparameter",
    "fused-op",
    "contiguity",
    "mixed-precision",
    "framework-default",
    "debug-tooling",
    # Results that depend on the number of cards or the parallel layout (ACL9xx).
    "parallel",
    # Values lost between a model config and the layer built from it (ACL3xx; `hyperparameter`
    # has no scan rule, its differences show only in `acclint diff`).
    "model-config",
)

SEVERITIES = ("error", "warning", "info")
# Lower rank = more severe; used for --fail-on and sorting.
SEVERITY_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}


@dataclass(frozen=True)
class Location:
    """1-based line and column, end exclusive, as editors and SARIF count them."""

    line: int
    column: int
    end_line: int
    end_column: int


# What a finding's claim rests on (docs/premises.md), in the order a reader checks them.
PREMISES = (
    "trains",  # a training program runs this
    "executes",  # this line runs in that training, not only under a branch its configuration turns off
    "value",  # the value is what the message says (resolved, and where from)
    "framework",  # the framework's semantics apply (the value's and the program's framework)
    "material",  # it changes the numbers
)


@dataclass(frozen=True)
class Premise:
    """One premise of a finding, proven or not, with the evidence either way."""

    premise: str
    proven: bool
    evidence: str

    def to_dict(self) -> dict:
        return {"premise": self.premise, "proven": self.proven, "evidence": self.evidence}


def unproven(premises) -> list:
    return [p for p in premises if not p.proven]


@dataclass(frozen=True)
class Finding:
    rule: str
    category: str
    severity: str
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    fix: Optional[str] = None
    # A mechanical fix (linter.edits.Fix) the rule offers; not part of the report's shape.
    autofix: Any = field(default=None, compare=False, repr=False)
    # The premises the claim rests on, proven or not (PREMISES order); the engine completes them.
    premises: tuple = field(default=(), compare=False)
    # The node of the file's facts the finding was reported at (None for launch scripts): how the
    # engine finds the line in a program's flow. Not part of the report's shape.
    node: Optional[int] = field(default=None, compare=False, repr=False)

    @property
    def proven(self) -> bool:
        """Every premise proven. A finding with no premise stated proves nothing."""
        return bool(self.premises) and all(p.proven for p in self.premises)

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_IN_REPORT}
        out["proven"] = self.proven
        out["premises"] = [p.to_dict() for p in self.premises]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "Finding":
        """The finding `to_dict` wrote (`proven` is derived from the premises)."""
        kept = {key: value for key, value in data.items() if key in _FIELDS and key != "premises"}
        return cls(**kept, premises=tuple(Premise(**p) for p in data.get("premises", ())))

    def sort_key(self):
        return (self.path, self.line, self.column, self.rule)


_NOT_IN_REPORT = ("autofix", "premises", "node")
_FIELDS = frozenset(f.name for f in fields(Finding))


# Codes of per-file errors: ruff's numbers where ruff reports the same failure. Any of them
# makes a scan exit 1 (unless --exit-zero); an internal error is a bug of ours and exits 2.
IO_ERROR = "E902"  # the path does not exist, or cannot be listed, read or decoded
SYNTAX_ERROR = "E999"  # the file was read but cannot be parsed
INTERNAL_ERROR = "E000"  # acclint failed on the file
ERROR_NAMES = {IO_ERROR: "io-error", SYNTAX_ERROR: "syntax-error", INTERNAL_ERROR: "internal-error"}


@dataclass(frozen=True)
class FileError:
    path: str
    message: str
    code: str = IO_ERROR

    @property
    def name(self) -> str:
        return ERROR_NAMES.get(self.code, "error")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Skipped:
    """A file that was deliberately not scanned (binary, symlink loop), with the reason."""

    path: str
    reason: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class ScanResult:
    files_scanned: int = 0
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    # What the scan judged as a whole (display paths): the training programs' entry scripts and the
    # launch scripts given. Not in the JSON contract; the HTML report says how many it found, so a
    # scan that found no program cannot read as a pass.
    programs: list[str] = field(default_factory=list)
    launch_scripts: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "version": 1,
            "files_scanned": self.files_scanned,
            "findings": [f.to_dict() for f in self.findings],
            "errors": [e.to_dict() for e in self.errors],
            "skipped": [s.to_dict() for s in self.skipped],
        }
