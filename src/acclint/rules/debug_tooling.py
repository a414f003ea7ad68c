"""Category `debug-tooling`: the tools that compare GPU and NPU runs must themselves be set up right,
or the dump they produce compares the wrong step or nothing at all (docs/knowledge/guides.md#msprobe-for-pytorch: msprobe
PrecisionDebugger placement and config.json)."""

from __future__ import annotations

from functools import lru_cache

from acclint.knowledge import table
from acclint.linter.context import FileContext
from acclint.linter.facts import Call, FileFacts
from acclint.linter.rulebase import Example, Rule, RuleDoc
from acclint.rules.flow import calls_named, calls_with_method


@lru_cache(maxsize=1)
def _msprobe() -> dict:
    return table("msprobe")


def _debuggers() -> frozenset:
    return frozenset(_msprobe()["debuggers"])


def _constructions(facts: FileFacts) -> list:
    return calls_named(facts, _debuggers())


def _receivers(facts: FileFacts) -> set:
    """Names the file binds a PrecisionDebugger to (`debugger = ...`, `self.debugger = ...`)."""
    names = {c.assigned_to for c in _constructions(facts) if c.assigned_to}
    names.update(a.target for a in facts.assignments if a.value.base_call and a.value.base_names & _debuggers())
    return names


def _debugger_calls(facts: FileFacts, method: str) -> list:
    receivers = _receivers(facts)
    found = []
    for call in calls_with_method(facts, (method,)):
        owner = call.callee.rsplit(".", 1)[0]
        # `PrecisionDebugger.start()` (class-level use, docs/knowledge/guides.md#msprobe-for-pytorch) resolves through the import.
        if owner in receivers or any(n.rsplit(".", 1)[0] in _debuggers() for n in call.names):
            found.append(call)
    return found


class DebuggerPerStep(Rule):
    code = "ACL801"
    name = "precision-debugger-per-step"
    category = "debug-tooling"
    severity = "warning"
    summary = "msprobe PrecisionDebugger constructed inside a loop or a per-step function"
    doc = RuleDoc(
        what="Reports `PrecisionDebugger(...)` (msprobe.pytorch / msprobe.mindspore) constructed inside a `for`/"
        "`while` body or inside a function that runs once per step (`train_step`, `forward_step`, `construct`, ...).",
        why="The debugger is built once, before the loop (the msprobe guide warns against building it in the loop, "
        "docs/knowledge/guides.md#msprobe-for-pytorch): it "
        "registers its hooks and its step counter at construction. Rebuilt every step, hooks stack up, the step "
        "counter restarts, and the `step` list in config.json selects the wrong iterations, so the GPU and NPU "
        "dumps being compared are not the same step.",
        fix="Construct it once after the imports / before the training loop; call start()/stop()/step() in the loop.",
        references=("docs/knowledge/guides.md#msprobe-for-pytorch", "docs/knowledge/guides.md#the-checklist"),
    )
    invalid = (
        Example.script("""
            from msprobe.pytorch import PrecisionDebugger


            def train(model, loader, optimizer):
                for batch in loader:
                    debugger = PrecisionDebugger(config_path="./config.json")  # expect: ACL801
                    debugger.start()
                    model(batch).sum().backward()
                    optimizer.step()
                    debugger.stop()
                    debugger.step()
        """, "built in the loop"),
        Example.script("""
            from msprobe.mindspore import PrecisionDebugger


            def train_step(net, data):
                debugger = PrecisionDebugger(config_path="./config.json")  # expect: ACL801
                debugger.start(net)
                out = net(data)
                debugger.stop()
                debugger.step()
                return out
        """, "built in a per-step function"),
    )
    valid = (
        Example.script("""
            from msprobe.pytorch import PrecisionDebugger

            debugger = PrecisionDebugger(config_path="./config.json")


            def train(model, loader, optimizer):
                for batch in loader:
                    debugger.start()
                    model(batch).sum().backward()
                    optimizer.step()
                    debugger.stop()
                    debugger.step()
        """, "the placement the tuning guide shows"),
    )

    def check_file(self, ctx: FileContext) -> None:
        steps = set(_msprobe()["step_functions"])
        for call in _constructions(ctx.facts):
            function = call.scope.rsplit(".", 1)[-1]
            if call.in_loop:
                where = "inside a loop"
            elif function in steps:
                where = f"inside `{call.scope}`, which runs every step"
            else:
                continue
            ctx.report(self, call.node, f"PrecisionDebugger is constructed {where}: it must be built once before "
                       "the training loop, or its hooks and step counter restart every iteration.",
                       fix="construct it once before the loop")


