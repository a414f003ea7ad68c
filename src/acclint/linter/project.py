"""Project-level facts: local modules, entry points, what an entry point reaches, and in what order.

A seed is a property of the program, not of one line: this module follows an entry script
through the local functions, classes and modules it calls, and flattens what runs into one
ordered flow that rules read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterator, Optional

from acclint.knowledge import table
from acclint.linter.facts import MODULE_SCOPE, Call, ClassDef, FileFacts, FunctionDef

# Bound on inlining depth: deeper chains add nothing a rule needs and cost time.
_MAX_DEPTH = 12


@dataclass
class ShellFacts:
    path: str
    abspath: str
    script: object  # linter.shell.ShellScript
    suppressions: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    """One recorded fact in execution order: a Call, Assignment or EnvWrite, and its file."""

    file: FileFacts
    fact: object
    depth: int  # 0 = written in the entry script itself
    index: int  # position in the flow


@dataclass
class Program:
    entry: FileFacts
    flow: list  # Steps in execution order
    files: list  # FileFacts reached (entry first)
    launches: list  # (ShellFacts, LaunchCommand) that run this entry
    reached_functions: set  # (abspath, qualname) reached from the entry

    def calls(self) -> Iterator[Step]:
        return (s for s in self.flow if isinstance(s.fact, Call))

    def anchor(self) -> int:
        """The node a finding about the whole program points at."""
        if self.entry.main_guard is not None:
            return self.entry.main_guard
        markers = [s.fact for s in self.flow if s.file is self.entry and is_training_marker(s.fact)]
        if markers:
            return markers[0].node
        return 0


def _training_table() -> dict:
    return table("training")


def is_training_marker(fact) -> bool:
    if not isinstance(fact, Call):
        return False
    markers = _training_table()
    if fact.names & frozenset(markers["calls"]):
        return True
    method = fact.method
    if method in markers["methods"]:
        return True
    receiver = fact.callee.rsplit(".", 1)[0].lower() if "." in fact.callee else ""
    hints = markers["receiver_methods"].get(method)
    return bool(hints) and any(hint in receiver for hint in hints)


class Project:
    def __init__(self, files: list, shells: list, roots: list):
        self.files = {f.abspath: f for f in files}
        self.shells = {s.abspath: s for s in shells}
        self.roots = [os.path.abspath(r) for r in roots]
        self._classes_cache: dict = {}
        self._module_cache: dict = {}
        self._package_root_cache: dict = {}

    # -- modules -----------------------------------------------------------------------------
    def module_file(self, importer: FileFacts, module: str) -> Optional[FileFacts]:
        """The scanned file a module name refers to, resolved as Python would for a script."""
        key = (os.path.dirname(importer.abspath), module)
        if key not in self._module_cache:
            self._module_cache[key] = self._find_module(importer, module)
        return self._module_cache[key]

    def _find_module(self, importer: FileFacts, module: str) -> Optional[FileFacts]:
        level = len(module) - len(module.lstrip("."))
        parts = [p for p in module.lstrip(".").split(".") if p]
        if level:
            base = os.path.dirname(importer.abspath)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            bases = [base]
        else:
            bases = [os.path.dirname(importer.abspath), *self._package_roots(importer), *self.roots]
        for base in bases:
            stem = os.path.join(base, *parts)
            for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
                found = self.files.get(candidate)
                if found is not None:
                    return found
        return None

    def _package_roots(self, importer: FileFacts) -> list:
        # The folder above the outermost package containing the importer.
        start = os.path.dirname(importer.abspath)
        if start not in self._package_root_cache:
            folder = start
            while os.path.isfile(os.path.join(folder, "__init__.py")):
                folder = os.path.dirname(folder)
            self._package_root_cache[start] = [folder]
        return self._package_root_cache[start]

    # -- names -------------------------------------------------------------------------------
    def local_target(self, file: FileFacts, callee: str, scope: str, types: dict):
        """What a call refers to among scanned code: (file, FunctionDef|ClassDef) or None."""
        head, _, rest = callee.partition(".")
        # Nested and module-level definitions in this file.
        if not rest:
            for name in (f"{scope}.{head}", head):
                found = file.functions.get(name) or file.classes.get(name)
                if found is not None:
                    return file, found
        if head == "self" and rest and "." not in rest:
            owner = self._owner_class(file, scope)
            if owner:
                return self._method(file, owner, rest)
        if head in types and rest and "." not in rest:
            cls_file, cls = types[head]
            return self._method(cls_file, cls.qualname, rest)
        return self._imported(file, head, rest)

    def _owner_class(self, file: FileFacts, scope: str) -> Optional[str]:
        function = file.functions.get(scope)
        return function.owner if function else None

    def _method(self, file: FileFacts, cls: str, name: str):
        found = file.functions.get(f"{cls}.{name}")
        if found is not None:
            return file, found
        for base_file, base in self.local_bases(file, file.classes.get(cls)):
            found = base_file.functions.get(f"{base.qualname}.{name}")
            if found is not None:
                return base_file, found
        return None

    def _imported(self, file: FileFacts, head: str, rest: str, hops: int = 0):
        """Follow `head.rest` through the file's imports into a scanned module."""
        if hops > 3:
            return None
        for imp in file.imports:
            if imp.bound != head or imp.name == "*":
                continue
            if imp.name is None:
                aliased = imp.bound != imp.module.split(".")[0]
                base = imp.module if aliased else head
            else:
                base = f"{imp.module}.{imp.name}" if imp.module.strip(".") else imp.module + imp.name
            found = self._lookup_path(file, base + ("." + rest if rest else ""), hops)
            if found is not None:
                return found
        return None

    def _lookup_path(self, file: FileFacts, dotted: str, hops: int):
        """Split `pkg.mod.func` at the longest prefix that is a scanned module."""
        level = len(dotted) - len(dotted.lstrip("."))
        parts = dotted[level:].split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module_file = self.module_file(file, "." * level + ".".join(parts[:cut]))
            if module_file is None:
                continue
            member = parts[cut:]
            qualname = ".".join(member)
            found = module_file.functions.get(qualname) or module_file.classes.get(qualname)
            if found is not None:
                return module_file, found
            # Re-exported from elsewhere (`from .seeding import seed_all` in a package __init__).
            return self._imported(module_file, member[0], ".".join(member[1:]), hops + 1)
        return None

    def local_bases(self, file: FileFacts, cls: Optional[ClassDef]):
        """Local classes `cls` derives from, transitively."""
        out, todo, seen = [], [(file, cls)], set()
        while todo:
            current_file, current = todo.pop()
            if current is None or (current_file.abspath, current.qualname) in seen:
                continue
            seen.add((current_file.abspath, current.qualname))
            for base in current.bases:
                target = self.local_target(current_file, base.dotted or "", MODULE_SCOPE, {}) if base.dotted else None
                if target and isinstance(target[1], ClassDef):
                    out.append(target)
                    todo.append(target)
        return out

    def class_names(self, file: FileFacts, cls: ClassDef) -> frozenset:
        """Qualified names of every base (library classes) of a local class, transitively."""
        key = (file.abspath, cls.qualname)
        cached = self._classes_cache.get(key)
        if cached is None:
            names = set()
            for owner_file, owner in [(file, cls), *self.local_bases(file, cls)]:
                for base in owner.bases:
                    names |= base.names
            cached = self._classes_cache[key] = frozenset(names)
        return cached

    # -- programs ----------------------------------------------------------------------------
    def entry_candidates(self) -> list:
        return [f for f in self.files.values() if f.main_guard is not None or _module_trains(f)]

    def program(self, entry: FileFacts) -> Program:
        builder = _FlowBuilder(self)
        builder.run_module(entry, depth=0)
        launches = [
            (shell, launch)
            for shell in self.shells.values()
            for launch in shell.script.launches
            if self._launches_file(shell, launch.script, entry)
        ]
        return Program(entry, builder.flow, builder.files, launches, builder.functions)

    def programs(self) -> list:
        out = []
        for entry in sorted(self.entry_candidates(), key=lambda f: f.path):
            program = self.program(entry)
            if any(is_training_marker(step.fact) for step in program.flow):
                out.append(program)
        return out

    def _launches_file(self, shell: ShellFacts, script: Optional[str], entry: FileFacts) -> bool:
        return self.launch_target(shell, script) is entry

    def launch_target(self, shell: ShellFacts, script: Optional[str]) -> Optional[FileFacts]:
        """The scanned file a launch line runs: next to the launch script, under a scan root, or
        the only scanned file whose path ends with it (scripts often `cd` to the repo root)."""
        if not script or not script.endswith(".py"):
            return None
        script = script.replace("\\", "/")
        for base in (os.path.dirname(shell.abspath), *self.roots):
            found = self.files.get(os.path.normpath(os.path.join(base, script)))
            if found is not None:
                return found
        tail = "/" + script.lstrip("./")
        matches = [f for path, f in self.files.items() if path.replace("\\", "/").endswith(tail)]
        return matches[0] if len(matches) == 1 else None


