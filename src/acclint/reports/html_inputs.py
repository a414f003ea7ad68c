"""The report's optional inputs: a setup diff of two sides and a comparison of two fingerprints.

Each comes back as the contract's JSON shape (docs/formats.md), or raises ReportInputError with a
message for the user; the CLI turns that into exit 2. The halves are imported only when asked
for: the runtime half needs numpy, the scanner does not.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Mapping

DIFF_UNAVAILABLE = "acclint diff is not available in this build (no acclint.setups package), so --diff cannot be used"


class ReportInputError(Exception):
    """An input the report cannot use; the message says which and why."""


def check_output(path: Path) -> None:
    """Fail before any work when the report could not be written."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.exists():
        raise ReportInputError(f"cannot write {path}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise ReportInputError(f"cannot write {path}: {folder} is not a folder")
    if path.is_dir():
        raise ReportInputError(f"cannot write {path}: it is a folder")


def _readable(option: str, path: Path) -> None:
    if not path.exists():
        raise ReportInputError(f"{option}: {path}: no such file or folder")
    if path.is_file():
        try:
            with path.open("rb") as handle:
                handle.read(1)
        except OSError as exc:
            raise ReportInputError(f"{option}: {path}: cannot read: {exc.strerror or exc}") from None


def diff_dict(result: Any) -> dict:
    """The diff JSON dict (docs/formats.md#setup-differences) of what the diff API returned: a dict, an object with
    to_dict(), or an acclint.setups.DiffResult (through the diff's own JSON reporter)."""
    if isinstance(result, Mapping):
        data = result
    elif hasattr(result, "to_dict"):
        data = result.to_dict()
    else:
        try:
            from acclint.reports.diff_json import diff_dict as contract_dict
        except ImportError:
            raise ReportInputError(DIFF_UNAVAILABLE.replace("no acclint.setups package", "no diff JSON reporter")) from None
        data = contract_dict(result)
    if not isinstance(data, Mapping) or not isinstance(data.get("mismatches"), list):
        raise ReportInputError("the setup diff did not produce the documented shape (no \"mismatches\" list)")
    return dict(data)


def load_diff(left: Path, right: Path) -> dict:
    """`acclint diff LEFT RIGHT --format json`, through the acclint.setups API."""
    for path in (left, right):
        _readable("--diff", path)
    try:
        setups = importlib.import_module("acclint.setups")
        diff_paths, setup_error = setups.diff_paths, setups.SetupError
    except (ImportError, AttributeError):
        raise ReportInputError(DIFF_UNAVAILABLE) from None
    try:  # as `acclint diff` does: a side with nothing to compare is an error, not a diff
        return diff_dict(diff_paths(str(left), str(right)))
    except setup_error as exc:
        raise ReportInputError(f"--diff: {exc}") from None


def load_comparison(left: Path, right: Path):
    """(comparison result, left label, right label); the result offers to_dict() and stages. Either side
    may be an msprobe dump folder instead of a fingerprint (the dump reading of `acclint compare`)."""
    for path in (left, right):
        _readable("--fingerprints", path)
    try:
        from acclint.runtime import FingerprintError
        from acclint.runtime_checks.dumps.compare_dumps import compare_paths
    except ImportError as exc:
        raise ReportInputError(f"--fingerprints needs the runtime extras ({exc.name} is missing): "
                               "pip install 'acclint[torch]' or 'acclint[mindspore]'") from None
    try:
        result = compare_paths(left, right)
    except FingerprintError as exc:
        raise ReportInputError(f"--fingerprints: {exc}") from None
    return result, str(left), str(right)
