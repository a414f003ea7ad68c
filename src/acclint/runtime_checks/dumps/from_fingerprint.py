"""An acclint fingerprint read as a dump, so it compares with an msprobe dump where both record the same.

A fingerprint holds, per module call, the outputs (and the inputs of leaf modules), the parameters
at step 0 and the gradient norms: these become module nodes named as msprobe names them
(`Module.<path>.<Class>.forward.<n>`, `<...>.parameters_grad`). Statistics are carried under
msprobe's keys (max, min, mean, norm); the std and the content hashes have no counterpart in a
dump and are left out. The optimizer's arithmetic, which msprobe records as API calls, has no node.
"""

from __future__ import annotations

from pathlib import Path

from acclint.runtime_checks.dumps.node_names import parse_node_name
from acclint.runtime_checks.dumps.reader import STAT_NAMES, DumpRank, Node, Tensor, normalise_dtype
from acclint.runtime_checks.model.fingerprint import Fingerprint, TensorRecord, ValueRecord

PREFIX = {"torch": "Module", "mindspore": "Cell"}


def _tensor(record: ValueRecord | TensorRecord) -> Tensor:
    stats = tuple(float(record.stats[key]) if key in record.stats else None for key in STAT_NAMES)
    return Tensor(normalise_dtype(record.dtype), tuple(record.shape), stats, None)


def fingerprint_as_dump(fp: Fingerprint, path: str | Path) -> DumpRank:
    prefix = PREFIX.get(fp.framework, "Module")
    params: dict[str, dict[str, Tensor]] = {}
    for record in fp.params:
        module, _, leaf = record.native_name.rpartition(".")
        params.setdefault(module, {})[leaf] = _tensor(record)
    classes = {module.name: module.module for module in fp.forward or ()}
    nodes: dict[str, Node] = {}
    for record in fp.forward or ():
        if not record.name:  # the model itself: msprobe does not dump the root module
            continue
        name = parse_node_name(f"{prefix}.{record.name}.{record.module}.forward.{record.call}")
        if name is None:
            continue
        node = nodes.setdefault(name.raw, Node(name))
        leaves = [_tensor(value) for value in record.values]
        if record.io == "input":
            node.inputs = {"args": leaves, "kwargs": {}}
        else:
            node.outputs = {"out": leaves}
            if record.call == 0:
                node.parameters = params.get(record.name, {})
    grads = fp.step.grad_norms if fp.step else {}
    for module in dict.fromkeys(name.rpartition(".")[0] for name in grads):
        name = parse_node_name(f"{prefix}.{module}.{classes.get(module, 'Module')}.parameters_grad")
        if name is None:
            continue
        node = Node(name)
        node.outputs = {leaf: [Tensor("", _shape(fp, full), (None, None, None, float(norm)), None)]
                        for full, norm in grads.items() if norm is not None
                        for leaf in [full.rpartition(".")[2]] if full.rpartition(".")[0] == module}
        nodes[name.raw] = node
    return DumpRank(Path(path), "rank0", fp.framework, "acclint fingerprint", "fingerprint", list(nodes.values()))


def _shape(fp: Fingerprint, name: str) -> tuple[int, ...]:
    record = next((r for r in fp.params if r.name == name), None)
    return tuple(record.shape) if record else ()
