"""Defaults of the keys a DeepSpeed JSON or an accelerate YAML leaves out.

The table (knowledge/config_defaults.toml) is generated from the installed libraries' config schema
by tools/gen_config_defaults.py; a config file is read as one library's when most of its top-level
keys are keys that library reads. A key one side leaves out then takes the library's default, as a
launch script's absent flag takes its launcher's (setups/diff.py).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable, Optional

from acclint.knowledge import table
from acclint.setups.record import Setting

LIBRARY_NAMES = {"deepspeed": "DeepSpeed", "accelerate": "accelerate"}
# Share of a file's top-level keys the library must read for the file to be read as its config.
RECOGNISED_SHARE = 0.6


def _table() -> dict:
    return table("config_defaults")


def library_of(top_level: Iterable[str]) -> Optional[str]:
    """The library whose config a file with these top-level keys is, or None."""
    keys = {str(k) for k in top_level}
    if not keys:
        return None
    best, best_share = None, 0.0
    for library, source in _table()["sources"].items():
        share = len(keys & set(source["top_level"])) / len(keys)
        if share > best_share:
            best, best_share = library, share
    return best if best_share >= RECOGNISED_SHARE else None


@lru_cache(maxsize=None)
def defaults_by_key(library: str) -> dict:
    """Setting key (as configs.py names a leaf) -> (dotted path, default value or None)."""
    from acclint.setups.configs import settings_of_leaf

    out: dict = {}
    for path, record in _table().get(library, {}).items():
        for key, value in settings_of_leaf(tuple(path.split(".")), record.get("default")):
            out.setdefault(key, (path, value))
    return out


def default_setting(library: str, key: str) -> Optional[Setting]:
    """What a config of `library` uses for a key it does not write, or None if the library has no such key."""
    found = defaults_by_key(library).get(key)
    if found is None:
        return None
    path, value = found
    source = f"{LIBRARY_NAMES.get(library, library)} {_table()['sources'][library]['version']} default"
    note = "" if value is not None else f"{path} left to the library, which derives it from other keys"
    return Setting(key, value, None, origin="default", written=source, note=note)
