"""One normalised record of a training setup: settings by key, each with its value and origin."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Optional


class SetupError(ValueError):
    """A side that cannot be read at all (missing path, nothing we understand)."""


@dataclass(frozen=True)
class Where:
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Setting:
    """A setting's normalised value (int, float, bool, str, tuple; None = explicitly unset).

    `where` is None for a value the setup does not write (a launcher or constructor default):
    `origin` then says whose default it is. `written` is how the source spells it, when that
    differs from the key and value (`keep_prob=0.9`, `--train-samples 1000`).
    """

    key: str
    value: Any
    where: Optional[Where] = None
    origin: str = "set"  # "set" | "default" | "derived"
    written: str = ""
    known: bool = True  # False: the value depends on something we cannot read ($DATA, args.x)
    note: str = ""  # e.g. "keep_prob is the keep probability"
    semantics: str = ""  # optimizer variants that share a name but not an algorithm
    group: str = ""  # "lr-scheduler" for a scheduler's parameters: meaningless under another scheduler

    @property
    def is_default(self) -> bool:
        return self.origin == "default"


@dataclass
class Setup:
    """What one side trains with. `launcher` picks the default table for absent flags."""

    path: str
    kind: str  # "launch" | "python" | "config" | "folder"
    settings: dict[str, Setting] = field(default_factory=dict)
    launcher: Optional[str] = None  # "megatron" | "mindspeed" | "mindspeed-llm" | None
    library: Optional[str] = None  # a config file's library: "deepspeed" | "accelerate" | None
    framework: Optional[str] = None  # "pytorch" | "mindspore" | None
    problems: list[str] = field(default_factory=list)  # what could not be read, as messages
    files: list[str] = field(default_factory=list)  # every file that contributed
    # Unfused forms of fused ops (`F.silu` for npu_swiglu): shown when the other side fuses.
    composed: dict[str, Where] = field(default_factory=dict)
    # Other spellings of a key the script's own argparse accepts (`b` for `-b/--batch-size`).
    aliases: dict[str, str] = field(default_factory=dict)
    imports: frozenset = frozenset()  # top-level modules a Python side imports

    def rename(self, aliases: dict) -> None:
        """Re-key settings written under an alias (`-b 32` -> micro-batch-size)."""
        for alias, key in aliases.items():
            setting = self.settings.pop(alias, None)
            if setting is not None and key not in self.settings:
                self.settings[key] = replace(setting, key=key)

    def put(self, setting: Setting) -> None:
        """Record a setting; an explicit value beats a default, a later explicit one the earlier."""
        current = self.settings.get(setting.key)
        if current is not None and setting.is_default and not current.is_default:
            return
        self.settings[setting.key] = setting

    def merge(self, other: "Setup") -> None:
        for setting in other.settings.values():
            self.put(setting)
        self.problems.extend(other.problems)
        for op, where in other.composed.items():
            self.composed.setdefault(op, where)
        self.files.extend(f for f in other.files if f not in self.files)
        self.framework = self.framework or other.framework
        self.launcher = self.launcher or other.launcher
        # A folder holding a DeepSpeed or accelerate config takes that library's defaults for the
        # keys it leaves out, as the config compared alone would.
        self.library = self.library or other.library
