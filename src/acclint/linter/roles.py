"""The role of code: which files and which parts of a file are not training, whatever rule asks.

Test code (unittest test classes and their helpers' subclasses, pytest test functions and fixtures)
runs under a test runner, never in a training run: a `tearDown` that switches deterministic
algorithms off, or a test that sets `cudnn.benchmark`, says nothing about how a model trains. The
engine asks this module once per file, after the walk, and no rule reports a finding inside test
code. Whole files have a role too: test folders, and packaging (`setup.py`). The conventions are
data (knowledge/training.toml, `[pytest]`, `[unittest]` and `[roles]`).
"""

from __future__ import annotations

import fnmatch
import os
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Optional

from acclint.knowledge import table
from acclint.linter.facts import MODULE_SCOPE, FileFacts
from acclint.linter.project import is_pytest_file, outermost_package

def _training() -> dict:
    return table("training")


# Fact lists whose entries carry `scope` and `node`.
_SCOPED_FACTS = ("calls", "assignments", "env_writes", "key_writes")


def test_classes(facts: FileFacts) -> frozenset:
    """Classes of this file that a test runner instantiates, following bases within the file."""
    table = _training()["unittest"]
    bases, suffixes = set(table["bases"]), tuple(table["base_suffixes"])
    found: set = set()
    changed = True
    while changed:  # a test class may derive from another test class of the same file
        changed = False
        for name, cls in facts.classes.items():
            if name in found:
                continue
            for base in cls.bases:
                names = set(base.names) | ({base.dotted} if base.dotted else set())
                if names & bases or names & found or any(n.rsplit(".", 1)[-1].endswith(suffixes) for n in names):
                    found.add(name)
                    changed = True
                    break
    return frozenset(found)


def test_scopes(facts: FileFacts) -> frozenset:
    """Top-level scopes (a class, or a module-level function) that are test code."""
    scopes = set(test_classes(facts))
    fixtures = frozenset(_training()["unittest"]["fixture_decorators"])
    top = [function for function in facts.functions.values() if "." not in function.qualname]
    scopes.update(function.qualname for function in top if any(d.names & fixtures for d in function.decorators))
    if is_pytest_file(facts):  # pytest collects `test*` functions and `Test*` classes from its files only
        conventions = _training()["pytest"]
        scopes.update(f.qualname for f in top if f.qualname.startswith(conventions["function_prefix"]))
        scopes.update(name for name in facts.classes
                      if "." not in name and name.startswith(conventions["class_prefix"]))
    return frozenset(scopes)


def test_nodes(facts: FileFacts) -> frozenset:
    """The nodes of facts recorded inside test code; findings there are not reported."""
    scopes = test_scopes(facts)
    if not scopes:
        return frozenset()
    nodes = set()
    for group in _SCOPED_FACTS:
        for fact in getattr(facts, group):
            scope = fact.scope
            if scope != MODULE_SCOPE and scope.split(".", 1)[0] in scopes:
                nodes.add(fact.node)
    nodes.update(f.node for name, f in facts.functions.items() if name.split(".", 1)[0] in scopes)
    return frozenset(nodes)


@lru_cache(maxsize=4096)
def enclosing_package(folder: str) -> Optional[str]:
    """The top-level package of the nearest package folder at or above `folder` (a framework's
    `examples/` folder without an __init__.py still sits in the framework's source tree)."""
    parent = os.path.dirname(folder)
    if not folder or parent == folder:
        return None
    top = outermost_package(folder)
    return os.path.basename(top) if top else enclosing_package(parent)


def path_role(path: str) -> Optional[str]:
    """"test" for a file (Python or shell) under a test folder of the scanned tree, or named as pytest
    names test files (`test_*.py`, `conftest.py`), else None."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if set(parts[:-1]) & set(_training()["roles"]["test_folders"]):
        return "test"
    if parts and any(fnmatch.fnmatch(parts[-1], pattern) for pattern in _training()["pytest"]["files"]):
        return "test"
    return None


def vendored_copy(path: str, abspath: str) -> Optional[str]:
    """Where the file belongs to another project copied into the scanned one ("dependencies/foo (its own
    setup.py)"), or None: a folder with its own project markers (setup.py, pyproject.toml, .git, a
    LICENSE, ...) directly inside a folder the conventions keep dependencies in (`third_party/`,
    `dependencies/`: [roles]). Its examples and scripts run that project, not the code being migrated;
    its library code may still run in the user's training. Only a copy below where the scan stands
    counts: `path` is the path as reported, so a scan started inside the copy judges it as the project
    it is."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    holders = frozenset(_training()["roles"]["vendored_folders"])
    for index, name in enumerate(parts[:-2]):
        if name.lower() in holders:
            root = abspath
            for _ in range(len(parts) - index - 2):
                root = os.path.dirname(root)
            marker = _project_marker(root)
            if marker is not None:
                return f"{'/'.join(parts[:index + 2])} (its own {marker})"
    return None


@lru_cache(maxsize=4096)
def _project_marker(folder: str) -> Optional[str]:
    markers = _training()["roles"]["project_markers"]
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    return next((name for marker in markers for name in names if fnmatch.fnmatch(name, marker)), None)


def file_role(facts: FileFacts) -> Optional[str]:
    """"test", "packaging" or "framework" for a file that is not training code as a whole, else None."""
    role = path_role(facts.path)
    if role:
        return role
    if enclosing_package(os.path.dirname(facts.abspath)) in _training()["roles"]["framework_packages"]:
        return "framework"
    packaging = frozenset(_training()["roles"]["packaging_calls"])
    if any(call.scope == MODULE_SCOPE and call.names & packaging for call in facts.calls):
        return "packaging"
    return None
