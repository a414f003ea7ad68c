"""Built and called: whether a layer a class builds in its `__init__` is ever used.

`self.drop = nn.Dropout(0.1)` runs whenever the model is built, but the layer changes the numbers only
when something uses `self.drop` (calls it in `forward`/`construct`, hands it to a container, reads its
weights). A layer that nothing uses, or whose only call is commented out, never runs in training: a
rule about its settings is about a line no training run executes. The walker counts every `self.<attr>`
a function of the file writes (FileFacts.self_attributes), assignment targets included; a use is any
of them that is not an assignment of the attribute.
"""

from __future__ import annotations

from typing import Optional

from acclint.linter.facts import Call, FileFacts


def unused_attribute_layer(facts: FileFacts, call: Call) -> Optional[str]:
    """Evidence that the object `call` constructs into `self.<attr>` is never used by the file's code,
    or None when it is used, is not stored on `self`, or the file reaches its attributes by name."""
    attr = _stored_attribute(call)
    if attr is None or not call.method[:1].isupper():
        return None
    uses = _uses(facts)
    if uses is None or uses.get(attr, 0) > 0:
        return None
    where = facts.spans[call.node].line if call.node < len(facts.spans) else "?"
    return (f"`self.{attr}` is built at {facts.path}:{where} but nothing in {facts.path} calls or reads it: "
            "the layer never runs")


def _stored_attribute(call: Call) -> Optional[str]:
    """`attr` for `self.attr = Layer(...)`: the call's result flows straight into the attribute."""
    if len(call.sinks) != 1 or not call.sinks[0].startswith("attr:self."):
        return None
    attr = call.sinks[0][len("attr:self."):]
    return attr if "." not in attr else None


def _uses(facts: FileFacts) -> Optional[dict]:
    """attr -> how often the file's code uses `self.<attr>` other than to assign it; None when the file
    reaches attributes by name (`getattr(self, f"layer{i}")(x)`), so no attribute is shown unused.
    Iterating `self.modules()` (weight initialisation) reads layers but never runs them."""
    cached = getattr(facts, "_self_attribute_uses", False)
    if cached is not False:
        return cached
    if any(_reaches_by_name(call) for call in facts.calls):
        uses = None
    else:
        uses: dict = {}
        for (_, attr), count in facts.self_attributes.items():
            uses[attr] = uses.get(attr, 0) + count
        for assignment in facts.assignments:
            if assignment.target.startswith("self.") and assignment.target.count(".") == 1:
                attr = assignment.target[len("self."):]
                uses[attr] = uses.get(attr, 0) - 1
    facts._self_attribute_uses = uses
    return uses


def _reaches_by_name(call: Call) -> bool:
    return call.callee in ("getattr", "setattr", "vars") and bool(call.args) and call.args[0].value.dotted == "self"
