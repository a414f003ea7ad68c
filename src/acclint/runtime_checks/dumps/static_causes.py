"""What acclint's tables already know about the op a dump comparison points at.

* knowledge/framework_defaults.toml: a MindSpore API whose default differs from PyTorch's (nn.GELU
  is the tanh form in MindSpore, exact in PyTorch), said when one side of the node is MindSpore;
* knowledge/fused_ops.toml: a fused kernel (npu_swiglu) on one side where the other side composes
  it from several APIs, said with the composed form and what differs numerically.
"""

from __future__ import annotations

from acclint.knowledge import table


def framework_default(cls: str, frameworks: tuple[str, str]) -> str | None:
    """The documented MindSpore default of a module class, when one side is MindSpore and the other is not."""
    if "mindspore" not in frameworks or len(set(frameworks)) == 1:
        return None
    for key, entry in table("framework_defaults").items():
        if not isinstance(entry, dict):
            continue
        if any(api.rsplit(".", 1)[-1] == cls for api in entry.get("apis", [])):
            return (f"MindSpore {cls} defaults to {entry.get('mindspore', '?')}, PyTorch to {entry.get('torch', '?')} "
                    f"(knowledge/framework_defaults.toml [{key}]: pass the argument explicitly on the MindSpore side)")
    return None


def fused_op(api: str) -> str | None:
    """The fused-op entry of an API name seen in a dump (`npu_swiglu`), if acclint's table holds it."""
    for key, entry in table("fused_ops").get("ops", {}).items():
        if key.rsplit(".", 1)[-1] == api:
            notes = f"; {entry['notes']}" if entry.get("notes") else ""
            return (f"{key} is a fused kernel: it {entry.get('computes', 'fuses several ops')}; the composed form is "
                    f"{entry.get('composed', 'not listed')}{notes} (knowledge/fused_ops.toml)")
    return None
