#!/usr/bin/env python3
"""Regenerate src/acclint/knowledge/launcher_defaults.toml from the launchers' own argparse code.

`acclint diff` resolves a flag one launch script leaves out to the default the launcher's parser
gives it. Those defaults are read here, statically (nothing is imported), from checkouts of:

- Megatron-LM: `megatron/training/arguments.py`;
- MindSpeed: `mindspeed/arguments.py` and `mindspeed/features_manager/**.py` (NPU flags);
- MindSpeed-LLM: `mindspeed_llm/training/arguments.py` and `mindspeed_llm/features_manager/**.py`.

Later launchers override earlier ones (MindSpeed-LLM redefines `--pre-tockens`, and
`parser.set_defaults(...)` calls change a dest's default). Usage, from the repository root:

    python tools/gen_launcher_defaults.py --megatron ~/src/Megatron-LM@core_v0.12.1 \
        --mindspeed ~/src/MindSpeed --mindspeed-llm ~/src/MindSpeed-LLM \
        -o src/acclint/knowledge/launcher_defaults.toml

`DIR@VERSION` names the version written in the table; without it, `git describe` of DIR.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path

LAUNCHERS = {
    # name: (repository, files or folders read, relative to the checkout)
    "megatron": ("NVIDIA/Megatron-LM", ["megatron/training/arguments.py"]),
    "mindspeed": ("Ascend/MindSpeed", ["mindspeed/arguments.py", "mindspeed/features_manager"]),
    "mindspeed-llm": (
        "Ascend/MindSpeed-LLM",
        ["mindspeed_llm/training/arguments.py", "mindspeed_llm/features_manager"],
    ),
}
_UNKNOWN = object()


def _value(node: ast.AST):
    """A literal default, including simple arithmetic such as `2**32`; else _UNKNOWN."""
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        pass
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left), _value(node.right)
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right))
        operations = {ast.Pow: pow, ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b}
        if numbers and type(node.op) in operations:
            return operations[type(node.op)](left, right)
    return _UNKNOWN


def _keywords(call: ast.Call) -> dict:
    return {kw.arg: kw.value for kw in call.keywords if kw.arg}


def _flag_entry(call: ast.Call) -> tuple[list[str], dict] | None:
    options = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    long_options = [o for o in options if o.startswith("--")]
    if not long_options:
        return None
    keywords = _keywords(call)
    action = _value(keywords["action"]) if "action" in keywords else "store"
    entry: dict = {"action": action if isinstance(action, str) else "custom"}
    dest = _value(keywords["dest"]) if "dest" in keywords else long_options[0][2:].replace("-", "_")
    entry["dest"] = dest if isinstance(dest, str) else long_options[0][2:].replace("-", "_")
    if "default" in keywords:
        default = _value(keywords["default"])
        if default is _UNKNOWN and isinstance(keywords["default"], ast.Attribute):
            # `default=AttnBackend.auto`: an enum member, given on the command line by its name.
            entry["default"] = keywords["default"].attr
            entry["default_expr"] = ast.unparse(keywords["default"])
        elif default is _UNKNOWN:
            entry["default_expr"] = ast.unparse(keywords["default"])
        elif default is not None:
            entry["default"] = default
    elif entry["action"] == "store_true":
        entry["default"] = False
    elif entry["action"] == "store_false":
        entry["default"] = True
    if "type" in keywords and isinstance(keywords["type"], ast.Name):
        entry["type"] = keywords["type"].id
    if "nargs" in keywords:
        entry["nargs"] = str(_value(keywords["nargs"]))
    return long_options, entry


def read_launcher(files: list[Path], root: Path) -> tuple[dict, dict]:
    """(flags, dest defaults from set_defaults) defined in `files`; the last definition wins."""
    flags: dict = {}
    set_defaults: dict = {}
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        where = path.relative_to(root).as_posix()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            if node.func.attr == "add_argument":
                found = _flag_entry(node)
                if found is None:
                    continue
                options, entry = found
                entry["file"] = f"{where}:{node.lineno}"
                for option in options:
                    previous = flags.get(option[2:])
                    if previous is not None and previous.get("default") != entry.get("default"):
                        # Two definitions in one launcher (MindSpeed's legacy arguments.py and its
                        # features_manager): the later file is kept, the other is named.
                        entry = dict(entry, conflicts=f"{previous['file']} default {previous.get('default')!r}")
                    flags[option[2:]] = entry
            elif node.func.attr == "set_defaults":
                for kw in node.keywords:
                    value = _value(kw.value)
                    if kw.arg and value is not _UNKNOWN:
                        set_defaults[kw.arg] = {"default": value, "file": f"{where}:{node.lineno}"}
    return flags, set_defaults


def _python_files(root: Path, entries: list[str]) -> list[Path]:
    files: list[Path] = []
    for entry in entries:
        target = root / entry
        if target.is_file():
            files.append(target)
        elif target.is_dir():
            files.extend(sorted(target.rglob("*.py")))
    return files


def _version(root: Path, given: str | None) -> str:
    if given:
        return given
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "describe", "--tags", "--always"], capture_output=True, text=True, check=True
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def build(checkouts: dict) -> tuple[dict, dict]:
    """(sources, tables): per launcher, the flags it defines with their defaults.

    Each launcher's table holds only what it adds or redefines; a resolver looks a flag up in
    the most specific launcher first (MindSpeed-LLM, then MindSpeed, then Megatron).
    `parser.set_defaults(dest=...)` in a later launcher redefines the flag owning that dest.
    """
    sources: dict = {}
    tables: dict = {}
    known: dict = {}  # flag -> record in force so far
    for name, (repository, entries) in LAUNCHERS.items():
        if name not in checkouts:
            continue
        root, version = checkouts[name]
        files = _python_files(root, entries)
        if not files:
            raise SystemExit(f"gen_launcher_defaults: no argument files under {root} for {name}")
        flags, set_defaults = read_launcher(files, root)
        sources[name] = {"repository": repository, "version": _version(root, version), "flags": len(flags)}
        for dest, override in set_defaults.items():
            for flag, record in known.items():
                if record["dest"] == dest and flag not in flags and record.get("default") != override["default"]:
                    flags[flag] = dict(record, default=override["default"], file=override["file"])
        for flag, entry in list(flags.items()):
            previous = known.get(flag)
            if previous is not None and previous.get("default") != entry.get("default"):
                entry = flags[flag] = dict(entry, overrides=repr(previous.get("default")))
            known[flag] = entry
        tables[name] = flags
    return sources, tables


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def _toml_key(key: str) -> str:
    return key if key.replace("-", "").replace("_", "").isalnum() else json.dumps(key)


def render(sources: dict, tables: dict) -> str:
    lines = [
        "# Launcher flag defaults, generated by tools/gen_launcher_defaults.py from the parsers' own",
        "# add_argument / set_defaults calls. Do not edit by hand: regenerate.",
        "# One table per launcher with the flags it defines; a MindSpeed(-LLM) run looks a flag up in",
        "# its own table first. A flag without `default` defaults to None (not set); `file` is where",
        "# it is defined; `overrides` is the earlier launcher's default it replaces.",
        "",
    ]
    for name, source in sources.items():
        lines.append(f"[sources.{_toml_key(name)}]")
        lines.extend(f"{key} = {_toml_value(value)}" for key, value in source.items())
        lines.append("")
    for name, flags in tables.items():
        lines.append(f"[{_toml_key(name)}]")
        for flag in sorted(flags):
            record = flags[flag]
            fields = ", ".join(
                f"{key} = {_toml_value(record[key])}"
                for key in ("default", "default_expr", "action", "dest", "type", "nargs", "file", "overrides", "conflicts")
                if key in record
            )
            lines.append(f"{_toml_key(flag)} = {{ {fields} }}")
        lines.append("")
    return "\n".join(lines)


def _checkout(text: str) -> tuple[Path, str | None]:
    path, _, version = text.partition("@")
    root = Path(path).expanduser()
    if not root.is_dir():
        raise argparse.ArgumentTypeError(f"{root}: not a folder")
    return root, version or None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megatron", type=_checkout, required=True, help="Megatron-LM checkout DIR[@VERSION]")
    parser.add_argument("--mindspeed", type=_checkout, help="MindSpeed checkout DIR[@VERSION]")
    parser.add_argument("--mindspeed-llm", type=_checkout, help="MindSpeed-LLM checkout DIR[@VERSION]")
    parser.add_argument("-o", "--output", type=Path, help="Write here instead of stdout.")
    args = parser.parse_args(argv)
    checkouts = {
        name: value
        for name, value in (("megatron", args.megatron), ("mindspeed", args.mindspeed), ("mindspeed-llm", args.mindspeed_llm))
        if value is not None
    }
    text = render(*build(checkouts))
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
