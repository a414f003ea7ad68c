"""The vocabulary of settings: key spellings, categories, ignored keys and launcher defaults.

All of it is data in knowledge/setups.toml and knowledge/launcher_defaults.toml.
"""

from __future__ import annotations

import fnmatch
from functools import lru_cache
from typing import Optional

from acclint.knowledge import table

DEFAULT_CATEGORY = "hyperparameter"
# Which launcher tables a run reads, most specific first.
LAUNCHER_STACKS = {
    "megatron": ("megatron",),
    "mindspeed": ("mindspeed", "megatron"),
    "mindspeed-llm": ("mindspeed-llm", "mindspeed", "megatron"),
}
LAUNCHER_NAMES = {"megatron": "Megatron-LM", "mindspeed": "MindSpeed", "mindspeed-llm": "MindSpeed-LLM"}


def knowledge() -> dict:
    return table("setups")


def normalise(spelling: str) -> str:
    """A key as written in a script or config (`--learning_rate`, `adam_beta2`) -> its key."""
    text = spelling.lstrip("-").strip()
    if text.isupper():  # environment variables keep their names
        return knowledge()["environment"].get(text, text)
    text = text.replace("_", "-").lower()
    return knowledge()["aliases"].get(text, text)


def config_key(path: tuple) -> str:
    """A config leaf at `a.b.c`: the full path if it is an alias, else its last segment's key."""
    dotted = ".".join(str(part).replace("_", "-").lower() for part in path)
    aliases = knowledge()["aliases"]
    if dotted in aliases:
        return aliases[dotted]
    return normalise(str(path[-1]))


@lru_cache(maxsize=4096)
def category(key: str) -> str:
    for name, patterns in knowledge()["categories"].items():
        if any(fnmatch.fnmatchcase(key, pattern) for pattern in patterns):
            return name
    return DEFAULT_CATEGORY


@lru_cache(maxsize=4096)
def ignored(key: str) -> bool:
    """Not numerics-relevant; config paths are also judged by their last segment (`a.output_dir`)."""
    last = key.rsplit(".", 1)[-1]
    forms = {key, last if last.isupper() else last.replace("_", "-").lower()}
    return any(fnmatch.fnmatchcase(form, pattern) for form in forms for pattern in knowledge()["ignored"]["keys"])


@lru_cache(maxsize=1)
def _value_names() -> dict:
    return {
        key: {name: canonical for canonical, names in table_.items() for name in names}
        for key, table_ in knowledge()["values"].items()
    }


def canonical_value(key: str, value):
    """One name for an algorithm several tools spell differently (`CosineWithWarmUpLR` -> cosine)."""
    names = _value_names().get(key)
    if names is not None and isinstance(value, int) and not isinstance(value, bool):
        return names.get(str(value), value)  # `INF_NAN_MODE_ENABLE=0` reads as a number; the table names it
    if names is None or not isinstance(value, str):
        return value
    return names.get(value.lower().replace("-", "").replace("_", ""), value)


def expand_ignores(items) -> list[str]:
    """`--ignore` items: keys, globs, categories or group names -> key patterns and categories."""
    groups = knowledge()["groups"]
    out: list[str] = []
    for item in items:
        out.extend(groups.get(item, [item]))
    return out


def user_ignored(key: str, patterns, category_: Optional[str] = None) -> bool:
    """`category_`: the row's own category, when it is not the key's (model-code rows)."""
    kind = category_ or category(key)
    return any(key == p or kind == p or fnmatch.fnmatchcase(key, p) for p in patterns)


def why(key: str) -> str:
    return knowledge()["why"].get(key, "")


def launcher_versions() -> dict:
    return {name: source["version"] for name, source in table("launcher_defaults")["sources"].items()}


def launcher_flag(launcher: Optional[str], flag: str) -> Optional[tuple[str, dict]]:
    """(defining launcher, record) of `flag` for a run of `launcher`, or None if it has no such flag."""
    defaults = table("launcher_defaults")
    for name in LAUNCHER_STACKS.get(launcher or "", ()):
        record = defaults.get(name, {}).get(flag)
        if record is not None:
            return name, record
    return None


@lru_cache(maxsize=None)
def own_flags(launcher: str) -> frozenset:
    """Flags `launcher` adds that the launchers below it in its stack do not define."""
    defaults = table("launcher_defaults")
    below = LAUNCHER_STACKS.get(launcher, ())[1:]
    return frozenset(f for f in defaults.get(launcher, {}) if not any(f in defaults.get(b, {}) for b in below))


@lru_cache(maxsize=1)
def npu_only_flags() -> frozenset:
    """Flags MindSpeed or MindSpeed-LLM add that Megatron-LM does not have."""
    defaults = table("launcher_defaults")
    megatron = defaults.get("megatron", {})
    return frozenset(
        flag for name in ("mindspeed", "mindspeed-llm") for flag in defaults.get(name, {}) if flag not in megatron
    )


def is_switch(record: dict) -> bool:
    return record.get("action") in ("store_true", "store_false")


def constructors() -> dict:
    return knowledge()["constructors"]


@lru_cache(maxsize=1)
def fused_calls() -> dict:
    """Qualified call name -> fused op key."""
    return {call: key for key, entry in knowledge()["fused"].items() for call in entry["calls"]}


@lru_cache(maxsize=1)
def composed_calls() -> dict:
    """Qualified call name -> fused op keys it is the unfused form of."""
    out: dict = {}
    for key, entry in knowledge()["fused"].items():
        for call in entry.get("composed", []):
            out.setdefault(call, []).append(key)
    return out
