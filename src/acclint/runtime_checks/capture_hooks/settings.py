"""What `acclint capture` tells the processes of the command, through one environment variable."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

VARIABLE = "ACCLINT_CAPTURE"  # the settings, as JSON; site_hook reads the name too
PATH_VARIABLE = VARIABLE + "_PATH"  # where acclint itself is, for a child whose sys.path lacks it
ON_MISMATCH = ("exit", "warn")


@dataclass
class Settings:
    output: str  # the fingerprint file (absolute)
    status_dir: str  # where each process leaves its final word (`status`)
    steps: int = 1  # 1: step 0 only; 2: also the step-1 loss (the job stops when step 1's update begins)
    keep_going: bool = False  # --continue: the job runs on, unhooked, after the capture
    reference: str | None = None
    on_mismatch: str = "exit"

    def environment(self) -> dict[str, str]:
        return {VARIABLE: json.dumps(asdict(self))}

    @classmethod
    def from_environment(cls) -> "Settings":
        return cls(**json.loads(os.environ[VARIABLE]))

    def status_file(self, pid: int) -> Path:
        return Path(self.status_dir) / f"{pid}.json"
