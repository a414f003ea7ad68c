"""Inside each Python process of a command run by `acclint capture`: record step 0, then stop.

`site_hook` calls `start` once torch (or MindSpore) has been imported. The fingerprint is written
where asked, checked against the reference when there is one, and the process then waits, its
output flushed, for `acclint capture` to end the whole job (a shell script must not go on to its
next command; a launcher must not restart a worker). No `finally` block or exit handler of the
program runs, so nothing saves a model that took the captured update. With --continue the
program runs on with every hook removed.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from acclint.runtime_checks.capture_hooks.settings import Settings
from acclint.runtime_checks.capture_hooks.status import Status, stop_requested

_session: "Session | None" = None


class Session:
    def __init__(self, settings: Settings, framework: str) -> None:
        self.settings = settings
        self.status = Status(pid=os.getpid(), framework=framework)
        self.written = False
        self.fingerprint: Any = None
        self.pending: Any = None  # what records the later steps (--steps N); `end()` when the program ends first

    def finish(self, fingerprint: Any) -> None:
        from acclint.integrations.parity import expect
        from acclint.runtime_checks.compare.expect import ParityError

        try:
            fingerprint.save(self.settings.output)
        except OSError as error:
            self.status.error = f"cannot write {self.settings.output}: {error.strerror or error}"
            self._stop_after_error()
            return
        self.fingerprint = fingerprint
        self.status.captured, self.status.rank = True, fingerprint.rank
        self.status.world_size, self.status.logical = fingerprint.world_size, fingerprint.logical
        stop_code = None if self.settings.keep_going else 0
        if self.settings.reference:
            # Asked to raise, whatever --on-mismatch says: the verdict is printed here (the program may
            # silence warnings) and the parent owns the exit status.
            try:
                expect(fingerprint, self.settings.reference, "raise", show=fingerprint.rank == 0)
                self.status.ok = True
            except ParityError as mismatch:
                self.status.ok = False
                if fingerprint.rank == 0:
                    print(mismatch.result.verdict(), flush=True)
                if self.settings.on_mismatch == "exit":
                    stop_code = 1
            except Exception as error:  # an unreadable reference: the parent reports it
                self.status.error = f"cannot compare with {self.settings.reference}: {error}"
        self.status.stopping = stop_code is not None
        self.write_status()
        if stop_code is not None:
            stop(stop_code, self.settings)

    def fail(self, error: BaseException) -> None:
        cause = f"{type(error).__name__}: {error}" if not _ours(error) else str(error)
        self.status.error = f"could not record step 0: {cause}"
        self._stop_after_error()

    def _stop_after_error(self) -> None:
        self.status.stopping = not self.settings.keep_going
        self.write_status()
        if self.status.stopping:
            stop(2, self.settings)

    def write_status(self) -> None:
        self.written = True
        self.status.write(self.settings.status_file(self.status.pid))


def _ours(error: BaseException) -> bool:
    from acclint.runtime_checks.model.errors import FingerprintError

    return isinstance(error, FingerprintError)


# How long a process that is done waits to be ended with its job before it ends by itself.
WAIT_SECONDS = 60.0


def stop(code: int, settings: Settings) -> None:
    """Wait until `acclint capture` has ended the job (see the module docstring), then end. A
    launcher may start its workers in sessions of their own (torchrun does), out of reach of the
    job's process group: they end when the parent says so (`status.stop_requested`)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline and not stop_requested(settings.status_dir):
        time.sleep(0.05)
    os._exit(code)


def start(framework: str, module: Any) -> None:
    global _session
    if _session is not None:
        return  # torch and MindSpore in one process: the first one imported is observed
    _session = Session(Settings.from_environment(), framework)
    try:
        if framework == "torch":
            _start_torch(module, _session)
        else:
            from acclint.runtime_checks.capture_hooks.mindspore_model import patch_model_train

            patch_model_train(module, _session)
    except Exception as error:  # a broken hook must never break the user's import of torch
        _session.fail(error)


def _start_torch(torch: Any, session: Session) -> None:
    from acclint.runtime_checks.capture_hooks.torch_observer import TorchStepObserver

    made = torch.optim.Optimizer.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:  # to say "no optimizer" when none is made
        session.status.optimizers += 1
        made(self, *args, **kwargs)

    torch.optim.Optimizer.__init__ = counted
    session.pending = TorchStepObserver(session.finish, session.fail, steps=session.settings.steps).install()


def at_exit() -> None:
    """A process that ends without a capture says how far it got."""
    if _session is not None and _session.pending is not None:
        _session.pending.end()  # the program ended before N steps: the fingerprint says how many it holds
    if _session is not None and not _session.written:
        _session.write_status()
