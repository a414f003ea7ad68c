"""Settings a launch script passes: the flags of its training launch and the exports it runs with.

The engine's shell reader (`acclint.linter.shell`) has already expanded argument-block
variables, arrays, continuations and sourced files; each flag keeps the line it was written on.
"""

from __future__ import annotations

import os
from typing import Optional

from acclint.linter.shell import LaunchCommand, ShellScript
from acclint.linter.shell.model import is_flag
from acclint.setups import keys
from acclint.setups.record import Setting, Setup, Where
from acclint.setups.values import parse_text

# Signs that a script runs on Ascend (so MindSpeed's defaults apply to absent flags).
NPU_ENV_PREFIXES = ("HCCL_", "ASCEND_", "PYTORCH_NPU_", "ACL_", "MS_", "TASK_QUEUE_ENABLE", "CPU_AFFINITY_CONF")
NPU_LAUNCHERS = frozenset({"msrun"})
SOURCE_SEARCH_PARENTS = 3
# A launch is Megatron-style (Megatron's defaults apply) when it runs one of its entry scripts
# or passes flags only Megatron-style trainers take.
MEGATRON_ENTRIES = ("pretrain_", "posttrain_", "finetune_")
MEGATRON_MARKERS = frozenset(
    {"micro-batch-size", "global-batch-size", "tensor-model-parallel-size", "pipeline-model-parallel-size",
     "num-layers", "train-iters", "train-samples", "use-mcore-models"}
)


def extract_shell(script: ShellScript, display: str) -> tuple[Setup, Optional[LaunchCommand]]:
    """The setup of a launch script and the launch it was taken from (None if it has none)."""
    setup = Setup(path=display, kind="launch", files=[display])
    launch = training_launch(script)
    if launch is None:
        setup.problems.append(f"{display}: no training launch (torchrun, python, msrun, deepspeed, ...) found")
        return setup, None
    others = [other for other in script.launches if other is not launch and other.script]
    if others:
        lines = ", ".join(str(other.span.line) for other in others)
        setup.problems.append(f"{display}: {len(others) + 1} launches; compared the one at line "
                              f"{launch.span.line} (the others at {lines})")
    flags = launch.flags()
    for flag, found in flags.items():
        key = keys.normalise(flag)
        where = Where(display if found.span.path == script.path else found.span.path, found.span.line)
        words = _list_value(launch, flag, key) if found.value is not None else None
        if words:
            value, written = tuple(parse_text(word) for word in words), f"--{flag} {' '.join(words)}"
        else:
            value = True if found.value is None else parse_text(found.value)
            written = f"--{flag}" if found.value is None else f"--{flag} {found.value}"
        setup.put(Setting(key, value, where, written=written, known=found.known))
    environment = keys.knowledge()["environment"]
    for name, assignment in launch.effective_env().items():
        if name in environment:
            path = display if assignment.span.path == script.path else assignment.span.path
            setup.put(Setting(environment[name], parse_text(assignment.value or assignment.raw),
                              Where(path, assignment.span.line), written=f"{name}={assignment.raw}",
                              known=assignment.value is not None))
    setup.launcher = _launcher(script, launch, flags)
    return setup, launch


def _list_value(launch: LaunchCommand, flag: str, key: str) -> Optional[list]:
    """The words of a flag that takes several (argparse `nargs="*"`/`"+"` in the launcher tables:
    `--rampup-batch-size 32 32 1000000`), when it has more than one; the flag's last occurrence."""
    found = keys.launcher_flag("mindspeed-llm", key)  # the widest stack: every launcher's flags
    if found is None or found[1].get("nargs") not in ("*", "+"):
        return None
    args = launch.script_args
    starts = [i for i, arg in enumerate(args) if arg.text.lstrip("-") == flag and arg.text.startswith("-")]
    if not starts:
        return None
    words = []
    for arg in args[starts[-1] + 1:]:
        if is_flag(arg.text) or arg.text == "--":
            break
        words.append(arg.text)
    return words if len(words) > 1 else None


def training_launch(script: ShellScript) -> Optional[LaunchCommand]:
    """The launch that trains: the one running a script with the most arguments."""
    candidates = [launch for launch in script.launches if launch.script]
    if not candidates:
        return None
    return max(candidates, key=lambda launch: (len(launch.script_args), -launch.span.line))


def entry_script(script_path: str, launch: LaunchCommand) -> Optional[str]:
    """The Python file the launch runs, found beside the launch script or in a folder above it
    (Megatron-style scripts run from the repository root: `bash examples/x/train.sh`)."""
    written = launch.script or ""
    if not written.endswith(".py"):
        written = written.replace(".", "/") + ".py"  # `python -m pkg.train`
    if "$" in written or os.path.isabs(written):
        return written if os.path.isfile(written) else None
    folder = os.path.dirname(os.path.abspath(script_path))
    folders = [folder]
    for _ in range(SOURCE_SEARCH_PARENTS):
        folder = os.path.dirname(folder)
        folders.append(folder)
    folders.append(os.getcwd())  # last: two repositories diffed from one folder keep their own entries
    for base in dict.fromkeys(folders):
        candidate = os.path.normpath(os.path.join(base, written))
        if os.path.isfile(candidate):
            return candidate
    return None


def _launcher(script: ShellScript, launch: LaunchCommand, flags: dict) -> Optional[str]:
    """Whose defaults apply to flags this launch leaves out."""
    names = {keys.normalise(flag) for flag in flags}
    npu_only = keys.npu_only_flags()
    if names & keys.own_flags("mindspeed-llm"):
        return "mindspeed-llm"
    env_names = set(launch.effective_env()) | {a.name for a in script.env}
    on_npu = (
        launch.launcher in NPU_LAUNCHERS
        or bool(names & npu_only)
        or any(name.startswith(NPU_ENV_PREFIXES) for name in env_names)
        or any("ascend" in source.lower() for source in script.unresolved_sources + script.sourced)
    )
    if not (names & MEGATRON_MARKERS or os.path.basename(launch.script or "").startswith(MEGATRON_ENTRIES)):
        return None  # a script with its own argparse: its defaults come from its entry script
    return "mindspeed" if on_npu else "megatron"


def launcher_of_entry(program: Setup, launch: Setup) -> Optional[str]:
    """A launch of an entry script that imports Megatron / MindSpeed gets their defaults."""
    imported = program.imports
    if imported & {"mindspeed_llm"}:
        return "mindspeed-llm"
    if imported & {"mindspeed"}:
        return "mindspeed"
    if imported & {"megatron"}:
        return "megatron"
    return None