def _module_trains(file: FileFacts) -> bool:
    return any(c.scope == MODULE_SCOPE and is_training_marker(c) for c in file.calls)


class _FlowBuilder:
    """Flattens what an entry script runs into one ordered list of Steps."""

    def __init__(self, project: Project):
        self.project = project
        self.flow: list = []
        self.files: list = []
        self.functions: set = set()
        self._modules_run: set = set()

    def run_module(self, file: FileFacts, depth: int) -> None:
        if file.abspath in self._modules_run:
            return
        self._modules_run.add(file.abspath)
        self.files.append(file)
        # Local modules the file imports run their top level first.
        for imp in file.imports:
            if imp.scope != MODULE_SCOPE or imp.module == "":
                continue
            for module in (imp.module, f"{imp.module}.{imp.name}" if imp.name and imp.name != "*" else None):
                target = self.project.module_file(file, module) if module else None
                if target is not None and depth < _MAX_DEPTH:
                    self.run_module(target, depth + 1)
        self.run_scope(file, MODULE_SCOPE, depth)

    def run_scope(self, file: FileFacts, scope: str, depth: int) -> None:
        types: dict = {}
        imported = depth > 0 and scope == MODULE_SCOPE
        for fact in _scope_facts(file, scope):
            if imported and fact.in_main:
                continue  # an imported module's `if __name__ == "__main__":` block does not run
            self.flow.append(Step(file, fact, depth, len(self.flow)))
            if not isinstance(fact, Call) or depth >= _MAX_DEPTH:
                continue
            target = self.project.local_target(file, fact.callee, scope, types)
            if target is None:
                continue
            target_file, definition = target
            if isinstance(definition, ClassDef):
                if fact.assigned_to:
                    types[fact.assigned_to] = (target_file, definition)
                init = self.project._method(target_file, definition.qualname, "__init__")
                if init is not None:
                    self._enter(init[0], init[1], depth + 1)
            else:
                self._enter(target_file, definition, depth + 1)

    def _enter(self, file: FileFacts, function: FunctionDef, depth: int) -> None:
        key = (file.abspath, function.qualname)
        if key in self.functions:
            return  # first execution is what matters for order; also guards recursion
        self.functions.add(key)
        if file not in self.files:
            self.files.append(file)
        self.run_scope(file, function.qualname, depth)


def _scope_facts(file: FileFacts, scope: str) -> list:
    index = getattr(file, "_by_scope", None)
    if index is None:
        index = {}
        for group in (file.calls, file.assignments, file.env_writes):
            for fact in group:
                index.setdefault(fact.scope, []).append(fact)
        for facts in index.values():
            facts.sort(key=lambda f: f.order)
        file._by_scope = index
    return index.get(scope, [])
