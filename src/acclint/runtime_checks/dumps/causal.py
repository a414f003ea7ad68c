"""The causal reading of two dumps of one step: which node is where the runs part, and why.

Nodes are walked in the order the left run executed them. A matched node whose inputs and
parameters agree while its output differs is a root: the difference arises in it, and the dump
shows why when its class differs (ReLU -> GELU), a non-tensor argument differs (alpha -0.1 ->
-0.2), or acclint's tables know the op (a MindSpore default, a fused kernel). A node whose inputs
already differ follows from an earlier root; with no earlier root, the difference arose between
the last node that agreed and this one, in the nodes only one side ran or in code the dump does
not record. A node whose parameters differ at step 0 points at the initial weights.

Phases: the forward pass (until the first backward node), the backward pass (backward nodes and
`parameters_grad`), and the update (API calls after the backward pass: the optimizer's in-place
arithmetic, whose scalar arguments carry its hyperparameters, knowledge/msprobe_dumps.toml).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acclint.knowledge import table
from acclint.runtime_checks.dumps import values
from acclint.runtime_checks.dumps.matching import Key, NodeKeys
from acclint.runtime_checks.dumps.reader import DumpRank, Node
from acclint.runtime_checks.dumps.static_causes import framework_default, fused_op
from acclint.runtime_checks.model.mismatch import Mismatch


@dataclass
class Reading:
    """What one pair of dumps (one rank on each side) shows, stage by stage."""

    mismatches: dict[str, list[Mismatch]] = field(default_factory=dict)  # stage -> differences
    summaries: dict[str, str] = field(default_factory=dict)
    recorded: set[str] = field(default_factory=set)  # stages the two dumps both record
    matched: int = 0
    left_only: list[str] = field(default_factory=list)
    right_only: list[str] = field(default_factory=list)
    static_notes: list[str] = field(default_factory=list)

    def add(self, stage: str, mismatch: Mismatch) -> Mismatch:
        mismatch.stage = stage
        self.mismatches.setdefault(stage, []).append(mismatch)
        return mismatch


def read_pair(left: DumpRank, right: DumpRank, left_keys: NodeKeys, right_keys: NodeKeys) -> Reading:
    return _Walk(left, right, left_keys, right_keys).run()


def _phase_of(nodes: list[Node]) -> list[str]:
    phases, backward_seen = [], False
    for node in nodes:
        if node.name.direction != "forward":
            backward_seen = True
            phases.append("backward")
        else:
            phases.append("update" if backward_seen and not node.name.is_module else "forward")
    return phases


class _Walk:
    def __init__(self, left: DumpRank, right: DumpRank, left_keys: NodeKeys, right_keys: NodeKeys) -> None:
        self.left, self.right = left, right
        self.lk, self.rk = left_keys, right_keys
        self.frameworks = (left.framework, right.framework)
        self.partners: dict[Key, Node] = {}
        for node in right.nodes:
            if not right_keys.ignored(node.name):
                self.partners.setdefault(right_keys.key(node.name), node)
        self.reading = Reading()
        self.roots: list[Mismatch] = []  # forward roots, in order
        self.backward_root: Mismatch | None = None
        self.containing: set[str] = set()  # left nodes (raw names) that contain a root
        self.parents = _parents(left)
        self.last_ok: Node | None = None
        self.unmatched_since_ok: list[tuple[str, Node]] = []
        self.seen_params: set[str] = set()
        self.numel = [0, 0]  # parameters of the modules that ran, left and right
        self.optimizer: dict[tuple[str, str, Any, Any], list[str]] = {}

    # ------------------------------------------------------------------ walk
    def run(self) -> Reading:
        right_forward = [n for n in self.right.nodes if n.name.direction == "forward"]
        first_forward = True
        for node, phase in zip(self.left.nodes, _phase_of(self.left.nodes)):
            if self.lk.ignored(node.name):
                continue
            partner = self.partners.get(self.lk.key(node.name))
            if partner is None:
                if phase == "forward":
                    self.unmatched_since_ok.append(("left", node))
                    self.reading.left_only.append(node.name.label)
                continue
            self.reading.matched += 1
            if phase == "forward":
                if first_forward:
                    self._batch(node, partner)
                    first_forward = False
                self._params(node, partner)
                self._forward(node, partner)
            elif phase == "backward":
                self._backward(node, partner)
            else:
                self._update(node, partner)
        left_keys = {self.lk.key(n.name) for n in self.left.nodes}
        self.reading.right_only = [n.name.label for n in right_forward
                                   if self.rk.key(n.name) not in left_keys and not self.rk.ignored(n.name)]
        self._optimizer_findings()
        self._summaries()
        return self.reading

    # ------------------------------------------------------------------ data and weights
    def _batch(self, node: Node, partner: Node) -> None:
        """The inputs of the first call: a module's are the batch as the model sees it; an API's first
        argument is (its later ones are often the module's weights, which the weights stage judges)."""
        self.reading.recorded.add("data")
        if node.name.is_module:
            found = values.first_difference(node.inputs, partner.inputs)
        else:
            found = values.first_difference(node.inputs.get("args", [])[:1], partner.inputs.get("args", [])[:1])
            found = found and (f"args.{found[0]}", found[1], found[2])
        if found:
            path, a, b = found
            self.reading.add("data", Mismatch(
                "batch", f"{node.name.label} {path}", values.view(a), values.view(b),
                f"the first node, {node.name.label}, already receives other inputs ({path}: {values.text(a)} vs "
                f"{values.text(b)}): the batch or the code before the first recorded call differs"))

    def _params(self, node: Node, partner: Node) -> None:
        if not node.parameters and not partner.parameters:
            return
        self.reading.recorded.update({"weights", "names", "count"})
        for leaf in sorted(set(node.parameters) | set(partner.parameters)):
            name = f"{node.name.path}.{leaf}" if node.name.path else leaf
            if name in self.seen_params:
                continue
            self.seen_params.add(name)
            a, b = node.parameters.get(leaf), partner.parameters.get(leaf)
            self.numel[0] += a.numel if a is not None else 0
            self.numel[1] += b.numel if b is not None else 0
            if a is None or b is None:
                self.reading.add("names", Mismatch(
                    "param-missing", name, values.view(a), values.view(b),
                    f"parameter {name} of {node.name.label} exists only on the {'left' if b is None else 'right'}"))
            elif a.shape != b.shape:
                self.reading.add("names", Mismatch(
                    "param-shape", name, list(a.shape), list(b.shape),
                    f"parameter {name} has shape {list(a.shape)} on the left, {list(b.shape)} on the right"))
            elif not values.tensors_agree(a, b):
                self.reading.add("weights", Mismatch(
                    "init-weights", name, values.view(a), values.view(b),
                    f"parameter {name} differs at step 0 ({values.text(a)} vs {values.text(b)})"))

    # ------------------------------------------------------------------ forward
    def _forward(self, node: Node, partner: Node) -> None:
        self.reading.recorded.add("forward")
        loss = not node.name.is_module and node.name.api in table("msprobe_dumps")["losses"]["apis"]
        stage, kind = ("loss", "loss") if loss else ("forward", "activation")
        if loss:
            self.reading.recorded.add("loss")
        out = values.first_difference(node.outputs, partner.outputs)
        if out is None:
            self.last_ok, self.unmatched_since_ok = node, []
            return
        path, a, b = out
        stats = f"output {path.removeprefix('out.') or '0'}: {values.text(a)} vs {values.text(b)}"
        label = node.name.label
        inputs = values.first_difference(node.inputs, partner.inputs)
        params = [leaf for leaf in node.parameters if leaf in partner.parameters
                  and not values.tensors_agree(node.parameters[leaf], partner.parameters[leaf])]
        if node.name.raw in self.containing or (self.roots and inputs):
            origin = self.roots[0] if self.roots else None
            why = "contains" if node.name.raw in self.containing else "follows from"
            self.reading.add(stage, Mismatch(
                kind, label, values.view(a), values.view(b),
                f"{label} differs too ({stats}): {why} {origin.name if origin else 'the difference above'}",
                consequence_of=origin.kind if origin else "activation"))
            return
        if params and not inputs:
            listed = ", ".join(params)
            self.reading.add(stage, Mismatch(
                kind, label, values.view(a), values.view(b),
                f"first diverging node: {label}, {stats}; its inputs agree but its parameters ({listed}) differ "
                "at step 0", consequence_of="init-weights"))
            self.roots.append(self.reading.mismatches[stage][-1])
            self._mark_ancestors(node)
            return
        if inputs:
            name, message = self._gap_cause(node, stats)
        else:
            name, message = label, f"first diverging node: {label}, {stats}; {self._cause(node, partner)}"
        if self.roots:
            message = f"{label} diverges on its own too ({stats}); " + message.split("; ", 1)[-1]
        mismatch = self.reading.add(stage, Mismatch(kind, name, values.view(a), values.view(b), message))
        self.roots.append(mismatch)
        self._mark_ancestors(node)

    def _cause(self, node: Node, partner: Node) -> str:
        """Why a node with equal inputs and parameters computes another output, as far as the dump shows."""
        reasons = []
        if node.name.is_module:
            left_cls, right_cls = self.lk.cls(node.name), self.rk.cls(partner.name)
            if left_cls != right_cls:
                reasons.append(f"the module is {node.name.cls} on the left, {partner.name.cls} on the right")
            elif (note := framework_default(node.name.cls, self.frameworks)) is not None:
                reasons.append(note)
                self.reading.static_notes.append(note)
        for path, a, b in values.scalar_differences(node.inputs, partner.inputs):
            reasons.append(f"argument {path.split('.')[-1]} is {a!r} on the left, {b!r} on the right")
        if not node.name.is_module and (note := fused_op(node.name.api)):
            reasons.append(note)
            self.reading.static_notes.append(note)
        if not reasons:
            reasons.append("same class and arguments: the operator computes differently (its implementation, "
                           "precision, or a setting the dump does not record)")
        return "its inputs and parameters agree: " + "; ".join(reasons)

    def _gap_cause(self, node: Node, stats: str) -> tuple[str, str]:
        """A node whose inputs differ with no root before it: the cause ran between it and the last
        agreeing node. (mismatch name, message)"""
        label = node.name.label
        after = f"{self.last_ok.name.label}, which agreed," if self.last_ok else "the first recorded call"
        left = sorted({n.name.label for side, n in self.unmatched_since_ok if side == "left"})
        right_nodes = self._right_gap(node)
        right = sorted({n.name.label for n in right_nodes})
        gap = [n for _, n in self.unmatched_since_ok] + right_nodes
        notes = list(dict.fromkeys(note for n in gap if not n.name.is_module and (note := fused_op(n.name.api))))
        self.reading.static_notes.extend(notes)
        if left or right:
            name = f"{', '.join(left) or 'nothing'} -> {', '.join(right) or 'nothing'}"
            return name, (f"first difference: the runs call {', '.join(left) or 'nothing'} on the left where the "
                          f"right calls {', '.join(right) or 'nothing'}, between {after} and {label}, whose inputs "
                          f"therefore differ (its {stats})" + (f"; {'; '.join(notes)}" if notes else ""))
        return label, (f"first diverging node: {label}, {stats}; its inputs already differ after {after}: the "
                       "difference lies in code between them that the dump does not record (dump at mix or L1 to "
                       "record the API calls)")

    def _right_gap(self, node: Node) -> list[Node]:
        """The right side's forward nodes without a partner, between the last agreeing node's partner and this one's."""
        nodes = self.right.nodes
        partner = self.partners.get(self.lk.key(node.name))
        last = self.partners.get(self.lk.key(self.last_ok.name)) if self.last_ok else None
        start = nodes.index(last) + 1 if last is not None else 0
        end = nodes.index(partner) if partner is not None else len(nodes)
        left_keys = {self.lk.key(n.name) for n in self.left.nodes}
        return [n for n in nodes[start:end] if n.name.direction == "forward" and self.rk.key(n.name) not in left_keys]

    def _mark_ancestors(self, node: Node) -> None:
        raw = self.parents.get(node.name.raw)
        while raw and raw not in self.containing:
            self.containing.add(raw)
            raw = self.parents.get(raw)
        if node.name.is_module:  # modules enclosing it by path, for dumps without construct.json
            for other in self.left.nodes:
                if other.name.is_module and other.name.direction == "forward" and (
                        other.name.path == "" or node.name.path.startswith(other.name.path + ".")):
                    self.containing.add(other.name.raw)

    # ------------------------------------------------------------------ backward
    def _backward(self, node: Node, partner: Node) -> None:
        self.reading.recorded.add("grads")
        out = values.first_difference(node.outputs, partner.outputs)
        if out is None:
            return
        _path, a, b = out
        if node.name.direction == "parameters_grad":
            for leaf, value in node.outputs.items():
                other = partner.outputs.get(leaf)
                found = values.first_difference({leaf: value}, {leaf: other}) if other is not None else None
                if found:
                    _, value, other = found
                    name = f"{node.name.path}.{leaf}" if node.name.path else leaf
                    self.reading.add("grads", Mismatch(
                        "grad-norm", name, values.view(value), values.view(other),
                        f"gradient of {name}: {values.text(value)} vs {values.text(other)}",
                        consequence_of=self._backward_origin()))
            return
        label = f"{node.name.label} (backward)"
        origin = self._backward_origin()
        inputs = values.first_difference(node.inputs, partner.inputs)
        if origin is None and not inputs:
            cause = self._cause(node, partner)
            self.backward_root = self.reading.add("grads", Mismatch(
                "grad-norm", label, values.view(a), values.view(b),
                f"first diverging backward node: {label}, gradients out {values.text(a)} vs {values.text(b)}; "
                f"{cause.replace('inputs and parameters', 'incoming gradients')}"))
            return
        self.reading.add("grads", Mismatch(
            "grad-norm", label, values.view(a), values.view(b),
            f"{label} differs: gradients out {values.text(a)} vs {values.text(b)}",
            consequence_of=origin or "grad-norm"))

    def _backward_origin(self) -> str | None:
        if self.roots:
            return self.roots[0].kind
        if self.reading.mismatches.get("loss") or self.reading.mismatches.get("data"):
            return "loss" if self.reading.mismatches.get("loss") else "batch"
        return "grad-norm" if self.backward_root else None

    # ------------------------------------------------------------------ update
    def _update(self, node: Node, partner: Node) -> None:
        self.reading.recorded.update({"optimizer", "update"})
        entry = table("msprobe_dumps")["optimizer_apis"].get(f"{node.name.prefix}.{node.name.api}")
        differences = values.scalar_differences(node.inputs, partner.inputs)
        for path, a, b in differences:
            argument = path.split(".")[-1]
            named = entry and (argument == entry["argument"] or path == f"args.{entry['position']}")
            hparam = entry["hparam"] if named else f"{node.name.api} {argument}"
            self.optimizer.setdefault((hparam, f"{node.name.prefix}.{node.name.api} {argument}", a, b), []).append(
                entry["relation"] if named else "")
        out = values.first_difference(node.outputs, partner.outputs)
        if out is None:
            return
        _path, a, b = out
        label = node.name.label
        inputs = values.first_difference(node.inputs, partner.inputs)
        consequence = "optimizer-hparam" if differences else ("grad-norm" if inputs else None)
        self.reading.add("update", Mismatch(
            "update", label, values.view(a), values.view(b),
            f"{label} (optimizer) writes {values.text(a)} vs {values.text(b)}"
            + ("" if consequence else ": its inputs and arguments agree, the update itself computes differently"),
            consequence_of=consequence))

    def _optimizer_findings(self) -> None:
        for (hparam, where, a, b), relations in self.optimizer.items():
            relation = next((r for r in relations if r), "")
            self.reading.add("optimizer", Mismatch(
                "optimizer-hparam", hparam, a, b,
                f"{hparam}: {where.split(' ')[1]} {a!r} -> {b!r} of {where.split(' ')[0]} "
                f"({len(relations)} call{'s' if len(relations) != 1 else ''})" + (f": {relation}" if relation else "")))

    def _summaries(self) -> None:
        reading = self.reading
        if "count" in reading.recorded:
            left, right = self.numel
            reading.summaries["count"] = f"{left} parameters in the modules that ran"
            if left != right:
                reading.add("count", Mismatch("param-count", "total", left, right,
                                              f"{left} parameters on the left, {right} on the right "
                                              "(in the modules the dumps record)"))
        if "forward" in reading.recorded and not reading.mismatches.get("forward"):
            reading.summaries["forward"] = f"{reading.matched} matched node(s) agree"
        if reading.left_only or reading.right_only:
            reading.summaries["names"] = (f"{reading.matched} node(s) matched; left only: "
                                          f"{_few(reading.left_only)}; right only: {_few(reading.right_only)}")


def _parents(rank: DumpRank) -> dict[str, str]:
    """construct.json beside the dump: node -> its parent module node (absent: none known)."""
    import json

    path = rank.path.with_name("construct.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def _few(names: list[str]) -> str:
    unique = list(dict.fromkeys(names))
    return (", ".join(unique[:4]) + (f" and {len(unique) - 4} more" if len(unique) > 4 else "")) or "none"

