"""The report's optional inputs: a setup diff of two sides and a comparison of two fingerprints.

Each comes back as the contract's JSON shape (DESIGN.md), or raises ReportInputError with a
message for the user; the CLI turns that into exit 2. The halves are imported only when asked
for: the runtime half needs numpy, the scanner does not.
"""

from __future__ import annotations

import importlib
import inspect
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


def _setups_diff():
    """The diff entry point of acclint.setups: a function of (left, right) giving the diff result."""
    try:
        setups = importlib.import_module("acclint.setups")
    except ImportError:
        raise ReportInputError(DIFF_UNAVAILABLE) from None
    for name in ("diff_paths", "diff_setups", "diff"):
        function = getattr(setups, name, None)
        if callable(function) and not inspect.isclass(function):
            return function
    raise ReportInputError(DIFF_UNAVAILABLE.replace("no acclint.setups package", "acclint.setups has no diff function"))


def diff_dict(result: Any) -> dict:
    """The diff JSON dict from whatever the diff API returned (a dict, or an object with to_dict)."""
    data = result.to_dict() if hasattr(result, "to_dict") else result
    if not isinstance(data, Mapping) or not isinstance(data.get("mismatches"), list):
        raise ReportInputError("the setup diff did not produce the documented shape (no \"mismatches\" list)")
    return dict(data)


def load_diff(left: Path, right: Path) -> dict:
    for path in (left, right):
        _readable("--diff", path)
    diff = _setups_diff()
    try:
        result = diff(left, right)
    except (ValueError, OSError) as exc:  # the setups' own "cannot read this side" errors
        raise ReportInputError(f"--diff: {exc}") from None
    return diff_dict(result)


def load_comparison(left: Path, right: Path):
    """(comparison result, left label, right label); the result offers to_dict() and stages."""
    for path in (left, right):
        _readable("--fingerprints", path)
    try:
        from acclint.runtime import FingerprintError, compare, load
    except ImportError as exc:
        raise ReportInputError(f"--fingerprints needs the runtime extras ({exc.name} is missing): "
                               "pip install 'acclint[torch]' or 'acclint[mindspore]'") from None
    try:
        result = compare(load(left), load(right))
    except FingerprintError as exc:
        raise ReportInputError(f"--fingerprints: {exc}") from None
    return result, str(left), str(right)
