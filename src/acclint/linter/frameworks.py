"""The framework a file's tensors belong to, from what it imports (knowledge/frameworks.toml).

Rules that hold for one framework's semantics declare it (`Rule.tensor_framework`); the engine
runs their per-file checks only on files that are not written against another framework alone.
"""

from __future__ import annotations

from acclint.knowledge import table
from acclint.linter.facts import FileFacts


def file_frameworks(facts: FileFacts, *, libraries: bool = False) -> frozenset:
    """Tensor frameworks whose packages the file imports (e.g. {"mindspore"}); with `libraries`,
    also those of the training libraries it imports (transformers trains with torch)."""
    known = dict(table("frameworks")["packages"])
    if libraries:
        known.update(table("frameworks")["libraries"])
    found = set()
    for qualified in facts.bindings.values():
        for name in qualified:
            framework = known.get(name.split(".", 1)[0])
            if framework:
                found.add(framework)
    return frozenset(found)


def applies(rule, frameworks: frozenset) -> bool:
    """Whether `rule` judges a file importing `frameworks`: always, unless the rule is about one
    framework and the file is written against others only."""
    wanted = getattr(rule, "tensor_framework", None)
    return wanted is None or not frameworks or wanted in frameworks


def loads_transfer_to_npu(facts: FileFacts) -> bool:
    """The file imports transfer_to_npu, or a module whose import loads it (MindSpeed's adaptor)."""
    modules = tuple(table("frameworks")["transfer_to_npu"]["modules"])
    if any(name in modules for targets in facts.bindings.values() for name in targets):
        return True
    return any(imp.module in modules or f"{imp.module}.{imp.name}" in modules for imp in facts.imports)


def program_loads_transfer_to_npu(files) -> bool:
    """Some file of the program loads transfer_to_npu: its "cuda" calls, autocasts and NCCL groups go to
    the NPU, so whether a "cuda" written in code is wrong on NPU depends on the whole program."""
    return any(loads_transfer_to_npu(f) for f in files)
