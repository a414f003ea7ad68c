"""Whether the text report is coloured: the command line, then the conventions of the environment."""

from __future__ import annotations

import os
from typing import Callable, Mapping, Optional


def color_enabled(flag: Optional[bool], *, to_terminal_stream: bool, isatty: Callable[[], bool],
                  environ: Mapping[str, str] = os.environ) -> bool:
    """`--color`/`--no-color` win; else colour only a text report on stdout: never when NO_COLOR is
    set (no-color.org), always when FORCE_COLOR is set (force-color.org), otherwise on a terminal.
    Both variables count when set to anything but the empty string; NO_COLOR wins over FORCE_COLOR."""
    if flag is not None:
        return flag
    if not to_terminal_stream:
        return False
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    return isatty()
