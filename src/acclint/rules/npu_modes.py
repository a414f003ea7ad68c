"""Category `mixed-precision`: Ascend numerics modes written outside the model code (docs/knowledge/numerics-modes.md,
knowledge/npu_modes.toml). The operator precision mode decides whether float32 matmuls stay
float32, the implementation mode picks precise or fast kernels, and the overflow mode decides
whether Inf/NaN exist at all. The GPU run has none of these switches: it computes what the code says.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator, Optional

from acclint.knowledge import table
from acclint.linter.context import FileContext, ProgramContext
from acclint.linter.facts import FileFacts
from acclint.linter.options import option_dicts
from acclint.linter.rulebase import Example, RuleDoc
from acclint.rules.base import ExplicitRule, ProgramRule, Written
from acclint.rules.flow import cached, calls_named, calls_with_method
from acclint.rules.program_facts import ProgramFacts


@lru_cache(maxsize=1)
def _modes() -> dict:
    return table("npu_modes")


@dataclass(frozen=True)
class ModeWrite:
    """One numerics mode written in a file: where, which option, the value as written."""

    node: int
    option: str  # "precision" | "impl"
    key: str  # as written: "ACL_PRECISION_MODE", "precision_mode", ...
    value: Optional[str]  # None when not a literal (`args.precision_mode`): set, to something unknown here
    op_list: Optional[str] = None  # ACL_OPTYPELIST_FOR_IMPLMODE beside an implementation mode


def mode_writes(facts: FileFacts) -> list:
    """The precision and implementation modes a Python file writes, once per file."""
    return cached(facts, "npu-mode-writes", _mode_writes)


def _mode_writes(facts: FileFacts) -> list:
    precision = _modes()["precision"]
    found: list = []
    for call in calls_named(facts, precision["set_option"]):
        arg = call.arg("option", 0)
        if arg is not None and not arg.star:  # `set_option(**kwargs)`: nothing to read
            found.extend(_from_dicts(option_dicts(facts, call, arg.value), precision["option_keys"]))
    for call in calls_named(facts, precision["set_context"]):
        arg = call.arg(precision["ascend_config_keyword"])
        if arg is not None and not arg.star:
            found.extend(_from_dicts(option_dicts(facts, call, arg.value), precision["context_keys"]))
    for call in calls_named(facts, precision["calls"]):
        arg = call.arg("mode", 0)
        if arg is not None and not arg.star:
            value = arg.value.literal
            found.append(ModeWrite(call.node, "precision", call.callee.rsplit(".", 1)[-1],
                                   value if isinstance(value, str) else None))
    return found


def _from_dicts(dicts: list, precision_keys: list) -> Iterator[ModeWrite]:
    impl = _modes()["impl"]
    impl_keys = {impl["option_key"], *impl["context_keys"]}
    op_list = next((d[impl["op_list_key"]] for _, d in dicts if isinstance(d.get(impl["op_list_key"]), str)), None)
    for node, options in dicts:
        for key, value in _flatten(options):
            value = value if isinstance(value, str) else None
            if key in precision_keys:
                yield ModeWrite(node, "precision", key, value)
            elif key in impl_keys:
                yield ModeWrite(node, "impl", key, value, op_list)


def _flatten(options: dict) -> Iterator[tuple]:
    """Keys of a dict and of the dicts nested in it (MindSpore `ge_options={"global": {...}}`)."""
    for key, value in options.items():
        if isinstance(value, dict):
            yield from _flatten(value)
        else:
            yield str(key), value


def _leaf_in(path: str, keys: list) -> bool:
    """A YAML key path ends with one of `keys` (which may hold dots: `ge.opSelectImplmode`)."""
    return any(path == key or path.endswith("." + key) for key in keys)


def _lowering(value: Optional[str]) -> Optional[dict]:
    entry = _modes()["modes"].get(value.strip().lower()) if value is not None else None
    return entry if entry is not None and entry["lowers"] else None


def _bits(dtype: str) -> str:
    mantissa = _modes()["mantissa"]
    parts = [f"{name}'s {bits}-bit mantissa" for name, bits in mantissa.items() if name in dtype and name != "float32"]
    return ", ".join(parts) or dtype


def _lowering_message(key: str, value: str, entry: dict) -> str:
    return (f"`{key}={value}` makes the NPU compute a float32 model in {entry['computes']} ({_bits(entry['computes'])} "
            f"against float32's 23 bits) while the GPU run keeps float32: {entry['detail']}.")


_PRECISION_FIX = ('torch.npu.set_option({"ACL_PRECISION_MODE": "must_keep_origin_dtype"}) '
                  '(MindSpore: precision_mode="must_keep_origin_dtype") while aligning accuracy')


class PrecisionModeLowersFp32(ExplicitRule):
    code = "ACL606"
    name = "npu-precision-mode-lowers-fp32"
    category = "mixed-precision"
    severity = "warning"
    summary = "An Ascend precision mode that runs float32 operators in float16/bfloat16"
    doc = RuleDoc(
        what="Reports an Ascend operator precision mode that lowers float32: `ACL_PRECISION_MODE` / "
        "`ACL_PRECISION_MODE_V2` in a torch_npu `set_option` dict (under any alias, written inline, in a "
        "variable, a module-level constant or key by key), MindSpore `set_context(ascend_config={\"precision_mode\": "
        "...})`, `mindspore.device_context.ascend.op_precision.precision_mode(...)`, and `precision_mode` in a "
        "MindFormers-style YAML config. Lowering modes: `allow_fp32_to_fp16`, `force_fp16`, `fp16`, "
        "`allow_mix_precision*`, `mixed_float16`/`mixed_bfloat16`, `allow_fp32_to_bf16`, `cube_fp16in_fp32out`. "
        "A value passed in from the command line (`args.precision_mode`) is not read: acclint cannot know it.",
        why="The GPU run computes a float32 model in float32 (23-bit mantissa). Under `allow_fp32_to_fp16` the NPU "
        "runs every matrix operator (MatMul, Conv) in float16, a 10-bit mantissa (relative step 9.8e-4 against "
        "1.2e-7) and a range that ends at 65504; `force_fp16` lowers every operator that supports float16; the bf16 "
        "modes keep the range but only 7 mantissa bits. The loss curves separate while both runs are 'float32' on "
        "paper. `allow_fp32_to_fp16` is also the CANN default on the Atlas training series (910A class).",
        fix="`torch.npu.set_option({\"ACL_PRECISION_MODE\": \"must_keep_origin_dtype\"})` (V2: `\"origin\"`), "
        "`mindspore.device_context.ascend.op_precision.precision_mode(\"must_keep_origin_dtype\")` or "
        "`precision_mode: \"must_keep_origin_dtype\"` in the YAML, while aligning accuracy. Lower precision on "
        "purpose with autocast on both sides instead, so both runs compute in the same format.",
        references=("docs/knowledge/numerics-modes.md#precision-mode", "CANN aclCompileOpt (aclcppdevg_03_1371)",
                    "MindSpore device_context.ascend.op_precision.precision_mode"),
    )
    invalid = (
        Example.script("""
            import torch
            import torch_npu

            option = {}
            option["ACL_PRECISION_MODE"] = "allow_fp32_to_fp16"  # expect: ACL606
            option["NPU_FUZZY_COMPILE_BLACKLIST"] = "BNTrainingUpdate"
            torch.npu.set_option(option)
        """, "an options dict built key by key (the form Ascend's model zoo uses)"),
        Example.script("""
            import torch_npu
            from torch_npu.npu import set_option

            NPU_OPTIONS = {"ACL_PRECISION_MODE_V2": "fp16"}


            def setup():
                set_option(NPU_OPTIONS)  # expect: ACL606
        """, "set_option imported by name, options in a module-level constant"),
        Example.script("""
            import mindspore as ms

            ms.set_context(device_target="Ascend", ascend_config={"precision_mode": "force_fp16"})  # expect: ACL606
            ms.device_context.ascend.op_precision.precision_mode("allow_mix_precision_bf16")  # expect: ACL606
        """, "MindSpore: set_context and device_context"),
        Example({"configs/llama2/pretrain_llama2_7b.yaml": """
            run_mode: 'train'
            context:
              mode: 0
              device_target: "Ascend"
              ascend_config:
                precision_mode: "allow_fp32_to_fp16"  # expect: ACL606
        """}, "a MindFormers-style YAML config"),
    )
    valid = (
        Example.script("""
            import torch
            import torch_npu

            option = {}
            option["ACL_PRECISION_MODE"] = "must_keep_origin_dtype"
            torch.npu.set_option(option)
        """, "keeps float32"),
        Example.script("""
            import argparse
            import torch
            import torch_npu

            parser = argparse.ArgumentParser()
            parser.add_argument("--precision_mode", default="allow_mix_precision")
            args = parser.parse_args()
            option = {"ACL_PRECISION_MODE": args.precision_mode}
            torch.npu.set_option(option)
        """, "a value passed on from the command line: not known here"),
        Example.script("""
            import json
            import torch
            import torch_npu


            def configure(path, **kwargs):
                torch.npu.set_option(json.load(open(path)))
                torch.npu.set_option(**kwargs)
        """, "options built at run time"),
        Example({"configs/llama2/finetune_llama2_7b.yaml": """
            context:
              device_target: "Ascend"
              ascend_config:
                precision_mode: "must_keep_origin_dtype"
        """}, "a MindFormers YAML that keeps float32"),
    )

    def written(self, facts: FileFacts) -> Iterator[Written]:
        for write in mode_writes(facts):
            entry = _lowering(write.value) if write.option == "precision" else None
            if entry is not None:
                yield Written(write.node, _lowering_message(write.key, write.value, entry), _PRECISION_FIX)

    def check_config(self, ctx: FileContext, config) -> None:
        if config.kind != "ascend-yaml":
            return
        for path, value in config.data.items():
            entry = _lowering(value) if _leaf_in(path, _modes()["precision"]["yaml_keys"]) else None
            if entry is not None:
                ctx.report(self, config.node(path), _lowering_message(path, value, entry), fix=_PRECISION_FIX)


def _families_text() -> str:
    families = _modes()["families"]
    return "; ".join(f"{f['label']}: {f['default']}" for f in families.values())


def low_precision_program(ctx: ProgramContext) -> bool:
    """The program computes in 16 bits on purpose somewhere (autocast, .half(), apex, amp flags)."""
    low = _modes()["low_precision"]
    for facts in ctx.program.files:
        if calls_named(facts, low["calls"]) or calls_with_method(facts, low["methods"]):
            return True
        if any(a.keyword in low["keywords"] for c in facts.calls for a in c.args):
            return True
    flags = set(low["launch_flags"])
    return any(flags & set(launch.flags()) for _, launch in ctx.program.launches)


class PrecisionModeUnset(ProgramRule):
    code = "ACL607"
    name = "npu-precision-mode-unset"
    category = "mixed-precision"
    severity = "info"
    summary = "A float32 torch_npu training program that never sets the operator precision mode"
    frameworks = ("torch_npu",)
    doc = RuleDoc(
        what="Reports, once per program, a training program that runs on the NPU (places work there, or its entry "
        "script imports torch_npu), trains in float32 (no "
        "autocast, `.half()`, apex amp or fp16/bf16 launch flag) and never sets `ACL_PRECISION_MODE`. The message "
        "gives each SoC family's default.",
        why="The precision mode's default depends on the SoC: on the Atlas training series (Ascend 910A class) CANN "
        "defaults to `allow_fp32_to_fp16`, so every float32 matmul and convolution runs in float16 (10-bit mantissa "
        "against 23; nothing above 65504); on Atlas A2/A3 (910B/910C) it is `must_keep_origin_dtype`. The same script "
        "thus matches the GPU's float32 on one NPU and not on another.",
        fix='Write the mode down: `torch.npu.set_option({"ACL_PRECISION_MODE": "must_keep_origin_dtype"})` at start-up.',
        references=("docs/knowledge/numerics-modes.md#precision-mode", "CANN AOE --precision_mode defaults (aoepar_16_046)"),
    )
    invalid = (
        Example.script("""
            import torch
            import torch_npu


            def main():
                model = torch.nn.Linear(8, 8).npu()
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                loss = model(torch.randn(4, 8).npu()).sum()
                loss.backward()
                optimizer.step()


            if __name__ == "__main__":  # expect: ACL607
                main()
        """, "a float32 torch_npu training script"),
    )
    valid = (
        Example.script("""
            import torch
            import torch_npu


            def main():
                torch.npu.set_option({"ACL_PRECISION_MODE": "must_keep_origin_dtype"})
                model = torch.nn.Linear(8, 8).npu()
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.randn(4, 8).npu()).sum().backward()
                optimizer.step()


            if __name__ == "__main__":
                main()
        """, "the mode written down"),
        Example.script("""
            import torch
            import torch_npu


            def main():
                model = torch.nn.Linear(8, 8).npu()
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                with torch.autocast(device_type="npu", dtype=torch.bfloat16):
                    loss = model(torch.randn(4, 8).npu()).sum()
                loss.backward()
                optimizer.step()


            if __name__ == "__main__":
                main()
        """, "low precision chosen on purpose with autocast"),
        Example({
            "train.py": """
                import argparse
                import torch
                import torch_npu


                def main(args):
                    option = {}
                    option["ACL_PRECISION_MODE"] = args.precision_mode
                    torch.npu.set_option(option)
                    model = torch.nn.Linear(8, 8).npu()
                    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                    model(torch.randn(4, 8).npu()).sum().backward()
                    optimizer.step()


                if __name__ == "__main__":
                    parser = argparse.ArgumentParser()
                    parser.add_argument("--precision_mode", default="must_keep_origin_dtype")
                    main(parser.parse_args())
            """,
            "test/train_full_8p.sh": """
                #!/bin/bash
                precision_mode="allow_mix_precision"
                python3 ./train.py --precision_mode=$precision_mode
            """,
        }, "a model-zoo recipe: the mode comes from the launch script; acclint cannot judge it, but it is set"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        # An NPU run: it places work on the NPU, or its entry script imports torch_npu itself
        # (transfer_to_npu runs `.cuda()` code there). A library that merely can use torch_npu is not enough.
        entry_imports = {b.split(".", 1)[0] for targets in ctx.program.entry.bindings.values() for b in targets}
        if "npu" not in facts.uses and "torch_npu" not in entry_imports:
            return
        if any(w.option == "precision" for f in ctx.program.files for w in mode_writes(f)):
            return
        if low_precision_program(ctx):
            return
        self.report_program(
            ctx, "this float32 NPU training program never sets the operator precision mode, so the SoC's default "
            f"applies ({_families_text()}): under allow_fp32_to_fp16 float32 matmuls run in float16 (10-bit mantissa "
            "against 23).", 'torch.npu.set_option({"ACL_PRECISION_MODE": "must_keep_origin_dtype"})')


class OpImplHighPerformance(ExplicitRule):
    code = "ACL608"
    name = "npu-op-impl-high-performance"
    category = "mixed-precision"
    severity = "warning"
    summary = "ACL_OP_SELECT_IMPL_MODE=high_performance: the NPU picks the fast, less precise operator kernels"
    doc = RuleDoc(
        what="Reports `ACL_OP_SELECT_IMPL_MODE` set to `high_performance` (or `high_performance_for_all`) in a "
        "torch_npu `set_option` dict (inline, in a variable or constant, or key by key), and MindSpore's "
        "`ge.opSelectImplmode` in `set_context(ascend_config={\"ge_options\": {\"global\": {...}}})` or a YAML config. With `ACL_OPTYPELIST_FOR_IMPLMODE` the "
        "message names the operator types it is limited to.",
        why="Many Ascend operators ship a high-precision and a high-performance implementation (CANN lists them in "
        "`impl_mode/high_precision.ini` and `high_performance.ini`); the fast one trades precision for speed, e.g. "
        "with float16 intermediates (relative step 9.8e-4 against float32's 1.2e-7) or coarser approximations. The "
        "GPU run has one float32 kernel per op. The NPU tuning notes (docs/knowledge/guides.md#npu-tuning-notes) ask for `high_precision` while "
        "aligning accuracy.",
        fix='`option["ACL_OP_SELECT_IMPL_MODE"] = "high_precision"` while aligning accuracy; switch back to '
        "high_performance only after the loss curves match.",
        references=("docs/knowledge/numerics-modes.md#implementation-mode", "docs/knowledge/guides.md#npu-tuning-notes", "CANN aclCompileOpt (aclcppdevg_03_1371)"),
    )
    invalid = (
        Example.script("""
            import torch
            import torch_npu

            option = {}
            option["ACL_OP_SELECT_IMPL_MODE"] = "high_performance"  # expect: ACL608
            option["ACL_OPTYPELIST_FOR_IMPLMODE"] = "LayerNorm"
            torch.npu.set_option(option)
        """, "key by key, limited to LayerNorm"),
        Example.script("""
            import torch_npu

            OPTIONS = {"ACL_OP_SELECT_IMPL_MODE": "high_performance"}
            torch_npu.npu.set_option(OPTIONS)  # expect: ACL608
        """, "a module-level constant"),
        Example.script("""
            import mindspore as ms

            ms.set_context(ascend_config={"ge_options": {"global": {"ge.opSelectImplmode": "high_performance"}}})  # expect: ACL608
        """, "MindSpore: the CANN option through ge_options"),
    )
    valid = (
        Example.script("""
            import torch
            import torch_npu

            torch.npu.set_option({"ACL_OP_SELECT_IMPL_MODE": "high_precision"})
        """),
        Example.script("""
            import pandas as pd

            option = {}
            option["ACL_OP_SELECT_IMPL_MODE"] = "high_performance"
            pd.set_option("display.max_rows", option)
        """, "another library's set_option"),
    )

    def written(self, facts: FileFacts) -> Iterator[Written]:
        for write in mode_writes(facts):
            if write.option == "impl" and _fast(write.value):
                yield Written(write.node, self._message(write.key, write.value, write.op_list), self._fix())

    def check_config(self, ctx: FileContext, config) -> None:
        if config.kind != "ascend-yaml":
            return
        for path, value in config.data.items():
            if _leaf_in(path, _modes()["impl"]["context_keys"]) and _fast(value):
                ctx.report(self, config.node(path), self._message(path, value, None), fix=self._fix())

    @staticmethod
    def _message(key: str, value: str, op_list: Optional[str]) -> str:
        scope = f" for {op_list}" if op_list else ""
        return (f"`{key}={value}`{scope}: the NPU uses the high-performance operator kernels (float16 "
                "intermediates, coarser approximations) where the GPU runs float32 kernels.")

    @staticmethod
    def _fix() -> str:
        return f'"{_modes()["impl"]["option_key"]}": "high_precision" while aligning accuracy'


def _fast(value: Optional[str]) -> bool:
    return value is not None and value.strip().lower() in _modes()["impl"]["fast"]


# -- overflow mode ------------------------------------------------------------------------------


def _matches(entries: list, name: str, value: Optional[str]) -> bool:
    if value is None:
        return False  # a shell variable or an expression: not known here
    return any(e["name"] == name and value.strip().strip("'\"").upper() in {v.upper() for v in e["values"]}
               for e in entries)


def saturates(name: str, value: Optional[str]) -> bool:
    return _matches(_modes()["overflow"]["saturation"], name, value)


def needs_inf_nan(name: str, value: Optional[str]) -> bool:
    return _matches(_modes()["overflow"]["requires_inf_nan"], name, value)


_SATURATION = ("the NPU runs in saturation mode: Inf becomes +-65504 (fp16) or +-max and NaN becomes 0, so the "
               "loss scaler no longer sees the overflows the GPU run's scaler skips")
_STRICT = " HCCL_DETERMINISTIC=strict, set by this program too, requires INF/NaN mode."
_OVERFLOW_FIX = ("remove it, or set INF_NAN_MODE_ENABLE=1 (INF/NaN mode, the default on Atlas A2/A3; MindSpore: "
                 "MS_ASCEND_CHECK_OVERFLOW_MODE=INFNAN_MODE)")


class SaturationOverflowMode(ExplicitRule, ProgramRule):
    code = "ACL609"
    name = "npu-saturation-overflow-mode"
    category = "mixed-precision"
    severity = "warning"
    summary = "The NPU put in saturation mode (INF_NAN_MODE_ENABLE=0 and friends); an error with HCCL_DETERMINISTIC=strict"
    doc = RuleDoc(
        what="Reports `INF_NAN_MODE_ENABLE=0`, `INF_NAN_MODE_FORCE_DISABLE=1` and "
        "`MS_ASCEND_CHECK_OVERFLOW_MODE=SATURATION_MODE`, exported in a launch script or written to `os.environ`, "
        "at their line. It is an error when the same script or program also sets `HCCL_DETERMINISTIC=strict`.",
        why="In saturation mode the NPU clamps: Inf becomes the largest finite value (65504 in float16) and NaN "
        "becomes 0. The GPU produces Inf/NaN, and its GradScaler skips that step and halves the scale (from 65,536). "
        "The NPU run's scaler sees finite numbers, keeps stepping on clamped gradients and keeps its scale, so the "
        "two runs train on different updates from the first overflow on. HCCL's strict deterministic reduction "
        "needs INF/NaN mode and does not work in saturation mode.",
        fix="Remove the variable (INF/NaN mode is the default on Atlas A2/A3) or set `INF_NAN_MODE_ENABLE=1`; "
        "on MindSpore use `MS_ASCEND_CHECK_OVERFLOW_MODE=INFNAN_MODE`.",
        references=("docs/knowledge/numerics-modes.md#overflow-mode", "docs/knowledge/mixed-precision.md#overflow-detection"),
    )
    invalid = (
        Example({"run_npu.sh": """
            #!/bin/bash
            export INF_NAN_MODE_ENABLE=0  # expect: ACL609
            torchrun --nproc_per_node 8 train.py
        """}, "a launch script"),
        Example.script("""
            import os

            os.environ["INF_NAN_MODE_FORCE_DISABLE"] = "1"  # expect: ACL609
            os.environ["HCCL_DETERMINISTIC"] = "strict"
        """, "with HCCL_DETERMINISTIC=strict (an error)"),
    )
    valid = (
        Example({"run_npu.sh": """
            #!/bin/bash
            export INF_NAN_MODE_ENABLE=1
            export HCCL_DETERMINISTIC=strict
            torchrun --nproc_per_node 8 train.py
        """}),
        Example({"run_npu.sh": """
            #!/bin/bash
            MODE=$1
            export MS_ASCEND_CHECK_OVERFLOW_MODE=$MODE
            msrun --worker_num 8 train.py
        """}, "a value from the command line: not known here"),
    )

    def written(self, facts: FileFacts) -> Iterator[Written]:
        strict = any(needs_inf_nan(w.name, w.value) for w in facts.env_writes)
        for write in facts.env_writes:
            if saturates(write.name, write.value):
                yield self._written(write.node, f"os.environ[{write.name!r}] = {write.value!r}", strict)

    def _written(self, node: int, what: str, strict: bool) -> Written:
        return Written(node, f"`{what}`: {_SATURATION}." + (_STRICT if strict else ""), _OVERFLOW_FIX,
                       "error" if strict else None)

    def check_shell(self, ctx: ProgramContext, shell) -> None:
        """Every exported saturation setting in a launch script, scanned alone or not."""
        script = shell.script
        strict = any(needs_inf_nan(a.name, a.value) for a in script.final_env().values()) or any(
            needs_inf_nan(a.name, a.value) for launch in script.launches for a in launch.env)
        seen = set()
        assignments = [a for a in script.env if a.exported] + [a for launch in script.launches for a in launch.env]
        for assignment in assignments:
            if assignment.span.path != script.path:
                continue  # written in a sourced file: reported where it is written, once
            if saturates(assignment.name, assignment.value) and assignment.span not in seen:
                seen.add(assignment.span)
                ctx.report_shell(self, assignment.span, f"`{assignment.name}={assignment.raw}`: {_SATURATION}."
                                 + (_STRICT if strict else ""), fix=_OVERFLOW_FIX,
                                 severity="error" if strict else None)

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        """A saturation write in one file and HCCL_DETERMINISTIC=strict in another: an error at the write."""
        program = ctx.program
        python = [(f, w) for f in program.files for w in f.env_writes]
        shell = [a for _, launch in program.launches for a in launch.effective_env().values()]
        if not any(needs_inf_nan(w.name, w.value) for _, w in python) and \
                not any(needs_inf_nan(a.name, a.value) for a in shell):
            return
        for file, write in python:
            if saturates(write.name, write.value):
                found = self._written(write.node, f"os.environ[{write.name!r}] = {write.value!r}", True)
                ctx.report(self, file, found.node, found.message, fix=found.fix, severity=found.severity)
        for assignment in shell:
            if saturates(assignment.name, assignment.value):
                ctx.report_shell(self, assignment.span, f"`{assignment.name}={assignment.raw}`: {_SATURATION}."
                                 + _STRICT, fix=_OVERFLOW_FIX, severity="error")


RULES = [PrecisionModeLowersFp32(), PrecisionModeUnset(), OpImplHighPerformance(), SaturationOverflowMode()]
