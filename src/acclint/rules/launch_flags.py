"""MindSpeed launch flags whose value is wrong relative to other flags of the same launch (quick
rule seed 8): `--pre-tockens` below the sequence length narrows causal attention to a band, and
`--reuse-fp32-param` needs `--bf16`. Both are written explicitly, so they are reported at their
line in any scanned launch script. The data is knowledge/launch_flags.toml.

`--no-gradient-accumulation-fusion` is not here: what matters is that one run has it and the other
does not, which only `acclint diff` of the two launch scripts can see."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator, Optional

from acclint.knowledge import table
from acclint.linter.context import ProgramContext
from acclint.linter.rulebase import Example, Rule, RuleDoc
from acclint.linter.shell import FlagValue, LaunchCommand, Span
from acclint.linter.shell.model import is_flag

# Words that expand to any number of arguments: they may carry any flag.
_SPREAD = ("$@", "$*", "${@}", "${*}", "[@]}", "[*]}")


@lru_cache(maxsize=1)
def _flags() -> dict:
    return table("launch_flags")


@lru_cache(maxsize=1)
def _switches() -> frozenset:
    """Flags any launcher defines as store_true / store_false: a word after one is not its value."""
    return frozenset(
        flag
        for name, flags in table("launcher_defaults").items()
        if name != "sources"
        for flag, record in flags.items()
        if record.get("action") in ("store_true", "store_false")
    )


def _int(value: Optional[FlagValue]) -> Optional[int]:
    """The flag's literal integer value, or None when absent, bare, unresolved or not an integer."""
    if value is None or not value.known or value.value is None:
        return None
    try:
        return int(value.value)
    except ValueError:
        return None


def may_hide_flags(launch: LaunchCommand) -> bool:
    """Could an argument we cannot read stand for more flags (`$EXTRA_ARGS`, `"$@"`)? A word we
    cannot read right after a flag that takes a value is taken to be that value."""
    args = launch.script_args
    for index, arg in enumerate(args):
        if arg.known:
            continue
        if arg.text.endswith(_SPREAD):
            return True
        previous = args[index - 1].text if index else ""
        if not is_flag(previous) or "=" in previous or previous.lstrip("-") in _switches():
            return True
    return False


@dataclass(frozen=True)
class Found:
    span: Span
    message: str
    fix: str


class LaunchFlagRule(Rule):
    """A rule over each launch command of each launch script; subclasses judge one launch."""

    def judge(self, launch: LaunchCommand, flags: dict) -> Iterator[Found]:
        raise NotImplementedError

    def check_shell(self, ctx: ProgramContext, shell) -> None:
        for launch in shell.script.launches:
            for found in self.judge(launch, launch.flags()):
                ctx.report_shell(self, found.span, found.message, fix=found.fix)


def _defaults(flag: str) -> str:
    """`MindSpeed 65536, MindSpeed-LLM 1048576` from the generated launcher defaults."""
    owners = (("mindspeed", "MindSpeed"), ("mindspeed-llm", "MindSpeed-LLM"))
    defaults = table("launcher_defaults")
    return ", ".join(f"{owner} {defaults[name][flag]['default']}" for name, owner in owners
                     if "default" in defaults.get(name, {}).get(flag, {}))