class DebuggerStartStopStep(Rule):
    code = "ACL802"
    name = "precision-debugger-start-stop-step"
    category = "debug-tooling"
    severity = "warning"
    summary = "PrecisionDebugger start() without stop(), or started in a loop without step()"
    doc = RuleDoc(
        what="Reports `debugger.start()` in a file that never calls `debugger.stop()`, and `start()` inside a loop "
        "when the file never calls `debugger.step()`.",
        why="msprobe writes a step's dump at `stop()`, and `step()` advances its step counter (\"在训练循环的最后需要"
        "重置工具\"). Without stop() nothing is flushed; without step() every iteration is recorded as step 0, so "
        "`\"step\": [1]` in config.json never matches and the GPU/NPU comparison uses the wrong iteration.",
        fix="In the loop: `debugger.start()` before the step, `debugger.stop()` and `debugger.step()` after it.",
        references=("docs/knowledge/guides.md#the-checklist", "docs/knowledge/guides.md#the-swiglu-case", "docs/knowledge/guides.md#msprobe-for-pytorch"),
    )
    invalid = (
        Example.script("""
            from msprobe.pytorch import PrecisionDebugger

            debugger = PrecisionDebugger(config_path="./config.json")


            def train(model, loader):
                for batch in loader:
                    debugger.start()  # expect: ACL802
                    model(batch).sum().backward()
                    debugger.stop()
        """, "no step() in the loop"),
        Example.script("""
            from msprobe.mindspore import PrecisionDebugger


            class Trainer:
                def __init__(self):
                    self.debugger = PrecisionDebugger(config_path="./config.json")

                def fit(self, net, data):
                    self.debugger.start(net)  # expect: ACL802
                    return net(data)
        """, "start() without stop()"),
    )
    valid = (
        Example.script("""
            from msprobe.pytorch import PrecisionDebugger

            debugger = PrecisionDebugger(config_path="./config_pt.json")


            def pretrain(args, train_step, iteration=0):
                dump_step, do_dump = 1, True
                while iteration < args.train_iters:
                    if do_dump and iteration == dump_step:
                        debugger.start()
                    train_step()
                    if do_dump and iteration == dump_step:
                        debugger.stop()
                        debugger.step()
                    iteration += 1
        """, "the placement the tuning guide shows"),
        Example.script("""
            from msprobe.pytorch import PrecisionDebugger

            debugger = PrecisionDebugger(config_path="./config.json", dump_path="./npu_dump")
            debugger.start()
            debugger.stop()
        """, "no loop: step() is not needed (the msprobe guide)"),
    )

    def check_file(self, ctx: FileContext) -> None:
        facts = ctx.facts
        starts = _debugger_calls(facts, "start")
        if not starts:
            return
        stops, steps = _debugger_calls(facts, "stop"), _debugger_calls(facts, "step")
        for call in starts:
            if not stops:
                ctx.report(self, call.node, "the debugger is started but never stopped: msprobe writes the dump "
                           "at stop().", fix="debugger.stop() after the code to dump")
            elif call.in_loop and not steps:
                ctx.report(self, call.node, "the debugger is started in a loop but step() is never called: every "
                           "iteration is recorded as step 0 and the config's `step` list never matches.",
                           fix="debugger.step() at the end of each iteration")


