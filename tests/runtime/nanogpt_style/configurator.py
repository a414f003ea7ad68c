"""Exec'd by train.py: a config file given as a bare argument, then --key=value overrides of its globals."""

import sys
from ast import literal_eval

for arg in sys.argv[1:]:
    if not arg.startswith("--"):
        with open(arg) as handle:
            exec(handle.read())
        continue
    key, _, value = arg[2:].partition("=")
    if key not in globals():
        raise ValueError(f"unknown config key: {key}")
    try:
        parsed = literal_eval(value)
    except (SyntaxError, ValueError):
        parsed = value
    if type(parsed) is not type(globals()[key]):
        raise TypeError(f"{key} should be {type(globals()[key]).__name__}, got {value!r}")
    globals()[key] = parsed