class PreTockensBelowSeqLength(LaunchFlagRule):
    code = "ACL408"
    name = "pre-tockens-below-seq-length"
    category = "fused-op"
    severity = "warning"
    summary = "--pre-tockens below --seq-length: NPU attention sees only a band of earlier tokens"
    doc = RuleDoc(
        what="Reports `--pre-tockens N` in a MindSpeed / MindSpeed-LLM launch whose `--seq-length S` is "
        "larger than N + 1, when the attention reads the value: flash attention with the dataloader's mask and "
        "sparse mode 0 (defaultMask, the default) or 4 (band), or unfused attention with "
        "`--no-create-attention-mask-in-dataloader` (MindSpeed builds the mask from it). It stays quiet with "
        "`--sliding-window` or ALiBi (MindSpeed-LLM then sets it itself), Megatron's `--window-size` (a declared "
        "window), ring context parallelism (which computes it per chunk), and when an argument acclint cannot "
        "read (`$EXTRA_ARGS`) might carry any of these.",
        why="MindSpeed passes `--pre-tockens` to `torch_npu.npu_fusion_attention(pre_tockens=N)`, and builds its "
        "own unfused causal mask from it: query i attends only to keys i-N .. i. A GPU (Megatron-LM) causal "
        "attention attends to all i earlier tokens, up to S-1. With N < S-1 every token further back than N is "
        "masked on the NPU only, so the losses differ from the first step, and more the longer the documents. "
        "Defaults: kernel 2147483647, MindSpeed 65536, MindSpeed-LLM 1048576, all above usual sequence lengths. "
        "The sparse modes 1, 2, 3, 5 and 6 ignore the value (op-plugin sparse-mode pages); MindSpeed accepts "
        "only 0 or 2 with `--use-flash-attn` and forces 2 when it builds a flash mask itself.",
        fix="Remove `--pre-tockens` (or set it to at least the sequence length). If the model really uses a "
        "sliding window, give the GPU run the same window (Megatron-LM `--window-size`) and, on MindSpeed-LLM, "
        "say so with `--sliding-window`.",
        references=("docs/knowledge/fused-ops.md#npu_fusion_attention", "docs/knowledge/fused-ops.md#mindspeed-switches",
                    "docs/knowledge/launchers.md#npu-only-flags",
                    "MindSpeed mindspeed/core/transformer/flash_attention/flash_attention/adaptor.py",
                    "MindSpeed-LLM mindspeed_llm/core/transformer/custom_dot_product_attention.py"),
    )
    invalid = (
        Example(
            {
                "pretrain_llama2_7b.sh": """
                    #!/bin/bash
                    source /usr/local/Ascend/ascend-toolkit/set_env.sh
                    SEQ_LEN=4096
                    GPT_ARGS=(
                        --num-layers 32 --hidden-size 4096 --num-attention-heads 32
                        --seq-length ${SEQ_LEN} --max-position-embeddings ${SEQ_LEN}
                        --use-flash-attn
                        --pre-tockens 2048  # expect: ACL408
                        --bf16
                    )
                    torchrun --nproc_per_node 8 pretrain_gpt.py "${GPT_ARGS[@]}" --seed 1234
                """,
            },
            "a band of 2048 tokens in a 4096-token run",
        ),
        Example(
            {
                "tune.sh": """
                    #!/bin/bash
                    torchrun --nproc_per_node 8 posttrain_gpt.py \\
                        --seq-length 8192 --use-flash-attn --sparse-mode 4 \\
                        --pre-tockens 4096 --next-tockens 0  # expect: ACL408
                """,
            },
            "band sparse mode",
        ),
    )
    valid = (
        Example(
            {
                "pretrain_llama2_7b.sh": """
                    #!/bin/bash
                    torchrun --nproc_per_node 8 pretrain_gpt.py \\
                        --seq-length 4096 --use-flash-attn --pre-tockens 65536 --next-tockens 0
                """,
            },
            "at least the sequence length",
        ),
        Example(
            {
                "pretrain_llama2_7b.sh": """
                    #!/bin/bash
                    torchrun --nproc_per_node 8 pretrain_gpt.py \\
                        --seq-length 4096 --use-flash-attn --sparse-mode 2 --pre-tockens 2048
                """,
            },
            "leftUpCausal ignores pre_tockens",
        ),
        Example(
            {
                "pretrain_mistral.sh": """
                    #!/bin/bash
                    torchrun --nproc_per_node 8 pretrain_gpt.py \\
                        --seq-length 32768 --sliding-window 4096 --pre-tockens 4096 --use-flash-attn
                """,
            },
            "a declared sliding window",
        ),
        Example(
            {
                "pretrain_128k.sh": """
                    #!/bin/bash
                    torchrun --nproc_per_node 8 pretrain_gpt.py \\
                        --seq-length 131072 --context-parallel-size 4 --pre-tockens 65536 --use-flash-attn
                """,
            },
            "ring context parallelism (the default algorithm) computes it per chunk",
        ),
        Example(
            {
                "run.sh": """
                    #!/bin/bash
                    torchrun --nproc_per_node 8 pretrain_gpt.py --seq-length "$SEQ_LEN" --pre-tockens 2048
                """,
            },
            "sequence length not known",
        ),
    )

    def judge(self, launch: LaunchCommand, flags: dict) -> Iterator[Found]:
        entry = _flags()["pre-tockens"]
        pre = _int(flags.get("pre-tockens"))
        length = next((n for f in entry["length_flags"] if (n := _int(flags.get(f))) is not None), None)
        if pre is None or length is None or pre + 1 >= length:
            return
        reader = self._reader(flags, entry)
        if reader is None or self._declared(flags, entry) or self._ring_cp(flags, entry) or may_hide_flags(launch):
            return  # (hidden flags may set the sparse mode, a window, or --pre-tockens again)
        message = (
            f"--pre-tockens {pre} with --seq-length {length}: {reader} lets query i attend only to keys "
            f"i-{pre}..i, so tokens more than {pre} positions back are masked on the NPU, while a GPU causal "
            f"attention sees all {length - 1} earlier tokens. "
            f"Defaults: {_defaults('pre-tockens')} (kernel {entry['kernel_default']})."
        )
        fix = (f"remove --pre-tockens (or set it to at least {length}); for a deliberate sliding window give the "
               f"GPU run the same window (Megatron --{entry['gpu_window_flag']})")
        yield Found(flags["pre-tockens"].span, message, fix)

    @staticmethod
    def _reader(flags: dict, entry: dict) -> Optional[str]:
        """What reads pre_tockens in this launch (see the table), or None when nothing does."""
        flash = any(flag in flags for flag in entry["flash_flags"])
        own_mask = entry["no_dataloader_mask_flag"] in flags
        if not flash:
            return "MindSpeed's causal mask, built from it without flash attention," if own_mask else None
        if own_mask:
            return None  # MindSpeed switches flash attention to sparse mode 2
        given = flags.get(entry["sparse_mode_flag"])
        mode = entry["default_sparse_mode"] if given is None else _int(given)  # None (unknown): not judged
        if mode not in entry["reading_sparse_modes"]:
            return None
        return f"npu_fusion_attention (sparse mode {mode}, {entry['sparse_mode_names'][str(mode)]})"

    @staticmethod
    def _declared(flags: dict, entry: dict) -> bool:
        """A setting that makes a small pre_tockens intended or overridden (see the table)."""
        for override in entry["quiet_with"]:
            given = flags.get(override["flag"])
            if given is None or ("value" in override and given.value != override["value"]):
                continue
            if all(other in flags for other in override.get("also", ())):
                return True
        return False

    @staticmethod
    def _ring_cp(flags: dict, entry: dict) -> bool:
        """Context parallelism whose algorithm ignores the flag (or that cannot be read)."""
        size = flags.get(entry["context_parallel_size_flag"])
        if size is None:
            return False
        if _int(size) is None:
            return True
        if _int(size) <= 1:
            return False
        algo = flags.get(entry["context_parallel_algo_flag"])
        name = entry["default_context_parallel_algo"] if algo is None else (algo.value if algo.known else None)
        return name not in entry["context_parallel_algos_reading"]


