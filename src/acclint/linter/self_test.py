"""A module's self-test: the `__main__` block of a library module that exercises what the module defines.

A module of a package (its folder holds an `__init__.py`) that defines classes is imported for them; when
the only training its program reaches is written in its own `if __name__ == "__main__":` block (a debug
loop over a model of the module, a memory or speed probe on random inputs), running the file is a check of
that module, not the training run a migration compares. The `trains` premise says so (linter.training_run).
"""

from __future__ import annotations

import os
from typing import Optional

from acclint.linter.facts import Call, FileFacts
from acclint.linter.project import Program, training_role


def _in_package(file: FileFacts) -> bool:
    return os.path.isfile(os.path.join(os.path.dirname(file.abspath), "__init__.py"))


def module_self_test(program: Program) -> Optional[str]:
    """Why the program is the entry module's self-test, or None."""
    entry = program.entry
    if entry.main_guard is None or not entry.classes or not _in_package(entry):
        return None
    steps = [step for step in program.flow if isinstance(step.fact, Call) and training_role(step.fact) == "step"]
    if not steps or not all(step.file is entry and step.fact.in_main for step in steps):
        return None
    line = entry.spans[entry.main_guard].line
    return (f"{entry.path} is a module of a package that defines classes, and the only training it reaches is in "
            f"its own `__main__` block ({entry.path}:{line}): a self-test of the module, not a training run")
