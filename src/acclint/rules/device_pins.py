"""The devices a MindSpore program pins itself to (`set_context(device_target="CPU")`,
`ms.set_device("GPU")`), for settings that act only on some devices (knowledge/usage.toml,
`device_pins`)."""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from acclint.knowledge import table
from acclint.linter.context import ProgramContext
from acclint.rules.base import where
from acclint.rules.values import name_origin


@lru_cache(maxsize=1)
def _pins() -> dict:
    return table("usage")["device_pins"]


def pinned_devices(ctx: ProgramContext) -> Optional[list]:
    """(device, file:line) for each pin the program's flow reaches, when every one names its device as a
    literal; None when the program pins none, or one that acclint cannot read (`device_target=args.device`)."""
    pins, names = _pins(), frozenset(_pins()["calls"])
    found = []
    for step in ctx.program.calls():
        matched = step.fact.names & names
        if not matched:
            continue
        position = next((pins["positions"][n] for n in sorted(matched) if n in pins["positions"]), None)
        arg = step.fact.arg(pins["keyword"], position)
        if arg is None:
            continue  # set_context(mode=...) without a device
        device = _device(step, arg.value)
        if device is None:
            return None
        found.append((device, where(step)))
    return found or None


def _device(step, value) -> Optional[str]:
    """A literal device, or a name the file binds to one (`dev = "GPU"` ... `device_target=dev`)."""
    if isinstance(value.literal, str):
        return value.literal
    if value.dotted and "." not in value.dotted:
        origin = name_origin(step.file, step.fact.scope, value.dotted, step.fact.order)
        if origin is not None and isinstance(origin.value, str):
            return origin.value
    return None


def runs_only_off(ctx: ProgramContext, acts_on: list) -> Optional[str]:
    """Evidence that the program runs only on devices where a setting acting on `acts_on` does nothing."""
    pinned = pinned_devices(ctx)
    if not pinned or any(device in acts_on for device, _ in pinned):
        return None
    shown = ", ".join(f'device_target="{device}" at {at}' for device, at in pinned[:2])
    return f"the program is pinned to {shown}"
