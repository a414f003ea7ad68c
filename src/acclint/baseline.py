"""A baseline: today's findings recorded in a file, so a scan reports only the ones added since.

A finding is identified by rule, path and the fingerprint SARIF already uses (the text of the
flagged line, whitespace-normalised, numbered among identical ones: `reports.fingerprint`), so
edits elsewhere in the file keep the match. Paths are stored relative to the baseline's folder,
so the file means the same from any working folder. Rewriting it records only what is found
now: fixed findings drop out.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

from acclint.findings import ScanResult
from acclint.linter.atomic import write_atomic
from acclint.reports.fingerprint import Fingerprinter

BASELINE_VERSION = 1


class BaselineError(ValueError):
    """A baseline file that cannot be used; the message says why."""


def _identities(findings: list, folder: Path, cwd: Path) -> list:
    """(rule, path relative to the baseline, fingerprint) per finding, in the findings' order."""
    fingerprint = Fingerprinter(cwd)
    out = []
    for finding in sorted(findings, key=lambda f: f.sort_key()):
        absolute = Path(os.path.abspath(cwd / finding.path))
        relative = Path(os.path.relpath(absolute, folder)).as_posix()
        out.append((finding, (finding.rule, relative, fingerprint(finding, relative))))
    return out


def write_baseline(path: Path, result: ScanResult, cwd: Path) -> int:
    folder = Path(os.path.abspath(path)).parent
    entries = [{"rule": key[0], "path": key[1], "fingerprint": key[2], "line": finding.line,
                "message": finding.message}
               for finding, key in _identities(result.findings, folder, cwd)]
    document = {"version": BASELINE_VERSION, "tool": "acclint", "findings": entries}
    try:
        write_atomic(Path(path), (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    except OSError as exc:
        raise BaselineError(f"cannot write baseline {path}: {exc.strerror or exc}")
    return len(entries)


def load_baseline(path: Path) -> set:
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(f"baseline {path} does not exist (create it with --write-baseline {path})")
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc}")
    except json.JSONDecodeError as exc:
        raise BaselineError(f"baseline {path} is not JSON: {exc.msg} at line {exc.lineno}")
    if not isinstance(document, dict) or document.get("version") != BASELINE_VERSION \
            or not isinstance(document.get("findings"), list):
        raise BaselineError(f"baseline {path} is not an acclint baseline (version {BASELINE_VERSION})")
    try:
        return {(entry["rule"], entry["path"], entry["fingerprint"]) for entry in document["findings"]}
    except (TypeError, KeyError) as exc:
        raise BaselineError(f"baseline {path} has a malformed entry ({exc})")


def new_findings(result: ScanResult, path: Path, known: set, cwd: Path) -> tuple:
    """(the result with only findings not in the baseline, how many were hidden)."""
    folder = Path(os.path.abspath(path)).parent
    kept = [finding for finding, key in _identities(result.findings, folder, cwd) if key not in known]
    return replace(result, findings=kept), len(result.findings) - len(kept)
