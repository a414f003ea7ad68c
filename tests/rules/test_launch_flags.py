"""ACL408 / ACL620 beyond their examples: the settings that decide whether the NPU reads
`--pre-tockens`, values resolved through sourced files, arguments acclint cannot read, and a
launch script given alone next to its training script."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from acclint.config import Config
from acclint.linter.engine import scan
from acclint.rules.launch_flags import PreTockensBelowSeqLength, ReuseFp32ParamWithoutBf16

PRE = PreTockensBelowSeqLength()
REUSE = ReuseFp32ParamWithoutBf16()


def findings(tmp_path: Path, files: dict, rule, given: str = ".") -> list:
    for name, text in files.items():
        (tmp_path / name).write_text(dedent(text), encoding="utf-8")
    result = scan([tmp_path / given], [rule], Config(), jobs=1, cwd=tmp_path)
    assert result.errors == []
    return [f for f in result.findings if f.rule == rule.code]


def launch(args: str) -> str:
    return f"#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py {args}\n"


@pytest.mark.parametrize("args,reported", [
    ("--seq-length 4096 --pre-tockens 4095", False),  # query 4095 still sees key 0
    ("--seq-length 4096 --pre-tockens 4094", True),
    ("--encoder-seq-length 4096 --pre-tockens 1024", True),  # Megatron's other spelling
    ("--seq-length=4096 --pre-tockens=1024", True),
    ("--seq-length 4096 --pre-tockens many", False),
    ("--seq-length 4096 --pre-tockens 1024 --sparse-mode 4", True),  # band
    ("--seq-length 4096 --pre-tockens 1024 --sparse-mode 3", False),  # rightDownCausal ignores it
    ("--seq-length 4096 --pre-tockens 1024 --sparse-mode $MODE", False),  # mode unknown
    ("--seq-length 4096 --pre-tockens 1024 --position-embedding-type alibi", False),
    ("--seq-length 4096 --pre-tockens 1024 --position-embedding-type rope", True),
    ("--seq-length 4096 --pre-tockens 1024 --window-size 1024,0", False),  # a declared window
    ("--seq-length 4096 --pre-tockens 1024 --context-parallel-size 2", False),  # ring CP by default
    ("--seq-length 4096 --pre-tockens 1024 --context-parallel-size 2 --context-parallel-algo hybrid_cp_algo", False),
    ("--seq-length 4096 --pre-tockens 1024 --context-parallel-size 2 --context-parallel-algo ulysses_cp_algo", True),
    ("--seq-length 4096 --pre-tockens 1024 --context-parallel-size 1", True),
    ("--seq-length 4096 --pre-tockens 1024 $EXTRA_ARGS", False),  # may set a sparse mode or a window
    ("--seq-length 4096 --pre-tockens 1024 --data-path $DATA", True),
    # no mask from the dataloader: MindSpeed builds a flash mask and switches to sparse mode 2
    ("--seq-length 4096 --pre-tockens 1024 --no-create-attention-mask-in-dataloader", False),
])
def test_when_flash_attention_reads_pre_tockens(tmp_path, args, reported):
    found = findings(tmp_path, {"run.sh": launch("--use-flash-attn " + args)}, PRE)
    assert bool(found) == reported, [f.message for f in found]
    if reported:
        assert found[0].line == 2 and found[0].severity == "warning" and found[0].category == "fused-op"
        assert "npu_fusion_attention (sparse mode" in found[0].message


@pytest.mark.parametrize("args,reported", [
    ("--seq-length 4096 --pre-tockens 1024", False),  # the dataloader's mask is used as is
    ("--seq-length 4096 --pre-tockens 1024 --no-create-attention-mask-in-dataloader", True),
    ("--seq-length 4096 --pre-tockens 1024 --use-fusion-attn-v2", True),  # the v2 flash kernel
])
def test_without_flash_attention_only_mindspeeds_own_mask_reads_it(tmp_path, args, reported):
    found = findings(tmp_path, {"run.sh": launch(args)}, PRE)
    assert bool(found) == reported, [f.message for f in found]


def test_values_come_through_a_sourced_config_and_the_message_gives_both_numbers(tmp_path):
    files = {
        "model.cfg": "SEQ=8192\nWINDOW=4096\n",
        "run.sh": """\
            #!/bin/bash
            source ./model.cfg
            ARGS="--seq-length $SEQ --use-flash-attn"
            torchrun --nproc_per_node 8 pretrain_gpt.py $ARGS \\
                --pre-tockens $WINDOW
        """,
    }
    found = findings(tmp_path, files, PRE, given="run.sh")
    assert [(Path(f.path).name, f.line) for f in found] == [("run.sh", 5)]
    message = found[0].message
    assert "--pre-tockens 4096 with --seq-length 8192" in message and "8191 earlier tokens" in message
    assert "MindSpeed 65536" in message and "MindSpeed-LLM 1048576" in message  # from launcher_defaults.toml


def test_a_launch_script_given_alone_beside_its_training_script(tmp_path):
    files = {
        "pretrain_gpt.py": "import torch\n\nif __name__ == '__main__':\n    torch.manual_seed(0)\n",
        "run.sh": launch("--seq-length 4096 --use-flash-attn --pre-tockens 1024 --fp16 --reuse-fp32-param"),
    }
    assert [f.line for f in findings(tmp_path, files, PRE, given="run.sh")] == [2]
    reuse = findings(tmp_path, files, REUSE, given="run.sh")
    assert [f.line for f in reuse] == [2] and "fp16 (--fp16)" in reuse[0].message
    assert "reuse-fp32-param requires bf16." in reuse[0].message


@pytest.mark.parametrize("args,reported", [
    ("--reuse-fp32-param --bf16", False),
    ("--reuse-fp32-param --data-path $DATA --lr 1e-4", True),  # an unknown value is not a flag
    ("--reuse-fp32-param $EXTRA_ARGS", False),  # after a switch: may be more flags
    ("--lr $LR --reuse-fp32-param", True),  # taken as the value of --lr
    ("--lr 1e-4 $EXTRA_ARGS --reuse-fp32-param", False),  # a word of its own: may be more flags
    ("--reuse-fp32-param --lr=1e-4 $EXTRA_ARGS", False),
    ("--reuse-fp32-param ${OTHER[@]}", False),
    ("--bf16=true --reuse-fp32-param", False),
])
def test_reuse_fp32_param_needs_bf16_in_the_same_launch(tmp_path, args, reported):
    found = findings(tmp_path, {"run.sh": launch(args)}, REUSE)
    assert bool(found) == reported, [f.message for f in found]


def test_each_launch_is_judged_on_its_own_flags(tmp_path):
    text = dedent("""\
        #!/bin/bash
        torchrun --nproc_per_node 8 pretrain_gpt.py --bf16 --reuse-fp32-param
        torchrun --nproc_per_node 8 pretrain_gpt.py --fp16 --reuse-fp32-param
    """)
    assert [f.line for f in findings(tmp_path, {"run.sh": text}, REUSE)] == [3]
