"""`acclint capture`'s own process: run the command with the start-up hook, then say what happened.

Nothing is written into the user's tree but the fingerprint: the hook lives in a temporary
folder put first on the command's PYTHONPATH (as `sitecustomize.py`), removed afterwards.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import acclint
from acclint.runtime_checks.capture_hooks.settings import PATH_VARIABLE, Settings
from acclint.runtime_checks.capture_hooks.status import Status, job_done, read_all, request_stop

EXIT_OK, EXIT_MISMATCH, EXIT_ERROR = 0, 1, 2
POLL_SECONDS = 0.1


@dataclass
class Outcome:
    code: int
    message: str


def run(command: list[str], settings: Settings) -> Outcome:
    folder = Path(tempfile.mkdtemp(prefix="acclint-capture-"))
    try:
        shutil.copyfile(Path(__file__).with_name("site_hook.py"), folder / "sitecustomize.py")
        status_dir = folder / "status"
        status_dir.mkdir()
        settings.status_dir = str(status_dir)
        returncode = _run(command, _environment(folder, settings), settings, status_dir)
        return outcome(read_all(status_dir), returncode, settings)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _environment(folder: Path, settings: Settings) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), env.get("PYTHONPATH")]))
    env[PATH_VARIABLE] = str(Path(acclint.__file__).resolve().parents[1])
    env.update(settings.environment())
    return env


def _run(command: list[str], env: dict[str, str], settings: Settings, status_dir: Path) -> int:
    try:
        process = subprocess.Popen(command, env=env, start_new_session=True)
    except OSError as error:
        raise CommandError(f"cannot run {command[0]!r}: {error.strerror or error}") from None
    try:
        while process.poll() is None:
            time.sleep(POLL_SECONDS)
            if job_done(read_all(status_dir)):
                # The processes that recorded wait for this; the group first, so that a shell
                # script cannot start its next command in between.
                _end_group(process, signal.SIGKILL)
                request_stop(status_dir)
    except KeyboardInterrupt:
        _end_group(process, signal.SIGINT)
    finally:
        request_stop(status_dir)
    return process.wait()


def _end_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class CommandError(Exception):
    """The command could not be started."""


def outcome(statuses: list[Status], returncode: int, settings: Settings) -> Outcome:
    """The exit status and message of `acclint capture`, from what every process said."""
    errors = [s.error for s in statuses if s.error]
    if errors:
        return Outcome(EXIT_ERROR, "error: " + "; ".join(sorted(set(errors))))
    captured = [s for s in statuses if s.captured]
    if not captured:
        return Outcome(EXIT_ERROR, "no optimizer step was seen: " + _why_no_step(statuses, returncode))
    message = f"step 0 recorded in {settings.output}"
    if settings.on_mismatch == "warn":  # the job ran to its end: its own exit status is the answer
        verdict = ("" if not settings.reference else "; it differs from the reference (verdict above)"
                   if any(s.ok is False for s in captured) else f"; at parity with {settings.reference}")
        return Outcome(job_status(returncode), f"{message}{verdict}; the job ended with exit status {returncode}")
    if settings.keep_going and returncode != 0:
        return Outcome(EXIT_ERROR, f"{message}, but the command then failed (exit status {returncode})")
    if settings.reference and any(s.ok is False for s in captured):
        code = EXIT_MISMATCH if settings.on_mismatch == "exit" else EXIT_OK
        return Outcome(code, f"{message}; it differs from {settings.reference} (verdict above)")
    if settings.reference:
        return Outcome(EXIT_OK, f"{message}; at parity with {settings.reference}")
    return Outcome(EXIT_OK, message)


def job_status(returncode: int) -> int:
    """The job's exit status as a shell reports it (a signal N as 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


def _why_no_step(statuses: list[Status], returncode: int) -> str:
    ended = f" (exit status {returncode})" if returncode else ""
    if not statuses:
        return ("no Python process of the command imported torch or MindSpore (python -E, -I and -S skip the "
                f"start-up hook that acclint adds through PYTHONPATH){ended}")
    if all(s.framework == "torch" and s.optimizers == 0 for s in statuses):
        return f"torch was imported but no torch.optim.Optimizer was created{ended}"
    if all(s.framework == "mindspore" for s in statuses):
        return f"MindSpore was imported but no Model.train or TrainOneStepCell step ran{ended}"
    return f"the program ended before its first optimizer step{ended}"


def print_outcome(result: Outcome) -> None:
    print(f"acclint capture: {result.message}", file=sys.stderr, flush=True)