class ReuseFp32ParamWithoutBf16(LaunchFlagRule):
    code = "ACL620"
    name = "reuse-fp32-param-without-bf16"
    category = "mixed-precision"
    severity = "warning"
    summary = "--reuse-fp32-param without --bf16: MindSpeed refuses to start"
    doc = RuleDoc(
        what="Reports `--reuse-fp32-param` in a launch that does not pass `--bf16` (it trains in fp16 with "
        "`--fp16`, or in fp32), unless an argument acclint cannot read (`$EXTRA_ARGS`) might carry `--bf16`.",
        why="`--reuse-fp32-param` saves memory by keeping each fp32 master weight as its bf16 parameter (the "
        "upper 16 bits of the fp32 value) plus a 16-bit residual in the same buffer. That split is exact only "
        "because bf16 is the top half of an fp32; an fp16 value is not. MindSpeed therefore checks it at "
        "argument validation and stops the run (`reuse-fp32-param requires bf16.`; older path: "
        "`--reuse-fp32-param only support for bf16`), so nothing is silently miscomputed: the job never starts. "
        "On the GPU side, Megatron-LM has no such flag; its fp16 and bf16 runs keep separate fp32 master weights.",
        fix="Train in bf16 (`--bf16`), as the GPU run should too for parity, or drop `--reuse-fp32-param`.",
        references=("docs/knowledge/fused-ops.md#mindspeed-switches", "docs/knowledge/launchers.md#npu-only-flags",
                    "MindSpeed mindspeed/features_manager/memory/reuse_fp32_param.py",
                    "MindSpeed mindspeed/core/memory/reuse_param/reuse_optimizer.py"),
    )
    invalid = (
        Example(
            {
                "pretrain_gpt_fp16.sh": """
                    #!/bin/bash
                    GPT_ARGS=(
                        --num-layers 24 --hidden-size 2048 --seq-length 4096
                        --fp16 --initial-loss-scale 65536
                        --use-distributed-optimizer
                        --reuse-fp32-param  # expect: ACL620
                    )
                    torchrun --nproc_per_node 8 pretrain_gpt.py "${GPT_ARGS[@]}"
                """,
            },
            "fp16 run",
        ),
        Example(
            {
                "run.sh": """
                    #!/bin/bash
                    python pretrain_gpt.py --seq-length 2048 --reuse-fp32-param  # expect: ACL620
                """,
            },
            "fp32 run (no precision flag)",
        ),
    )
    valid = (
        Example(
            {
                "pretrain_gpt.sh": """
                    #!/bin/bash
                    torchrun --nproc_per_node 8 pretrain_gpt.py \\
                        --bf16 --use-distributed-optimizer --reuse-fp32-param
                """,
            },
        ),
        Example(
            {
                "pretrain_gpt.sh": """
                    #!/bin/bash
                    torchrun --nproc_per_node 8 pretrain_gpt.py --reuse-fp32-param $PRECISION_ARGS "$@"
                """,
            },
            "the precision may come from an argument acclint cannot read",
        ),
    )

    def judge(self, launch: LaunchCommand, flags: dict) -> Iterator[Found]:
        entry = _flags()["reuse-fp32-param"]
        given = flags.get("reuse-fp32-param")
        required = entry["requires"]
        if given is None or required in flags or may_hide_flags(launch):
            return
        precision = "fp16 (--fp16)" if "fp16" in flags else "fp32 (no --fp16 / --bf16)"
        message = (f"--reuse-fp32-param in a run that trains in {precision}: MindSpeed keeps each fp32 master "
                   "weight as its bf16 parameter plus a 16-bit residual, exact only for bf16, and stops at "
                   f"argument validation (\"{entry['refusal']}\").")
        yield Found(given.span, message, f"add --{required} (and train the GPU run in bf16 too) or drop "
                                         "--reuse-fp32-param")


RULES = [PreTockensBelowSeqLength(), ReuseFp32ParamWithoutBf16()]
