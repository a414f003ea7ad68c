"""Domain knowledge as data: each table is a TOML file beside this module, loaded once."""

from __future__ import annotations

import sys
from functools import lru_cache
from importlib import resources

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@lru_cache(maxsize=None)
def table(name: str) -> dict:
    """The parsed `knowledge/<name>.toml`."""
    return tomllib.loads(resources.files(__package__).joinpath(f"{name}.toml").read_text("utf-8"))
