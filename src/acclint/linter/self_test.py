"""A module's self-test: the `__main__` block of a library module that exercises what the module defines.

A module of a package (its folder holds an `__init__.py`, or scripts beside the folder import it as a
namespace package) that defines classes is imported for them; when the only training its program reaches is written in its own `if __name__ == "__main__":` block (a debug
loop over a model of the module, a memory or speed probe on random inputs), running the file is a check of
that module, not the training run a migration compares. The `trains` premise says so (linter.training_run).
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Optional

from acclint.linter.facts import Call, FileFacts
from acclint.linter.project import Program, training_role

_MAX_SCRIPTS = 200  # scripts read beside a folder to see whether they import it as a package


def _in_package(file: FileFacts) -> bool:
    """Its folder is a package: it holds an `__init__.py`, or scripts beside the folder import modules of it
    as a namespace package (`import networks.lora`, `from networks import lora`)."""
    folder = os.path.dirname(file.abspath)
    return os.path.isfile(os.path.join(folder, "__init__.py")) or _imported_as_package(folder)


@lru_cache(maxsize=1024)
def _imported_as_package(folder: str) -> bool:
    name = re.escape(os.path.basename(folder))
    pattern = re.compile(rf"^\s*(?:from\s+{name}(?:\.\w+)*\s+import\b|import\s+{name}\.\w)", re.MULTILINE)
    parent = os.path.dirname(folder)
    try:
        scripts = sorted(n for n in os.listdir(parent) if n.endswith(".py"))
    except OSError:
        return False
    for script in scripts[:_MAX_SCRIPTS]:
        try:
            with open(os.path.join(parent, script), encoding="utf-8", errors="replace") as handle:
                if pattern.search(handle.read()):
                    return True
        except OSError:
            continue
    return False


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
