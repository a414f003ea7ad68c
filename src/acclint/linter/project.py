"""Project-level facts: local modules, entry points, what an entry point reaches, and in what order.

A seed is a property of the program, not of one line: this module follows an entry script
through the local functions, classes and modules it calls, and flattens what runs into one
ordered flow that rules read.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterator, Optional

from acclint.knowledge import table
from acclint.linter.config_values import ConfigFiles
from acclint.linter.documented import Documentation
from acclint.linter.facts import MODULE_SCOPE, Call, ClassDef, FileFacts, FunctionDef, Reference
from acclint.linter.models import builds_weights

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
    # Run while a local module is imported (its top level, and what that calls): set-up, which seeds and
    # configures like any other step; deep in an import chain it is not where the program trains (_own_step).
    importing: bool = False
    # Run by a function or class handed over as a value (a dispatch dict, `mp.spawn(worker)`, a class
    # in a registry): it runs, but when is up to the receiver, so it orders nothing (`_follow_reference`).
    deferred: bool = False


@dataclass
class Program:
    entry: FileFacts
    flow: list  # Steps in execution order
    files: list  # FileFacts reached (entry first)
    launches: list  # (ShellFacts, LaunchCommand) that run this entry
    reached_functions: set  # (abspath, qualname) reached from the entry
    _files_by_fact: Optional[dict] = field(default=None, repr=False, compare=False)

    def file_of(self, fact) -> Optional[FileFacts]:
        """The file a fact of the flow is written in."""
        if self._files_by_fact is None:
            self._files_by_fact = {id(step.fact): step.file for step in self.flow}
        return self._files_by_fact.get(id(fact))

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


@lru_cache(maxsize=4096)
def outermost_package(folder: str) -> Optional[str]:
    """The outermost package folder containing `folder` (__init__.py followed up), or None."""
    if not folder or not os.path.isfile(os.path.join(folder, "__init__.py")):
        return None
    parent = os.path.dirname(folder)
    return (outermost_package(parent) if parent != folder else None) or folder


def _training_table() -> dict:
    return table("training")


def training_role(fact) -> Optional[str]:
    """What a fact contributes to training: "step" (an optimizer step or a training loop),
    "gradient", "optimizer", or None. A program trains with a step, or gradients and an optimizer."""
    if not isinstance(fact, Call):
        return None
    markers = _training_table()
    names = fact.names
    if names & frozenset(markers["loops"]):
        return "step"
    method = fact.method
    receiver = fact.callee.rsplit(".", 1)[0].lower() if "." in fact.callee else ""
    if receiver:
        for step in markers["steps"]:
            if step["method"] == method and len(fact.args) >= step["min_args"] \
                    and any(hint in receiver for hint in step["receivers"]) \
                    and not any(hint in receiver for hint in step.get("unless", ())):
                return "step"
    gradients = markers["gradients"]
    if names & frozenset(gradients["calls"]) or method in gradients["methods"]:
        return "gradient"
    optimizers = markers["optimizers"]
    if any(name.startswith(prefix) for name in names for prefix in optimizers["prefixes"]) \
            or method in optimizers["callees"]:
        return "optimizer"
    return None


def trains(facts, builds_model=None, runs_loop=None) -> bool:
    """Whether these facts (a program's flow, or a file's top level) make a training program:
    a step or a loop (or a local class deriving from one, which `runs_loop` sees); or gradients with
    an optimizer, or with a model that `builds_model` sees in a program that does not time itself."""
    seen, candidates, timed = set(), [], False
    timers, timer_methods = _timers()
    for fact in facts:
        timed = timed or (isinstance(fact, Call) and (bool(fact.names & timers) or fact.method in timer_methods))
        role = training_role(fact)
        if role is None and runs_loop is not None and isinstance(fact, Call) and runs_loop(fact):
            role = "step"
        if role == "step":
            return True
        if role is not None:
            seen.add(role)
            if len(seen) == 2:
                return True
        elif builds_model is not None and isinstance(fact, Call):
            candidates.append(fact)
    return ("gradient" in seen and not timed and builds_model is not None
            and any(builds_model(c) for c in candidates))


@lru_cache(maxsize=1)
def _timers() -> tuple:
    """(qualified names, method names) of the calls that time a region (training.toml [models])."""
    models = _training_table()["models"]
    return frozenset(models["timers"]), frozenset(models["timer_methods"])


def _is_layer(call: Call) -> bool:
    if builds_weights(call.names):
        return True
    packages = _training_table()["models"]["layer_packages"]
    for name in call.names:
        package, _, member = name.rpartition(".")
        if package in packages and member[:1].isupper():
            return True
    return False


def is_training_marker(fact) -> bool:
    """A fact that shows where a program trains (an optimizer step, a loop, a gradient)."""
    return training_role(fact) in ("step", "gradient")


def is_pytest_file(file: FileFacts) -> bool:
    """A file pytest collects: its test functions are not part of any training program."""
    conventions = _training_table()["pytest"]
    name = os.path.basename(file.abspath)
    if any(fnmatch.fnmatch(name, pattern) for pattern in conventions["files"]):
        return True
    folders = set(os.path.dirname(file.abspath).replace("\\", "/").split("/"))
    return bool(folders & set(conventions["folders"])) and any(
        f.owner is None and f.qualname.startswith(conventions["function_prefix"]) for f in file.functions.values())


def _is_test_function(function: FunctionDef) -> bool:
    conventions = _training_table()["pytest"]
    if function.qualname.rsplit(".", 1)[-1].startswith(conventions["function_prefix"]):
        return True
    return function.owner is not None and function.owner.rsplit(".", 1)[-1].startswith(conventions["class_prefix"])


# A folder holding one of these is a project root: Python code there is importable as installed
# (`pip install -e .`), and a `src/` below it holds the packages of a src layout.
_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def import_targets(imp) -> list:
    """The module names an import statement may load: `from a import b` may load `a` or `a.b`."""
    if imp.module == "":
        return []
    if not imp.name or imp.name == "*":
        return [imp.module]
    member = f"{imp.module}.{imp.name}" if imp.module.strip(".") else imp.module + imp.name
    return [imp.module, member]


class Project:
    """The files of a scan and what they say together.

    `loader`, when given, reads a local module that the scan was not given (a file read for
    context): resolution asks it for files on disk, exactly where Python would look.
    """

    def __init__(self, files: list, shells: list, roots: list, loader=None):
        self.files = {f.abspath: f for f in files}
        self.shells = {s.abspath: s for s in shells}
        # The folders the scan was given. Nothing is resolved through them (imports, launched
        # scripts): a file's findings must not depend on what else was given.
        self.roots = [os.path.abspath(r) for r in roots]
        self.loader = loader
        self._classes_cache: dict = {}
        self._module_cache: dict = {}
        self._project_root_cache: dict = {}
        self._flow_cache: dict = {}  # entry abspath -> (flow, files, functions)
        self._trains_cache: dict = {}  # entry abspath -> whether it trains
        self._constructed_cache: dict = {}  # (abspath, call node) -> constructed_class_names
        self._documentation = Documentation()
        self._documented_cache: dict = {}  # entry abspath -> [DocumentedLaunch]
        # The run's configuration (linter.runconfig): config files read once, the project's config files
        # listed once per root, and the resolved configuration per (entry, launches).
        self.config_files = ConfigFiles()
        self.config_index: dict = {}
        self.run_configs: dict = {}
        # What rules derive from a program once every program is known (linter.proof: a premise proven
        # from the programs running a line), computed once per (key, program) however many findings ask.
        self._derived: dict = {}

    def derived(self, key: str, program, compute):
        """`compute(program)`, once per scan for this key and program."""
        slot = (key, program.entry.abspath)
        if slot not in self._derived:
            self._derived[slot] = compute(program)
        return self._derived[slot]

    def add(self, files: list = (), shells: list = ()) -> None:
        for file in files:
            self.files[file.abspath] = file
        for shell in shells:
            self.shells[shell.abspath] = shell
        self._module_cache.clear()
        self._classes_cache.clear()
        self._constructed_cache.clear()
        self._flow_cache.clear()  # a file added may be a module a flow reaches
        self.run_configs.clear()
        self._trains_cache.clear()

    # -- modules -----------------------------------------------------------------------------
    def module_file(self, importer: FileFacts, module: str) -> Optional[FileFacts]:
        """The file a module name refers to, resolved as Python would for a script."""
        key = (os.path.dirname(importer.abspath), module)
        if key not in self._module_cache:
            path = self.module_path(importer, module)
            found = self.files.get(path) if path else None
            if found is None and path is not None:
                found = self.loader.load(path)
                if found is None:  # unreadable after all: look further, as Python would
                    return self.module_file(importer, module)
                self.files[path] = found
            self._module_cache[key] = found
        return self._module_cache[key]

    def module_path(self, importer: FileFacts, module: str) -> Optional[str]:
        """The first candidate that is a file of the scan or, with a loader, a readable file on disk."""
        for candidate in self._candidates(importer, module):
            if candidate in self.files or (self.loader is not None and self.loader.available(candidate)):
                return candidate
        return None

    def missing_modules(self, files) -> list:
        """Paths on disk of local modules that `files` import and the project does not hold yet."""
        out = {}
        for file in files:
            for imp in file.imports:
                for module in import_targets(imp):
                    path = self.module_path(file, module)
                    if path is not None and path not in self.files:
                        out[path] = None
        return list(out)

    def _candidates(self, importer: FileFacts, module: str):
        level = len(module) - len(module.lstrip("."))
        parts = [p for p in module.lstrip(".").split(".") if p]
        if level:
            base = os.path.dirname(importer.abspath)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            bases = [base]
        else:
            bases = dict.fromkeys([os.path.dirname(importer.abspath), *self._package_roots(importer),
                                   *self._project_roots(importer)])
        for base in bases:
            stem = os.path.join(base, *parts)
            yield stem + ".py"
            yield os.path.join(stem, "__init__.py")

    def _package_roots(self, importer: FileFacts) -> list:
        # The folder above the outermost package containing the importer.
        start = os.path.dirname(importer.abspath)
        top = outermost_package(start)
        return [os.path.dirname(top) if top else start]

    def _project_roots(self, importer: FileFacts) -> list:
        """The nearest enclosing project root and its `src/` (an installed project imports from there)."""
        return self._project_roots_of(os.path.dirname(importer.abspath))

    def project_root(self, folder: str) -> str:
        """The nearest enclosing project root of `folder`, or `folder` itself when none is marked."""
        return (self._project_roots_of(folder) or [folder])[0]

    def _project_roots_of(self, start: str) -> list:
        if start not in self._project_root_cache:
            self._project_root_cache[start] = self._find_project_root(start)
        return self._project_root_cache[start]

    def _find_project_root(self, folder: str) -> list:
        parent = os.path.dirname(folder)
        if any(os.path.exists(os.path.join(folder, marker)) for marker in _PROJECT_MARKERS):
            src = os.path.join(folder, "src")
            return [folder, src] if os.path.isdir(src) else [folder]
        if parent == folder:
            return []
        if parent not in self._project_root_cache:
            self._project_root_cache[parent] = self._find_project_root(parent)
        return self._project_root_cache[parent]

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
        if head == "super()" and rest and "." not in rest:
            owner = self._owner_class(file, scope)
            if owner:
                return self._base_method(file, owner, rest)
        if head in types and rest and "." not in rest:
            cls_file, cls = types[head]
            return self._method(cls_file, cls.qualname, rest)
        return self._imported(file, head, rest)

    def _owner_class(self, file: FileFacts, scope: str) -> Optional[str]:
        function = file.functions.get(scope)
        return function.owner if function else None

    def _base_method(self, file: FileFacts, cls: str, name: str):
        """`super().name` inside `cls`: the first local base that defines it."""
        for base_file, base in self.local_bases(file, file.classes.get(cls)):
            found = base_file.functions.get(f"{base.qualname}.{name}")
            if found is not None:
                return base_file, found
        return None

    def _method(self, file: FileFacts, cls: str, name: str):
        found = file.functions.get(f"{cls}.{name}")
        if found is not None:
            return file, found
        return self._base_method(file, cls, name)

    def _imported(self, file: FileFacts, head: str, rest: str, hops: int = 0, find=None):
        """Follow `head.rest` through the file's imports into a scanned module: the definition there
        (`find(module_file, qualname)`, by default its function or class)."""
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
            found = self._lookup_path(file, base + ("." + rest if rest else ""), hops, find or _definition)
            if found is not None:
                return found
        return self._star_imported(file, head, rest, hops, find or _definition)

    def _star_imported(self, file: FileFacts, head: str, rest: str, hops: int, find):
        """`from utils import *` of a scanned module binds its functions, classes and re-exports by name."""
        if head in file.functions or head in file.classes:
            return None  # a definition of this file shadows what a star import binds
        for imp in file.imports:
            if imp.name != "*":
                continue
            module_file = self.module_file(file, imp.module)
            if module_file is not None and module_file is not file:
                found = self._member(module_file, head, rest, hops + 1, find)
                if found is not None:
                    return found
        return None

    def _member(self, module_file: FileFacts, head: str, rest: str, hops: int, find):
        """`head.rest` defined in `module_file`, or imported there from another scanned module."""
        found = find(module_file, head + ("." + rest if rest else ""))
        if found is not None:
            return module_file, found
        return self._imported(module_file, head, rest, hops, find)

    def _lookup_path(self, file: FileFacts, dotted: str, hops: int, find):
        """Split `pkg.mod.func` at the longest prefix that is a scanned module."""
        level = len(dotted) - len(dotted.lstrip("."))
        parts = dotted[level:].split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module_file = self.module_file(file, "." * level + ".".join(parts[:cut]))
            if module_file is None:
                continue
            member = parts[cut:]
            found = find(module_file, ".".join(member))
            if found is not None:
                return module_file, found
            # Re-exported from elsewhere (`from .seeding import seed_all` in a package __init__).
            return self._imported(module_file, member[0], ".".join(member[1:]), hops + 1, find)
        return None

    def imported_value(self, file: FileFacts, dotted: str):
        """(module file, NameAssignment) of the module-level `NAME = ...` that `dotted` names through the file's
        imports (`from .config import NORM` -> `NORM = partial(nn.LayerNorm, ...)` in config.py), or None."""
        head, _, rest = dotted.partition(".")
        return self._imported(file, head, rest, find=_module_assignment)

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
        return [f for f in self.files.values() if is_entry_candidate(f)]

    def launch_candidates(self, shell: ShellFacts, script: Optional[str]) -> list:
        """Where on disk the Python script a launch line runs may be: beside the launch script, else
        in a folder above it up to its project root (recipes are run from the repository root:
        `bash examples/llama/pretrain.sh` starting `pretrain_gpt.py`). Never the scan's roots or
        the other files given: a launch script is judged the same whatever else was scanned."""
        if not script or not script.endswith(".py"):
            return []
        script = _own_folder.sub(".", script.replace("\\", "/"))
        if os.path.isabs(script):
            return [os.path.normpath(script)]
        return [os.path.normpath(os.path.join(folder, script)) for folder in self.launch_folders(shell.abspath)]

    def launch_folders(self, abspath: str) -> list:
        folder = os.path.dirname(abspath)
        top = (self._project_roots_of(folder) or [folder])[0]
        folders = [folder]
        if os.path.basename(folder) in _training_table()["launches"]["script_folders"]:
            # A zoo's launch script runs its model folder's scripts (`cd ..`, or copies them beside a run folder).
            folders.append(os.path.dirname(folder))
        while folder != top and os.path.dirname(folder) != folder and folder.startswith(top):
            folder = os.path.dirname(folder)
            folders.append(folder)
        return folders

    def documented_launches(self, entry: FileFacts) -> list:
        """The commands the project's Markdown shows for running `entry` (linter.documented), read
        on demand: only a program with no launch script beside it asks how it is started."""
        if entry.abspath not in self._documented_cache:
            folder = os.path.dirname(entry.abspath)
            top = (self._project_roots_of(folder) or [folder])[0]
            self._documented_cache[entry.abspath] = self._documentation.launches(entry.abspath, top,
                                                                                 self.launch_folders)
        return self._documented_cache[entry.abspath]

    def launch_target(self, shell: ShellFacts, script: Optional[str]) -> Optional[FileFacts]:
        """The Python file a launch line runs, read from disk (as context) when the scan was not
        given it; None when it is not on disk (or not a `*.py` script)."""
        for candidate in self.launch_candidates(shell, script):
            found = self.files.get(candidate)
            if found is None and self.loader is not None and self.loader.available(candidate):
                found = self.loader.load(candidate)
                if found is not None:  # as module_file does: flows built so far did not need it
                    self.files[candidate] = found
            if found is not None:
                return found
        return None

    def program(self, entry: FileFacts) -> Program:
        """The program `entry` starts, with the launches that run it from launch scripts beside it:
        those, and only those, are what a scan of the entry alone reads too (docs/formats.md, "Files
        given and context"). Launch scripts elsewhere are judged by their own runs (`runs`)."""
        flow, files, functions = self._flow(entry)
        folders = launch_script_folders(entry.abspath)
        launches = [
            (shell, launch)
            for shell in self.shells.values()
            if os.path.dirname(shell.abspath) in folders
            for launch in shell.script.launches
            if self.launch_target(shell, launch.script) is entry
        ]
        return Program(entry, flow, files, launches, functions)

    def programs(self) -> list:
        """The training programs whose entry scripts the project holds."""
        entries = sorted(self.entry_candidates(), key=lambda f: f.path)
        return [self.program(entry) for entry in entries if self.is_training(entry)]

    def runs(self, shells) -> list:
        """One program per launch line of `shells` that starts a training program: the launched
        script's flow with that launch alone. A launch script's findings come from its own runs,
        so they depend on the script it launches (found on disk) and not on what else was given;
        a launch of an inference, evaluation, conversion or data-preparation script starts no
        training run and is not judged as one."""
        out = []
        for shell in shells:
            for launch in shell.script.launches:
                entry = self.launch_target(shell, launch.script)
                if entry is not None and self.is_training(entry):
                    flow, files, functions = self._flow(entry)
                    out.append(Program(entry, flow, files, [(shell, launch)], functions))
        return out

    def is_training(self, entry: FileFacts) -> bool:
        """Whether running `entry` as a script trains (training.toml's definition)."""
        known = self._trains_cache.get(entry.abspath)
        if known is None:
            flow, files, functions = self._flow(entry)
            program = Program(entry, flow, files, [], functions)
            known = self._trains_cache[entry.abspath] = trains(
                (step.fact for step in flow if _own_step(step)), lambda call: self._builds_model(program, call),
                lambda call: self.runs_loop(program, call))
        return known

    def _flow(self, entry: FileFacts) -> tuple:
        """(flow, files, functions reached) of what `entry` runs, built once per entry."""
        built = self._flow_cache.get(entry.abspath)
        if built is None:
            builder = _FlowBuilder(self)
            builder.run_module(entry, depth=0)
            built = self._flow_cache[entry.abspath] = (builder.flow, builder.files, builder.functions)
        return built

    def _builds_model(self, program: Program, call: Call) -> bool:
        if _is_layer(call):
            return True
        return bool(self._local_class_bases(program, call) & frozenset(_training_table()["models"]["bases"]))

    def runs_loop(self, program: Program, call: Call) -> bool:
        """`MyTrainStep(net, opt)` where `MyTrainStep` subclasses a one-step training cell, called by hand."""
        if not call.method[:1].isupper():
            return False  # constructing a class, by convention
        return bool(self._local_class_bases(program, call) & frozenset(_training_table()["loops"]))

    def _local_class_bases(self, program: Program, call: Call) -> frozenset:
        file = program.file_of(call)
        return self.constructed_class_names(file, call) if file is not None else frozenset()

    def constructed_class_names(self, file: FileFacts, call: Call) -> frozenset:
        """Qualified names of the local class that `call` (written in `file`) constructs and of its
        bases, transitively; empty when it constructs no local class. Several facts of a program ask
        about the same call (model constructions, seeding trainers, training loops): resolved once."""
        key = (file.abspath, call.node)
        if key not in self._constructed_cache:
            target = self.local_target(file, call.callee, call.scope, {})
            self._constructed_cache[key] = (self.class_names(*target) if target is not None
                                            and isinstance(target[1], ClassDef) else frozenset())
        return self._constructed_cache[key]


def _definition(module_file: FileFacts, qualname: str):
    return module_file.functions.get(qualname) or module_file.classes.get(qualname)


def _module_assignment(module_file: FileFacts, name: str):
    """The last module-level assignment of `name` in the module, or None."""
    found = [a for a in module_file.name_assignments if a.scope == MODULE_SCOPE and a.name == name]
    return found[-1] if found else None


# `$(cd "$(dirname "$0")"; pwd)`, `$(dirname $(readlink -f $0))`, `$(dirname "${BASH_SOURCE[0]}")`: the launch
# script's own folder, written as a command at the start of the script path it runs.
_own_folder = re.compile(r"^\$\((?=[^\n]*(?:dirname|pwd))(?=[^\n]*(?:\$0|\$\{0\}|BASH_SOURCE))[^\n]*?\)(?=/)")


def launch_script_folders(entry_abspath: str) -> tuple:
    """Where the launch scripts of an entry script are: beside it, and in the script folders of a model zoo's
    layout beside it (training.toml [launches])."""
    folder = os.path.dirname(entry_abspath)
    return (folder, *(os.path.join(folder, name) for name in _training_table()["launches"]["script_folders"]))


def launch_trains(launch) -> bool:
    """Whether a launch line whose script is not on disk shows it trains (training.toml
    [launches]): a training word in the script's name or a flag only training reads, and no word
    of another role (inference, evaluation, conversion, data preparation, tests). Without such
    signs acclint cannot tell what it runs, and says nothing."""
    signs = _training_table()["launches"]
    words = set(re.split(r"[^a-z0-9]+", os.path.basename((launch.script or "").lower()).removesuffix(".py")))
    if words & set(signs["other_roles"]):
        return False
    return bool(words & set(signs["training_words"])) or bool(set(launch.flags()) & set(signs["training_flags"]))


def _own_step(step: Step) -> bool:
    """A step of the program's own: run by the entry script's code, or by the top level of a module the
    entry imports itself (its set-up: `grad_fn = GradOperation(...)` in a helper it uses). What runs
    deeper in an import chain is library set-up (an autograd re-implementation building gradient
    functions), which does not make an inference app train."""
    return not step.importing or step.depth <= 1


def is_entry_candidate(file: FileFacts) -> bool:
    """A script that may start a program: a __main__ block, or training at its top level."""
    return file.main_guard is not None or _module_trains(file)


def _module_trains(file: FileFacts) -> bool:
    return trains((c for c in file.calls if c.scope == MODULE_SCOPE), _is_layer)


class _FlowBuilder:
    """Flattens what an entry script runs into one ordered list of Steps."""

    def __init__(self, project: Project):
        self.project = project
        self.flow: list = []
        self.files: list = []
        self.functions: set = set()
        self._modules_run: set = set()
        self._pytest: dict = {}  # abspath -> whether pytest collects the file
        self._importing = 0  # > 0 while a local module's import runs
        self._deferred = 0  # > 0 while a function handed over as a value is followed

    def run_module(self, file: FileFacts, depth: int) -> None:
        if file.abspath in self._modules_run:
            return
        self._modules_run.add(file.abspath)
        self.files.append(file)
        # Local modules the file imports run their top level first.
        for imp in file.imports:
            if imp.scope != MODULE_SCOPE:
                continue
            for module in import_targets(imp):
                target = self.project.module_file(file, module)
                if target is not None and depth < _MAX_DEPTH:
                    self.run_module(target, depth + 1)
        # An imported module runs its top level but not its `if __name__ == "__main__":` block.
        imported = depth > 0
        self._importing += imported
        try:
            self.run_scope(file, MODULE_SCOPE, depth, imported=imported)
        finally:
            self._importing -= imported

    def run_scope(self, file: FileFacts, scope: str, depth: int, imported: bool = False) -> None:
        types: dict = {}
        for fact in _scope_facts(file, scope):
            if imported and fact.in_main:
                continue  # an imported module's `if __name__ == "__main__":` block does not run
            if type(fact) is Reference:
                if depth < _MAX_DEPTH:
                    self._follow_reference(file, fact, scope, types, depth)
                continue
            self.flow.append(Step(file, fact, depth, len(self.flow), self._importing > 0, self._deferred > 0))
            if not isinstance(fact, Call) or depth >= _MAX_DEPTH:
                continue
            target = self.project.local_target(file, fact.callee, scope, types)
            if target is None:
                self._follow_apply(file, fact, scope, types, depth)
                continue
            target_file, definition = target
            if isinstance(definition, ClassDef):
                if fact.assigned_to:
                    types[fact.assigned_to] = (target_file, definition)
                init = self.project._method(target_file, definition.qualname, "__init__")
                if init is not None:
                    self._enter(init[0], init[1], depth + 1)
                self._enter_methods(target_file, definition, _training_table()["models"]["called_methods"], depth)
            else:
                self._enter(target_file, definition, depth + 1)

    def _enter_methods(self, file: FileFacts, cls: ClassDef, names, depth: int) -> None:
        """Methods the framework calls on an object the program built (training.toml [models]): they
        run when the program calls the object, which is up to it, so they order nothing (deferred)."""
        self._deferred += 1
        try:
            for name in names:
                found = self.project._method(file, cls.qualname, name)
                if found is not None:
                    self._enter(found[0], found[1], depth + 1)
        finally:
            self._deferred -= 1

    def _follow_apply(self, file: FileFacts, call: Call, scope: str, types: dict, depth: int) -> None:
        """`Fn.apply(x)` of a local autograd Function runs its forward (and backward)."""
        if call.method != "apply" or "." not in call.callee:
            return
        target = self.project.local_target(file, call.callee.rsplit(".", 1)[0], scope, types)
        if target is not None and isinstance(target[1], ClassDef):
            self._enter_methods(target[0], target[1], _training_table()["models"]["applied_methods"], depth)

    def _follow_reference(self, file: FileFacts, reference: Reference, scope: str, types: dict, depth: int) -> None:
        """A function or class handed over as a value (a dispatch dict, `mp.spawn(main_worker)`,
        `partial(f)`, a class passed to a trainer) is taken as called where it is handed over: whoever
        receives it is there to call it. Over-approximating keeps "never calls" claims honest."""
        target = self.project.local_target(file, reference.name, scope, types)
        if target is None:
            return
        target_file, definition = target
        if isinstance(definition, ClassDef):
            target = self.project._method(target_file, definition.qualname, "__init__")
            if target is None:
                return
            target_file, definition = target
        self._deferred += 1
        try:
            self._enter(target_file, definition, depth + 1)
        finally:
            self._deferred -= 1

    def _enter(self, file: FileFacts, function: FunctionDef, depth: int) -> None:
        key = (file.abspath, function.qualname)
        if key in self.functions:
            return  # first execution is what matters for order; also guards recursion
        if _is_test_function(function) and self._is_pytest(file):
            return  # run by pytest, not by this program
        self.functions.add(key)
        if file not in self.files:
            self.files.append(file)
        self.run_scope(file, function.qualname, depth)


    def _is_pytest(self, file: FileFacts) -> bool:
        known = self._pytest.get(file.abspath)
        if known is None:
            known = self._pytest[file.abspath] = is_pytest_file(file)
        return known


def _scope_facts(file: FileFacts, scope: str) -> list:
    index = getattr(file, "_by_scope", None)
    if index is None:
        index = {}
        for group in (file.calls, file.assignments, file.env_writes, file.references):
            for fact in group:
                index.setdefault(fact.scope, []).append(fact)
        for facts in index.values():
            facts.sort(key=lambda f: f.order)
        file._by_scope = index
    return index.get(scope, [])
