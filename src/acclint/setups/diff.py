"""The diff of two setups: every setting that differs, with both places, and what is the same.

LEFT is the reference (the GPU / PyTorch run); messages say what to change on the right.
A key one side leaves out takes that side's launcher default (Megatron-LM, MindSpeed,
MindSpeed-LLM: knowledge/launcher_defaults.toml), its config library's default (DeepSpeed,
accelerate: knowledge/config_defaults.toml) or constructor default, and the message says so.
Two sides of different kinds (a launch script and a YAML config) compare only on the keys both
define.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from acclint.setups import keys
from acclint.setups.config_defaults import default_setting
from acclint.setups.derived import derived_default
from acclint.setups.messages import message
from acclint.setups.record import Setting, Setup
from acclint.setups.units import reconcile
from acclint.setups.values import same

# Categories whose settings are reported even when only one side writes them.
ONE_SIDED_CATEGORIES = frozenset({"determinism", "seed", "fused-op", "mixed-precision"})


@dataclass(frozen=True)
class Mismatch:
    key: str
    category: str
    left: Setting
    right: Setting
    message: str
    consequence: str = ""  # what the difference does to the numbers, when a row source knows it


@dataclass
class DiffResult:
    left: Setup
    right: Setup
    mismatches: list[Mismatch] = field(default_factory=list)
    same: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # by the user or as not numerics-relevant
    only_left: list[str] = field(default_factory=list)  # unknown keys one side alone writes
    only_right: list[str] = field(default_factory=list)
    # Keys the model-code diff compared (operations, their values, seeding): counted apart from
    # settings in the summary.
    model_keys: set[str] = field(default_factory=set)

    @property
    def problems(self) -> list[str]:
        return self.left.problems + self.right.problems


def diff_setups(left: Setup, right: Setup, ignore: Iterable[str] = ()) -> DiffResult:
    result = DiffResult(left, right)
    patterns = keys.expand_ignores(ignore)
    lefts, rights = dict(left.settings), dict(right.settings)
    reconcile(lefts, rights)
    cross_kind = _comparable_kind(left) != _comparable_kind(right)
    both_launch = left.kind in ("launch", "folder") and right.kind in ("launch", "folder")
    known = _known_keys()
    for key in _ordered_keys(lefts, rights):
        if keys.ignored(key) or keys.user_ignored(key, patterns):
            result.ignored.append(key)
            continue
        l_setting = lefts.get(key) or _absent(left, lefts, key, rights.get(key))
        r_setting = rights.get(key) or _absent(right, rights, key, lefts.get(key))
        if l_setting is None or r_setting is None:
            present = l_setting or r_setting
            if _one_sided_matters(key, present, cross_kind, known, lefts, rights, both_launch):
                l_setting = l_setting or _unset(key)
                r_setting = r_setting or _unset(key)
            else:
                (result.only_left if r_setting is None else result.only_right).append(key)
                continue
        if _equal(l_setting, r_setting):
            result.same.append(key)
        else:
            category = "framework-default" if _semantics_differ(l_setting, r_setting) else keys.category(key)
            text = message(key, l_setting, r_setting, left, right)
            result.mismatches.append(Mismatch(key, category, l_setting, r_setting, text))
    return result


def _one_sided_matters(key: str, present: Setting, cross_kind: bool, known: frozenset, lefts: dict,
                       rights: dict, both_launch: bool) -> bool:
    """Is a setting only one side writes worth a mismatch? Not across kinds of files (they compare
    on shared keys), not a constructor's default the user never wrote, not a scheduler parameter
    when the schedulers differ anyway (the scheduler mismatch lists them), and only for keys
    whose meaning acclint knows or whose category always matters."""
    if cross_kind or present.is_default or _neutral(present):
        return False
    if present.group == "lr-scheduler" and not _same_setting(lefts.get("lr-scheduler"), rights.get("lr-scheduler")):
        return False
    if keys.category(key) in ONE_SIDED_CATEGORIES:
        return True
    # A hyperparameter one side writes and the other leaves to a default acclint does not know
    # (another script's own defaults) is not a known difference; launch flags have defaults.
    return key in known and both_launch


def _neutral(setting: Setting) -> bool:
    """`False`, `None` or a table's "off" value (amp O0, loss scale 1): as good as not written."""
    if setting.value is None or setting.value is False:
        return True
    neutral = keys.knowledge()["neutral"]
    return setting.key in neutral and same(setting.value, neutral[setting.key])


