"""`--show-settings`: the configuration a scan resolves (config file, command line, defaults) as
TOML, so it can be read by people and parsed by tools."""

from __future__ import annotations

import json
from typing import Iterable

from acclint import __version__
from acclint.config import Config


def render_settings(config: Config, active_codes: Iterable[str], options: dict) -> str:
    """`options`: the command line's resolved values (key -> str, bool, int, list, or None: unset)."""
    settings = {
        "config-file": str(config.source) if config.source is not None else None,
        **options,
        "select": config.select,
        "extend-select": config.extend_select,
        "ignore": config.ignore,
        "exclude": config.exclude,
        "per-file-ignores": config.per_file_ignores,
        "severity": config.severity,
        "fail-on": config.fail_on,
        "respect-gitignore": config.respect_gitignore,
        "fix": config.fix,
        "preview": config.preview,
        "max-file-size": config.max_file_size,
        "file-time-budget": config.file_time_budget,
        "plugins": config.plugins,
        "mindspore-version": config.mindspore_version,
        "active-rules": sorted(active_codes),
    }
    lines = [f"# acclint {__version__}: resolved settings (unset values are left out)"]
    lines += [f"{key} = {toml_value(value)}" for key, value in settings.items() if value is not None]
    return "\n".join(lines)


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        pairs = ", ".join(f"{json.dumps(str(key))} = {toml_value(item)}" for key, item in value.items())
        return "{ " + pairs + " }" if pairs else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a TOML basic string
