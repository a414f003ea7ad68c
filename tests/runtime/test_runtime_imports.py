"""acclint.runtime imports with neither framework installed and never pulls in the static half."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

SCRIPT = r"""
import sys

class Block:
    # Behave as if torch and mindspore were not installed.
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"torch", "mindspore", "torch_npu"}:
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, Block())
import acclint.runtime as runtime
from acclint.runtime_checks.cli import compare_command

try:
    runtime.capture(object(), object(), None, None)
except runtime.FingerprintError as error:
    print("error:", error)
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {"torch", "mindspore"}
                or m.startswith(("acclint.linter", "acclint.rules", "acclint.reports")))
print("loaded:", loaded)
print("api:", sorted(runtime.__all__))
"""


def test_runtime_imports_without_frameworks_or_static_half():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "loaded: []" in done.stdout
    assert "error: the model must be a torch.nn.Module or a mindspore.nn.Cell" in done.stdout
    for name in ("capture", "load", "compare", "transfer_weights", "assert_parity", "check_rank_consistency",
                 "Probe", "Fingerprint", "FingerprintError"):
        assert f"'{name}'" in done.stdout


# ---------------------------------------------------------------------------- no import cycles
PACKAGE = SRC / "acclint" / "runtime_checks"
PREFIX = "acclint.runtime_checks"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join((PREFIX, *(parts[:-1] if parts[-1] == "__init__" else parts)))


def _imports(path: Path, known: set[str]) -> set[str]:
    """runtime_checks modules `path` imports anywhere (functions included), except under TYPE_CHECKING."""
    import ast

    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.ImportFrom) and child.module:
                for alias in child.names:
                    full = f"{child.module}.{alias.name}"
                    found.add(full if full in known else child.module)
            elif isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {name for name in found if name in known}


def _import_graph() -> dict[str, set[str]]:
    paths = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    known = set(paths)
    return {name: _imports(path, known) - {name} for name, path in paths.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles, done = [], set()

    def walk(node: str, stack: list[str]) -> None:
        if node in stack:
            cycles.append(stack[stack.index(node):] + [node])
            return
        if node in done:
            return
        for target in sorted(graph[node]):
            walk(target, stack + [node])
        done.add(node)

    for node in sorted(graph):
        walk(node, [])
    return cycles


def test_cycle_finder_sees_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_among_runtime_modules():
    graph = _import_graph()
    assert f"{PREFIX}.adapters.frameworks" in graph and len(graph) > 10  # the walk really saw the package
    assert _cycles(graph) == []


def test_one_adapter_module_per_framework_on_one_base():
    graph = _import_graph()
    from acclint.runtime_checks.adapters.frameworks import ADAPTERS

    assert sorted(adapter.framework for adapter in ADAPTERS) == ["mindspore", "torch"]
    for adapter in ADAPTERS:
        module = adapter.__module__
        assert graph[module] >= {f"{PREFIX}.adapters.adapter"}, module
        # An adapter knows the base only: never the registry, another adapter or the orchestration.
        assert not graph[module] & {f"{PREFIX}.{name}" for name in
                                    ("adapters.frameworks", "capture.capture", "capture.probe", "compare.compare",
                                     "adapters.torch_adapter", "adapters.mindspore_adapter")}
    assert graph[f"{PREFIX}.adapters.adapter"] == set()


# The package's rooms, lowest first: a module may import its own room or a lower one, never a higher one.
ROOMS = ("model", "adapters", "distributed", "capture", "compare", "dumps", "capture_hooks")


def _room(module: str) -> int:
    """Position of `module`'s room in ROOMS; the package's own top level (API, CLI) sits above them all."""
    parts = module.removeprefix(PREFIX).lstrip(".").split(".")
    return ROOMS.index(parts[0]) if len(parts) > 1 and parts[0] in ROOMS else len(ROOMS)


def _upward(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{source} -> {target}" for source, targets in graph.items() for target in targets
                  if _room(target) > _room(source))


def test_rooms_depend_one_way():
    graph = _import_graph()
    assert {module.split(".")[2] for module in graph if module.count(".") > 2} == set(ROOMS)
    assert _upward(graph) == []


def test_room_check_sees_an_upward_import():
    fingerprint, compare, cli = (f"{PREFIX}.{name}" for name in ("model.fingerprint", "compare.compare", "cli"))
    assert _upward({fingerprint: {compare}, compare: {fingerprint}, cli: {compare}}) == [f"{fingerprint} -> {compare}"]


def test_importing_the_runtime_imports_no_framework_until_a_model_is_handed_over():
    # torch and MindSpore are installed here: they must still not be imported by acclint itself.
    script = (
        "import sys\n"
        "import acclint.runtime, acclint.runtime_checks.adapters.frameworks, acclint.runtime_checks.cli\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'torch', 'mindspore'}))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