def _same_setting(left: Optional[Setting], right: Optional[Setting]) -> bool:
    return left is not None and right is not None and _equal(left, right)


def _comparable_kind(setup: Setup) -> str:
    """Scripts compare with scripts; a config only with a config of the same format (a HF JSON
    and a MindFormers YAML share few keys, and each leaves the others to its own defaults)."""
    if setup.kind in ("launch", "python", "folder"):
        return "script"
    return setup.path.rsplit(".", 1)[-1].lower()


def _ordered_keys(lefts: dict, rights: dict) -> list[str]:
    """Left's keys in the order written, then right's own: a report reads like the script."""
    def position(setting: Setting) -> tuple:
        return (0, setting.where.path, setting.where.line) if setting.where else (1, "", 0)

    left_keys = sorted(lefts, key=lambda k: position(lefts[k]))
    right_only = sorted((k for k in rights if k not in lefts), key=lambda k: position(rights[k]))
    return left_keys + right_only


def _equal(left: Setting, right: Setting) -> bool:
    if left.semantics != right.semantics:
        return False
    if not (left.known and right.known):
        return left.known == right.known and left.value == right.value and left.written == right.written
    return same(keys.canonical_value(left.key, left.value), keys.canonical_value(right.key, right.value))


def _semantics_differ(left: Setting, right: Setting) -> bool:
    return left.semantics != right.semantics and same(left.value, right.value)


def _absent(side: Setup, settings: dict, key: str, counterpart: Optional[Setting]) -> Optional[Setting]:
    """What `side` uses for a key it does not write: its launcher's default (or what Megatron
    derives from other flags), the unfused form of a fused op the other side calls, or None."""
    fused = keys.knowledge()["fused"]
    if key in fused and counterpart is not None and counterpart.value is True:
        composed = side.composed.get(key)
        written = f"not called; computed unfused ({composed})" if composed else "not called"
        return Setting(key, False, composed, origin="derived" if composed else "default", written=written)
    if side.library and side.kind in ("config", "folder"):
        # A library's config (alone, or in a folder) takes the library's default; a folder's key the
        # library does not know may still be a launcher's flag, below.
        library_default = default_setting(side.library, key)
        if library_default is not None or side.kind == "config":
            return library_default
    if side.kind not in ("launch", "folder"):
        return None
    launcher = side.launcher
    found = keys.launcher_flag(launcher, key) if launcher else None
    if found is None and launcher is not None:
        # A flag only a more specific launcher defines (an NPU-only flag on the Megatron side,
        # a MindSpeed-LLM flag on a MindSpeed run): what that launcher does without it.
        found = keys.launcher_flag("mindspeed-llm", key)
        if found is not None:
            name, record = found
            owner = keys.LAUNCHER_NAMES[launcher]
            return _default_setting(key, name, record, note=f"{owner} has no such option")
    if found is None:
        return None
    name, record = found
    if record.get("default") is None and not keys.is_switch(record):
        derived = derived_default(key, settings, _source(name))
        if derived is not None:
            return derived
    return _default_setting(key, name, record)


def _source(launcher: str) -> str:
    owner = keys.LAUNCHER_NAMES.get(launcher, launcher)
    version = keys.launcher_versions().get(launcher, "")
    return f"{owner} {version} default".strip() if version else f"{owner} default"


def _default_setting(key: str, launcher: str, record: dict, note: str = "") -> Setting:
    source = _source(launcher)
    if keys.is_switch(record):
        return Setting(key, False, None, origin="default", written=f"--{key} not given ({source})", note=note)
    value = record.get("default")
    if isinstance(value, list):
        value = tuple(value)
    conflict = f"also defined at {record['conflicts']}" if "conflicts" in record else ""
    note = "; ".join(part for part in (note or record.get("default_expr", ""), conflict) if part)
    return Setting(key, value, None, origin="default", written=f"{source}", note=note)


def _unset(key: str) -> Setting:
    return Setting(key, None, None, origin="default", written="not set")


def _known_keys() -> frozenset:
    from acclint.setups.configs import known_keys

    return known_keys()
