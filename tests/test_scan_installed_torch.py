"""Scan the whole installed torch package: thousands of real-world files, none may crash acclint.

Slow (minutes): deselect with `-m "not slow"`. Skipped when torch is not installed, except in
CI (the CI variable set), where torch is expected and its absence is a failure.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SRC = REPO_ROOT / "src"
TIMEOUT_S = 1500


def torch_dir() -> Path:
    try:
        import torch
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("torch is not installed, but CI must run the scan of the installed torch package")
        pytest.skip("torch is not installed")
    return Path(torch.__file__).resolve().parent


@pytest.mark.slow
def test_scan_installed_torch(tmp_path):
    target = torch_dir()
    python_files = sum(1 for _ in target.rglob("*.py"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH", "")]))
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")  # no stray [tool.acclint]
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "acclint", "scan", str(target), "--format", "json", "--jobs", "2"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
    )
    elapsed = time.monotonic() - started
    assert proc.returncode in (0, 1), f"exit {proc.returncode}\n{proc.stderr[-4000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
    report = json.loads(proc.stdout)
    assert report["version"] == 1

    errors = report["errors"]
    by_rule = collections.Counter(f["rule"] for f in report["findings"])
    print(f"\nscanned {target} ({python_files} .py files) in {elapsed:.0f} s: "
          f"files_scanned={report['files_scanned']} findings={len(report['findings'])} "
          f"errors={len(errors)} skipped={len(report['skipped'])}")
    print("findings by rule:", dict(sorted(by_rule.items())))
    for error in errors[:20]:
        print("error:", error["path"], "-", error["message"][:200])

    assert report["files_scanned"] >= 2000
    internal = [e for e in errors if "internal error" in e["message"]]
    assert not internal, "\n".join(f"{e['path']}: {e['message']}" for e in internal[:20])
    # The exit code agrees with the findings (default --fail-on warning) and the per-file errors.
    failing = [f for f in report["findings"] if f["severity"] in ("error", "warning")]
    assert proc.returncode == (1 if failing or errors else 0)  # an unreadable file fails the run too
