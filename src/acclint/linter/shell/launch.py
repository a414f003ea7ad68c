"""Recognising a training launch in a command's expanded words (torchrun, msrun, python, ...)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

from acclint.linter.shell.model import Argument

PYTHON = re.compile(r"python(\d+(\.\d+)*)?")
# Commands that run the next command: `nohup torchrun ..`, `srun -N 1 python ..`, `env A=1 python ..`.
WRAPPERS = frozenset(
    {"nohup", "exec", "time", "command", "env", "numactl", "taskset", "srun", "stdbuf", "timeout", "nice", "setsid"}
)
FILE_LAUNCHERS = {"torchrun": "torchrun", "msrun": "msrun", "deepspeed": "deepspeed"}
MPI = frozenset({"mpirun", "mpiexec"})
# `python -m <module>` that is itself a launcher, and its normalised name.
LAUNCHER_MODULES = {"torch.distributed.launch": "torch.distributed.launch", "torch.distributed.run": "torchrun"}
TOOLING_MODULES = frozenset({"pip", "venv", "ensurepip"})  # `python -m pip install ..` trains nothing
PYTHON_VALUE_OPTIONS = frozenset({"-W", "-X"})  # interpreter options that take the next word
# Launcher options that take no value; any other option is assumed to take the next word
# (only used when no `*.py` word shows which one the script is).
LAUNCHER_SWITCHES = frozenset(
    {
        "-m", "--module", "--standalone", "--no-python", "--no_python", "--run-path", "--run_path",
        "--use-env", "--use_env", "--no_local_rank", "--no-local-rank", "--multi_gpu", "--cpu",
    }
)  # fmt: skip


@dataclass(frozen=True)
class LaunchParts:
    launcher: str
    script: Optional[str]
    launcher_args: tuple[Argument, ...]
    script_args: tuple[Argument, ...]
    wrapper_env: tuple[Argument, ...]  # `NAME=value` words given to an `env` wrapper


def command_name(text: str) -> str:
    return text.rstrip("/").rsplit("/", 1)[-1]


def is_relevant_name(text: str) -> bool:
    """Could a command starting with this word be a launch (worth expanding its arguments)?"""
    name = command_name(text)
    return name in WRAPPERS or name in MPI or name in FILE_LAUNCHERS or name == "accelerate" or bool(
        PYTHON.fullmatch(name)
    )


def parse_launch(words: Sequence[Argument]) -> Optional[LaunchParts]:
    """The launch in a command's words (prefix assignments already removed), or None."""
    found = _skip_wrappers(words)
    if found is None:
        return None
    index, wrapper_env = found
    name = command_name(words[index].text)
    parts: Optional[LaunchParts] = None
    if PYTHON.fullmatch(name):
        parts = _python(words, index)
    elif name in FILE_LAUNCHERS:
        parts = _by_script_file(FILE_LAUNCHERS[name], words, index + 1)
    elif name == "accelerate" and index + 1 < len(words) and words[index + 1].text == "launch":
        parts = _by_script_file("accelerate", words, index + 2)
    elif name in MPI:
        parts = _mpi(words, index + 1)
    if parts is None:
        return None
    return LaunchParts(parts.launcher, parts.script, parts.launcher_args, parts.script_args, wrapper_env)


def _skip_wrappers(words: Sequence[Argument]) -> Optional[tuple[int, tuple[Argument, ...]]]:
    """Index of the launcher word after any wrappers (and their options), with `env`'s NAME=value."""
    index, env = 0, []
    in_wrapper = False
    while index < len(words):
        text = words[index].text
        name = command_name(text)
        if name in WRAPPERS:
            in_wrapper = True
        elif is_relevant_name(text):
            return index, tuple(env)
        elif not in_wrapper or text.endswith((".py", ".sh")):
            return None  # a different command, or a wrapper running something we do not know
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", text, re.DOTALL):
            env.append(words[index])
        index += 1
    return None


def _python(words: Sequence[Argument], index: int) -> Optional[LaunchParts]:
    """`python [options] script.py args`, `python -m module args`, `python -m torch.distributed.launch ..`."""
    cursor = index + 1
    while cursor < len(words):
        text = words[cursor].text
        if text == "-m" or (text.startswith("-m") and not text.startswith("--")):
            module_at = cursor + 1 if text == "-m" else cursor
            if module_at >= len(words):
                return None
            module = words[module_at].text if text == "-m" else text[2:]
            return _python_module(words, index, cursor, module_at, module)
        if text == "-" or text.startswith("-c"):
            return None  # code from stdin or the command line: not a script we can follow
        if text.startswith("-"):
            cursor += 2 if text in PYTHON_VALUE_OPTIONS else 1
            continue
        return LaunchParts("python", text, tuple(words[index + 1 : cursor]), tuple(words[cursor + 1 :]), ())
    return None


def _python_module(
    words: Sequence[Argument], index: int, option_at: int, module_at: int, module: str
) -> Optional[LaunchParts]:
    interpreter_options = tuple(words[index + 1 : option_at])
    if module in LAUNCHER_MODULES:
        parts = _by_script_file(LAUNCHER_MODULES[module], words, module_at + 1)
        launcher_args = interpreter_options + parts.launcher_args
        return LaunchParts(parts.launcher, parts.script, launcher_args, parts.script_args, ())
    if module.split(".")[0] in TOOLING_MODULES:
        return None
    return LaunchParts("python", module, interpreter_options, tuple(words[module_at + 1 :]), ())


def _by_script_file(launcher: str, words: Sequence[Argument], start: int) -> LaunchParts:
    """A launcher whose own options come first: the script is the first `*.py` word.

    Options such as `--nproc_per_node 8` take values, so the first positional word is not
    reliably the script; `.py` is. Without one, fall back to skipping options and their values.
    """
    script_at = next((i for i in range(start, len(words)) if words[i].text.endswith(".py")), None)
    if script_at is None:
        script_at = _first_positional(words, start)
    if script_at is None:
        return LaunchParts(launcher, None, tuple(words[start:]), (), ())
    launcher_args, script_args = tuple(words[start:script_at]), tuple(words[script_at + 1 :])
    return LaunchParts(launcher, words[script_at].text, launcher_args, script_args, ())


def _first_positional(words: Sequence[Argument], start: int) -> Optional[int]:
    cursor = start
    while cursor < len(words):
        text = words[cursor].text
        if not text.startswith("-"):
            return cursor
        cursor += 1 if "=" in text or text in LAUNCHER_SWITCHES else 2
    return None


def _mpi(words: Sequence[Argument], start: int) -> Optional[LaunchParts]:
    """`mpirun -n 8 python train.py ..`: the interpreter and its options count as launcher args."""
    python_at = next((i for i in range(start, len(words)) if PYTHON.fullmatch(command_name(words[i].text))), None)
    if python_at is None:
        return _by_script_file("mpirun", words, start)
    inner = _python(words, python_at)
    if inner is None:
        return None
    mpi_options = tuple(words[start:python_at]) + (words[python_at],)
    return LaunchParts("mpirun", inner.script, mpi_options + inner.launcher_args, inner.script_args, ())