class MsprobeConfig(Rule):
    code = "ACL803"
    name = "msprobe-config"
    category = "debug-tooling"
    severity = "warning"
    summary = "An msprobe config.json with an unknown task/level/data_mode/summary_mode or a misplaced field"
    doc = RuleDoc(
        what="Checks JSON files that look like msprobe configs (a `dump_path` and a `task` or `level`): `task` "
        "and `level` are known values, `step` and `rank` are lists of integers, the task's own section exists, "
        "`scope` holds two names (a range), `data_mode` values are known and `all` stands alone, `summary_mode` "
        "is `statistics` or `md5`.",
        why="msprobe reads its settings from the section named after the task (`\"tensor\": {...}` for task "
        "tensor); fields in another section or with a misspelt value are ignored or rejected, so the dump covers "
        "everything (hours and terabytes) or nothing, and the GPU and NPU dumps no longer line up for compare. "
        "Documented values: task statistics/tensor/overflow_check/free_benchmark/run_ut; level L0 (modules), "
        "L1 (APIs), L2 (kernels), mix (L0+L1).",
        fix="Use the documented values and put scope/list/data_mode/summary_mode in the task's section, e.g. "
        "`{\"task\": \"statistics\", \"dump_path\": \"./dump\", \"rank\": [], \"step\": [0], \"level\": \"L0\", "
        "\"statistics\": {\"scope\": [], \"list\": [], \"data_mode\": [\"all\"], \"summary_mode\": \"md5\"}}`.",
        references=("docs/knowledge/guides.md#the-swiglu-case", "docs/knowledge/guides.md#msprobe-for-pytorch", "mindstudio-probe 1.0.3 msprobe/config/README.md"),
    )
    invalid = (
        Example({"config.json": """
            {
                "task": "tensors",  # expect: ACL803
                "dump_path": "./dump",
                "rank": [],
                "step": 0,  # expect: ACL803
                "level": "L3",  # expect: ACL803
                "tensor": {
                    "scope": ["Cell.network.layers.9.mlp.RowParallelLinear.backward.0"],  # expect: ACL803
                    "list": [],
                    "data_mode": ["all", "forward"]  # expect: ACL803
                }
            }
        """}, "misspelt task and level, a scalar step, a one-ended scope, all with forward"),
        Example({"config.json": """
            {
                "task": "statistics",
                "dump_path": "./dump",
                "rank": [],
                "step": [0],
                "level": "L0",
                "tensor": {"scope": [], "list": [], "data_mode": ["all"]}  # expect: ACL803
            }
        """}, "settings in another task's section"),
    )
    valid = (
        Example({"config.json": """
            {
                "task": "statistics",
                "dump_path": "/path/to/dump/data",
                "rank": [],
                "step": [0],
                "level": "L0",
                "statistics": {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": "md5"}
            }
        """}, "md5 mode, as the msprobe guide configures it"),
        Example({"config.json": """
            {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32}
        """}, "a model config: not msprobe's"),
    )

    def check_config(self, ctx: FileContext, config) -> None:
        if config.kind != "msprobe":
            return
        for path, message in _config_problems(config.data):
            ctx.report(self, config.node(*path), message)


def _config_problems(data: dict) -> list:
    spec = _msprobe()["config"]
    problems = []
    task = data.get("task", "statistics")
    if task not in spec["tasks"]:
        problems.append((("task",), f"task {task!r} is not an msprobe task ({', '.join(spec['tasks'])})."))
    level = data.get("level", "L1")
    if level not in spec["levels"]:
        problems.append((("level",), f"level {level!r} is not an msprobe level ({', '.join(spec['levels'])})."))
    for key in ("step", "rank"):
        value = data.get(key)
        if key in data and not (isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool)
                                                               for v in value)):
            problems.append(((key,), f"{key} must be a list of integers (e.g. [0]); got {value!r}."))
    if task in spec["sectioned_tasks"] and task in spec["tasks"]:
        others = [t for t in spec["sectioned_tasks"] if t != task and isinstance(data.get(t), dict)]
        if not isinstance(data.get(task), dict) and others:
            problems.append(((others[0],), f"task is {task!r} but the settings are in the {others[0]!r} section, "
                             f"which msprobe ignores for this task."))
    for section in [s for s in spec["sectioned_tasks"] if isinstance(data.get(s), dict)]:
        problems.extend(_section_problems(section, data[section], spec))
    return problems


def _section_problems(section: str, body: dict, spec: dict) -> list:
    problems = []
    scope = body.get("scope")
    if isinstance(scope, list) and len(scope) not in (0, 2):
        problems.append(((section, "scope"), f"scope holds {len(scope)} name(s): it is a range, give two (the first "
                         "and the last module/API to dump) or none."))
    modes = body.get("data_mode")
    if modes is not None:
        if not isinstance(modes, list):
            problems.append(((section, "data_mode"), f"data_mode must be a list, e.g. [\"all\"]; got {modes!r}."))
        else:
            unknown = [m for m in modes if m not in spec["data_modes"]]
            if unknown:
                problems.append(((section, "data_mode"), f"unknown data_mode {unknown} "
                                 f"(known: {', '.join(spec['data_modes'])})."))
            elif "all" in modes and len(modes) > 1:
                problems.append(((section, "data_mode"), "data_mode \"all\" must stand alone."))
    summary = body.get("summary_mode")
    if summary is not None and summary not in spec["summary_modes"]:
        problems.append(((section, "summary_mode"), f"summary_mode {summary!r} is not one of "
                         f"{', '.join(spec['summary_modes'])}."))
    return problems


RULES = [DebuggerPerStep(), DebuggerStartStopStep(), MsprobeConfig()]
