#!/usr/bin/env python3
"""Regenerate src/acclint/knowledge/library_behaviour.toml from an installed MindSpore's own source.

Some findings depend on what a library call already does for the user:

- `seeders`: a seeding function that calls other seeding functions seeds what they seed too.
  MindSpore's `set_seed` calls `numpy.random.seed` and `mindspore.dataset.config.set_seed`, which
  calls `random.seed`: a MindSpore program seeded with `mindspore.set_seed` has Python's `random`
  seeded (ACL101 must not ask for `random.seed`).
- `sorted_inputs`: a dataset class whose constructor sorts the file list it is given
  (`self.dataset_files.sort()` in TFRecordDataset and CSVDataset): a listing in file-system order
  handed to it reaches the reader sorted (ACL211 does not report it).
- `sets_train_mode`: a public function or class whose body switches a network to training mode
  (`.set_train()`: `amp.build_train_network`, `nn.WithGradCell`): a program that builds its training
  cell with one has called set_train() (ACL710).

The source is read statically (nothing is imported): the package is located with
`importlib.util.find_spec`, its version read from `mindspore/version.py`. Usage, from the repository root:

    python tools/gen_library_behaviour.py                 # the installed MindSpore
    python tools/gen_library_behaviour.py --root /path/to/site-packages/mindspore
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KNOWLEDGE = Path(__file__).resolve().parents[1] / "src" / "acclint" / "knowledge"
TABLE = KNOWLEDGE / "library_behaviour.toml"

# Seeding functions whose bodies are read: public name -> (file in the package, function name).
SEEDING_FUNCTIONS = {
    "mindspore.set_seed": ("common/seed.py", "set_seed"),
    "mindspore.dataset.config.set_seed": ("dataset/core/config.py", "set_seed"),
}
# Where the dataset classes are defined, and the public module that re-exports them
# (`mindspore/dataset/__init__.py`: `from .engine import *`).
DATASET_MODULES = ("dataset/engine/datasets_standard_format.py", "dataset/engine/datasets_text.py",
                   "dataset/engine/datasets_vision.py", "dataset/engine/datasets_audio.py",
                   "dataset/engine/datasets_user_defined.py")
DATASET_PUBLIC = ("mindspore.dataset", "mindspore.dataset.engine")
# Modules whose public functions and classes may switch a network to training mode, and the public
# modules re-exporting them (mindspore/nn/__init__.py, mindspore/amp.py, mindspore/train/__init__.py).
TRAIN_MODE_MODULES = {
    "nn/wrap/cell_wrapper.py": ("mindspore.nn", "mindspore.nn.wrap"),
    "nn/wrap/loss_scale.py": ("mindspore.nn", "mindspore.nn.wrap"),
    "nn/wrap/grad_reducer.py": ("mindspore.nn", "mindspore.nn.wrap"),
    "train/amp.py": ("mindspore.amp", "mindspore.train"),
}


def package_root() -> Path:
    spec = importlib.util.find_spec("mindspore")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("MindSpore is not installed; pass --root")
    return Path(next(iter(spec.submodule_search_locations)))


def version_of(root: Path) -> str:
    version = root / "version.py"
    if version.is_file():
        for node in ast.parse(version.read_text("utf-8")).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__version__" for t in node.targets):
                return str(ast.literal_eval(node.value))
    return "unknown"


def _module_name(relative: str) -> str:
    return "mindspore." + relative.removesuffix(".py").replace("/", ".").removesuffix(".__init__")


def _bindings(body: list, module: str) -> dict:
    """Local name -> qualified name, for the imports among `body` (relative imports resolved against `module`)."""
    found = {}
    for node in body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                found[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = module.split(".")[:-node.level]
                base = ".".join(parent + ([base] if base else []))
            for alias in node.names:
                found[alias.asname or alias.name] = f"{base}.{alias.name}"
    return found


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def _qualified(dotted: str, bindings: dict) -> str:
    head, _, rest = dotted.partition(".")
    base = bindings.get(head, head)
    return f"{base}.{rest}" if rest else base


def _canonical(name: str) -> str:
    """The dataset config module by its public path (`mindspore.dataset.config`), as seeding.toml names it."""
    return name.replace("mindspore.dataset.core.config.", "mindspore.dataset.config.")


def seeder_calls(root: Path, known: set) -> dict:
    """For each function of SEEDING_FUNCTIONS: the seeding functions (known to seeding.toml or read
    here) that its body calls, with the file and line it is defined at."""
    found = {}
    for public, (relative, function) in SEEDING_FUNCTIONS.items():
        path = root / relative
        tree = ast.parse(path.read_text("utf-8"))
        module = _module_name(relative)
        bindings = _bindings(tree.body, module)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == function:
                local = {**bindings, **_bindings([n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))],
                                                 module)}
                calls = []
                for call in ast.walk(node):
                    dotted = _dotted(call.func) if isinstance(call, ast.Call) else None
                    name = _canonical(_qualified(dotted, local)) if dotted else None
                    if name and name != public and (name in known or name in SEEDING_FUNCTIONS) and name not in calls:
                        calls.append(name)
                found[public] = {"calls": calls, "file": f"mindspore/{relative}", "line": node.lineno}
    return found


def sorted_inputs(root: Path) -> dict:
    """Dataset classes whose __init__ sorts an attribute it assigned from a parameter
    (`self.dataset_files = self._find_files(dataset_files)` then `self.dataset_files.sort()`)."""
    found = {}
    for relative in DATASET_MODULES:
        path = root / relative
        if not path.is_file():
            continue
        for cls in ast.parse(path.read_text("utf-8")).body:
            if not isinstance(cls, ast.ClassDef):
                continue
            init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
            parameter = _sorted_parameter(init) if init is not None else None
            if parameter is None:
                continue
            params = [a.arg for a in init.args.args[1:]]
            names = [f"{public}.{cls.name}" for public in DATASET_PUBLIC] + [f"{_module_name(relative)}.{cls.name}"]
            found[names[0]] = {"aliases": names[1:], "parameter": parameter, "position": params.index(parameter),
                               "file": f"mindspore/{relative}", "line": init.lineno}
    return found


def train_mode_setters(root: Path) -> dict:
    """Public functions and classes (through __init__) of TRAIN_MODE_MODULES that call
    `.set_train()` / `.set_train(True)` (not a mode chosen at run time, not False)."""
    found = {}
    for relative, public in TRAIN_MODE_MODULES.items():
        path = root / relative
        if not path.is_file():
            continue
        for node in ast.parse(path.read_text("utf-8")).body:
            if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) or node.name.startswith("_"):
                continue
            body = node
            if isinstance(node, ast.ClassDef):
                body = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
            line = _sets_train(body) if body is not None else None
            if line is None:
                continue
            names = [f"{module}.{node.name}" for module in public] + [f"{_module_name(relative)}.{node.name}"]
            found[names[0]] = {"aliases": names[1:], "file": f"mindspore/{relative}", "line": line}
    return found


def _sets_train(function: ast.FunctionDef):
    """The line of the first `.set_train()` / `.set_train(True)` call in `function`, else None."""
    for node in ast.walk(function):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "set_train"):
            continue
        given = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "mode"), None)
        if given is None or isinstance(given, ast.Constant) and given.value is True:
            return node.lineno
    return None


def _sorted_parameter(init: ast.FunctionDef) -> str | None:
    params = {a.arg for a in init.args.args[1:]}  # not `self`
    assigned = {}  # self attribute -> parameter it was computed from
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = _dotted(node.targets[0]) or ""
            used = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)} & params
            if target.startswith("self.") and len(used) == 1:
                assigned[target] = used.pop()
    for node in ast.walk(init):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "sort":
            parameter = assigned.get(_dotted(node.func.value) or "")
            if parameter is not None:
                return parameter
    return None


def _toml(value) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


def render(version: str, seeders: dict, readers: dict, setters: dict) -> str:
    lines = [
        "# What library calls already do for the user, read from the libraries' own source by",
        "# tools/gen_library_behaviour.py (statically: nothing imported). Do not edit by hand: regenerate.",
        "# `seeders.X.calls`: the seeding functions (knowledge/seeding.toml) that X's body calls; X seeds what they seed.",
        "# `sorted_inputs.X`: a dataset class whose __init__ sorts the file list passed as `parameter`.",
        "# `sets_train_mode.X`: a function or class (its __init__) that calls `.set_train()` on the network.",
        "",
        "[sources.mindspore]",
        f"version = {_toml(version)}",
        "",
    ]
    for name, entry in sorted(seeders.items()):
        lines.append(f'[seeders."{name}"]')
        lines.extend(f"{key} = {_toml(value)}" for key, value in entry.items())
        lines.append("")
    for group, entries in (("sorted_inputs", readers), ("sets_train_mode", setters)):
        for name, entry in sorted(entries.items()):
            lines.append(f'[{group}."{name}"]')
            lines.extend(f"{key} = {_toml(value)}" for key, value in entry.items())
            lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="the mindspore package folder (default: the installed one)")
    parser.add_argument("-o", "--output", type=Path, default=TABLE)
    args = parser.parse_args(argv)
    root = args.root or package_root()
    known = set(tomllib.loads((KNOWLEDGE / "seeding.toml").read_text("utf-8"))["seeders"])
    text = render(version_of(root), seeder_calls(root, known), sorted_inputs(root), train_mode_setters(root))
    args.output.write_text(text, "utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
