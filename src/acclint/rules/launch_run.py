"""What one launch line starts: how many processes, and on which device (knowledge/npu_launch.toml).

A collective reduces something only when a run has several processes, and HCCL is its back end only
on Ascend. Both are read from what the launch line and the configuration it loads say:

- the processes: a launcher's own count (`torchrun --nproc_per_node 1`, `mpirun -n 8`, `msrun
  --worker_num 8`), as a number once the script's variables are expanded; for a plain `python` line, the
  world size the script exports for it (`RANK_SIZE=1`), else one process when no loop repeats the line
  and the program spawns no workers itself (`torch.multiprocessing.spawn`);
- the device: a launch flag that names it (`--device_target GPU`), else a top-level key of the
  configuration file the run loads (passed on the line, or the default of the program's `--config_path`
  option: `device_target: GPU` in a model zoo's `default_config_gpu.yaml`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from acclint.knowledge import table
from acclint.linter.causes import run_key
from acclint.linter.runconfig import RunConfig


@lru_cache(maxsize=1)
def _hints() -> dict:
    return table("npu_launch")


@dataclass(frozen=True)
class Processes:
    """How many processes a launch line's run has, and the words that say so."""

    count: int
    evidence: str


def processes(launch, shown_at: str) -> Optional[Processes]:
    """The number of processes the run of `launch` has, when the line or its environment writes it as a
    number; None when it does not (a count read from a variable acclint cannot expand, a launcher's
    default). `shown_at` is "run.sh:3", where the line is."""
    counts = _hints()["process_counts"].get(launch.launcher)
    if counts is None:
        return _world_size(launch, shown_at)
    flags = launch.launcher_flags()
    per_node = _number(flags, counts["count"])
    if per_node is None:
        return None
    nodes = _number(flags, counts.get("nodes", ()))
    if nodes is None and any(name in flags for name in counts.get("nodes", ())):
        return None  # a node count acclint cannot read
    count = per_node[0] * (nodes[0] if nodes else 1)
    said = per_node[1] + (f" {nodes[1]}" if nodes else "")
    return Processes(count, f"{launch.launcher} {said} at {shown_at} starts {count} process{'es' * (count != 1)}")


def _number(flags: dict, names) -> Optional[tuple]:
    """(value, "--name value") of the first of `names` the launch passes as a plain number."""
    for name in names:
        flag = flags.get(name)
        if flag is not None:
            text = (flag.value or "").strip("'\"")
            if not flag.known or not text.isdigit():
                return None
            dashes = "-" if len(name) <= 2 else "--"
            return int(text), f"{dashes}{name} {text}"
    return None


def _world_size(launch, shown_at: str) -> Optional[Processes]:
    """A plain `python` line starts one process; the run's size is the world size exported for it."""
    if launch.launcher in _hints()["multi_process_launchers"]:
        return None
    env = launch.effective_env()
    for name in _hints()["world_size_env"]:
        entry = env.get(name)
        if entry is not None and (entry.value or "").strip("'\"").isdigit():
            count = int(entry.value.strip("'\""))
            return Processes(count, f"{name}={count} (line {entry.span.line}) for the launch at {shown_at}")
    return None


def one_process(launch, shown_at: str, program=None, shell=None) -> Optional[str]:
    """Evidence that the run of `launch` is a single process, where no collective reduces anything. A plain
    `python` line that exports no world size is one when no loop repeats it or another line of its run in
    `shell` (rank 0 in the foreground, the others in a loop: linter.causes.run_key), and `program` (the
    program it starts, when known) starts no workers of its own."""
    found = processes(launch, shown_at)
    if found is not None:
        return found.evidence if found.count == 1 else None
    if program is None or launch.launcher in _hints()["multi_process_launchers"]:
        return None
    run = run_key(launch)
    if any(line.repeated for line in (shell.script.launches if shell is not None else ()) if run_key(line) == run) \
            or launch.repeated:
        return None
    env = launch.effective_env()
    if any(name in env for name in _hints()["world_size_env"]):
        return None  # a world size acclint cannot read
    spawners = frozenset(_hints()["process_spawners"])
    if any(step.fact.names & spawners for step in program.calls()):
        return None
    return (f"one `python` process at {shown_at}, in no loop, with no world size exported, and "
            f"{program.entry.path} starts no workers of its own")


def other_device(ctx, shell, launch) -> Optional[str]:
    """What makes the run of `launch` select another device than the NPU, or None: a device flag on the line,
    else a device key of the configuration file the run loads (when no flag names the device)."""
    words, devices = tuple(_hints()["device_flag_words"]), frozenset(_hints()["other_devices"])
    npu = frozenset(_hints()["npu_devices"])
    named = False  # a flag names the device (`--device_target Ascend`): the configuration's key does not count
    for name, flag in {**launch.launcher_flags(), **launch.flags()}.items():
        value = (flag.value or "").strip("'\"").lower()
        if any(word in name.lower() for word in words) and value in devices | npu:
            named = True
            if value in devices:
                return f"--{name} {flag.value}"
    if named or ctx is None or ctx.program is None:
        return None
    return _configured_device(ctx, shell, launch, words, devices)


def _configured_device(ctx, shell, launch, words: tuple, devices: frozenset) -> Optional[str]:
    label = f"{shell.path}:{launch.span.line}"
    program, key = ctx.program, ("device", ctx.program.entry.abspath, label)
    config = ctx.project.run_configs.get(key)
    if config is None:
        config = ctx.project.run_configs[key] = RunConfig(
            ctx.project, program.entry, program.files, [(label, launch, ctx.project.launch_folders(shell.abspath))],
            lenient=True)
    seen = set()
    for values, display, loaded_by in reversed(config.runs[0].configs):  # the last loaded overrides
        for path, entry in values.values.items():
            key = path[0]
            if len(path) != 1 or key in seen or not any(word in key.lower() for word in words):
                continue
            seen.add(key)
            if isinstance(entry.value, str) and entry.value.lower() in devices:
                return f"{key}: {entry.value} in {display}:{entry.line} ({loaded_by})"
    return None
