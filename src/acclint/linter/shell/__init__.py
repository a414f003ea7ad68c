"""The launch-script reader (tree-sitter-bash): `read_shell_script` and the records it returns."""

from acclint.linter.shell.model import (
    Argument,
    EnvAssignment,
    FlagValue,
    LaunchCommand,
    ShellReadError,
    ShellScript,
    Span,
)
from acclint.linter.shell.reader import read_shell_script

__all__ = [
    "Argument",
    "EnvAssignment",
    "FlagValue",
    "LaunchCommand",
    "ShellReadError",
    "ShellScript",
    "Span",
    "read_shell_script",
]
