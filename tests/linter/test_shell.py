"""The launch-script reader: variables, exports, sourcing, launches and where each was written."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from acclint.linter.shell import ShellReadError, Span, read_shell_script

FIXTURES = Path(__file__).parent / "fixtures" / "shell"


def where(path: Path | str, text: str, line: int, occurrence: int = 1) -> Span:
    """The span of `text` on a 1-based line of a file: an oracle independent of the reader."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    column = -1
    for _ in range(occurrence):
        column = lines[line - 1].index(text, column + 1)
    return Span(str(path), line, column + 1, line, column + 1 + len(text))


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def only_launch(script):
    assert len(script.launches) == 1, script.launches
    return script.launches[0]


def texts(arguments) -> list[str]:
    return [argument.text for argument in arguments]


# ---------------------------------------------------------------- the Megatron-style fixture


@pytest.fixture(scope="module")
def gpt():
    return read_shell_script(FIXTURES / "pretrain_gpt_npu.sh")


def test_torchrun_launch_with_argument_blocks(gpt):
    launch = only_launch(gpt)
    assert launch.launcher == "torchrun"
    assert launch.script == "pretrain_gpt.py"
    assert texts(launch.launcher_args) == [
        "--nproc_per_node", "8", "--nnodes", "1", "--node_rank", "0",
        "--master_addr", "localhost", "--master_port", "6000",
    ]  # fmt: skip
    assert texts(launch.script_args)[:4] == ["--num-layers", "32", "--hidden-size", "4096"]
    assert "|" not in texts(launch.script_args) and "tee" not in texts(launch.script_args)


def test_words_from_a_variable_point_inside_its_assignment(gpt):
    path = FIXTURES / "pretrain_gpt_npu.sh"
    args = {argument.text: argument for argument in only_launch(gpt).script_args}
    assert args["--lr"].span == where(path, "--lr", 29)
    assert args["1.25e-6"].span == where(path, "1.25e-6", 29)
    assert args["--bf16"].span == where(path, "--bf16", 32)
    # A value substituted into DISTRIBUTED_ARGS points at the assignment it came from.
    launcher = only_launch(gpt).launcher_args
    assert launcher[1].text == "8" and launcher[1].span == where(path, "8", 8)
    # Words written on the launch line itself point there.
    assert args["--save"].span == where(path, "--save", 38)


def test_flags_of_the_launch(gpt):
    path = FIXTURES / "pretrain_gpt_npu.sh"
    flags = only_launch(gpt).flags()
    assert flags["lr"].value == "1.25e-6"
    assert flags["lr"].span == where(path, "--lr 1.25e-6", 29)  # written side by side: one span
    assert flags["global-batch-size"].value == "256"
    assert flags["use-fused-swiglu"].value is None and flags["bf16"].value is None
    assert flags["seed"].value == "1234"  # --seed=1234
    assert flags["distributed-backend"].value == "nccl"
    assert flags["save"].value == "./ckpt/gpt-7b"
    # The flag is on the launch line, its value in CKPT_DIR's assignment: spans stay apart.
    assert flags["save"].span == where(path, "--save", 38)
    assert flags["save"].value_span == where(path, "./ckpt/gpt-7b", 14)


def test_unknown_expansions_stay_as_written(gpt):
    flags = only_launch(gpt).flags()
    assert flags["load"].value == "${LOAD_DIR}" and not flags["load"].known
    # DATA_PATH comes from the sourced sibling file.
    assert flags["data-path"].value == "/data/enwiki/enwiki_text_document"
    assert flags["data-path"].value_span.path == str(FIXTURES / "common_env.sh")


def test_launcher_flags_and_default_expansion(gpt):
    launcher = only_launch(gpt).launcher_flags()
    assert launcher["nproc_per_node"].value == "8"
    assert launcher["nnodes"].value == "1"  # ${NNODES:-1}, NNODES never set by the script
    assert gpt.variables["NNODES"].value == "1"


def test_sourcing_a_sibling_and_an_unresolved_system_file(gpt):
    sibling = FIXTURES / "common_env.sh"
    assert gpt.sourced == [str(sibling)]
    assert gpt.unresolved_sources == ["/usr/local/Ascend/ascend-toolkit/set_env.sh"]
    names = [assignment.name for assignment in gpt.env]
    # Sibling assignments come in order, before the script's own exports.
    assert names[:4] == ["HCCL_CONNECT_TIMEOUT", "ASCEND_LAUNCH_BLOCKING", "DATA_PATH", "CUDA_DEVICE_MAX_CONNECTIONS"]
    timeout = gpt.env[0]
    assert timeout.span.path == str(sibling) and timeout.span.line == 2 and timeout.exported


def test_final_env_holds_exports_only(gpt):
    final = gpt.final_env()
    assert set(final) == {
        "HCCL_CONNECT_TIMEOUT", "ASCEND_LAUNCH_BLOCKING", "CUDA_DEVICE_MAX_CONNECTIONS", "HCCL_DETERMINISTIC",
    }  # fmt: skip
    assert final["HCCL_DETERMINISTIC"].value == "true"
    assert not gpt.variables["NPUS_PER_NODE"].exported
    assert gpt.variables["GPT_ARGS"].raw.startswith('"\n    --num-layers 32 \\\n')


# ---------------------------------------------------------------- other launchers


def test_msrun():
    script = read_shell_script(FIXTURES / "msrun_llama.sh")
    launch = only_launch(script)
    assert launch.launcher == "msrun" and launch.script == "run_llama.py"
    assert launch.launcher_flags()["worker_num"].value == "8"
    assert launch.launcher_flags()["join"].value == "True"
    assert set(launch.flags()) == {"config", "use_parallel", "run_mode"}
    assert launch.flags()["run_mode"].value == "finetune"
    # Redirections and `&` are not part of the launch.
    assert launch.span.line == 5 and launch.span.end_line == 8
    assert "msrun.out" not in texts(launch.script_args)


def test_deepspeed_with_array_arguments():
    path = FIXTURES / "ds_finetune.sh"
    launch = only_launch(read_shell_script(path))
    assert launch.launcher == "deepspeed" and launch.script == "finetune.py"
    assert texts(launch.launcher_args) == ["--num_gpus", "8"]
    assert texts(launch.script_args) == [
        "--deepspeed", "ds_zero2.json", "--learning_rate", "2e-5", "--num_train_epochs", "3",
        "--per_device_train_batch_size", "4", "--output_dir", "/tmp/out", "--bf16",
    ]  # fmt: skip
    args = {argument.text: argument for argument in launch.script_args}
    assert args["2e-5"].span == where(path, "2e-5", 6)  # inside the array literal
    assert args["--bf16"].span == where(path, "--bf16", 11)  # from `TRAIN_ARGS+=(...)`


@pytest.mark.parametrize(
    ("line", "launcher", "script", "launcher_args", "script_args"),
    [
        (
            "python -m torch.distributed.launch --nproc_per_node=8 --master_port 29500 train.py --lr 1e-4",
            "torch.distributed.launch", "train.py", ["--nproc_per_node=8", "--master_port", "29500"], ["--lr", "1e-4"],
        ),
        ("python3 -m torch.distributed.run --nnodes 2 train.py", "torchrun", "train.py", ["--nnodes", "2"], []),
        ("python train.py --lr 1e-4", "python", "train.py", [], ["--lr", "1e-4"]),
        ("python3 -u train.py", "python", "train.py", ["-u"], []),
        ("/usr/bin/python3.10 -W ignore train.py -x", "python", "train.py", ["-W", "ignore"], ["-x"]),
        ("python -m mypkg.train --epochs 3", "python", "mypkg.train", [], ["--epochs", "3"]),
        ("deepspeed train.py --deepspeed ds.json", "deepspeed", "train.py", [], ["--deepspeed", "ds.json"]),
        (
            "accelerate launch --num_processes 8 train.py --bf16",
            "accelerate", "train.py", ["--num_processes", "8"], ["--bf16"],
        ),
        ("mpirun -n 8 python train.py --a 1", "mpirun", "train.py", ["-n", "8", "python"], ["--a", "1"]),
        (
            "nohup torchrun --nproc_per_node 8 train.py > log 2>&1 &",
            "torchrun", "train.py", ["--nproc_per_node", "8"], [],
        ),
        ("srun -N 2 --ntasks-per-node=1 torchrun x.py", "torchrun", "x.py", [], []),
        (
            "torchrun --nproc_per_node 8 -m pkg.pretrain --lr 1",
            "torchrun", "pkg.pretrain", ["--nproc_per_node", "8", "-m"], ["--lr", "1"],
        ),
        ("cd /job && python train.py", "python", "train.py", [], []),
        ("cat <<EOF | python train.py --a 1\nhello\nEOF", "python", "train.py", [], ["--a", "1"]),
    ],
)  # fmt: skip
def test_launchers(tmp_path, line, launcher, script, launcher_args, script_args):
    launch = only_launch(read_shell_script(write(tmp_path, "run.sh", line + "\n")))
    assert (launch.launcher, launch.script) == (launcher, script)
    assert texts(launch.launcher_args) == launcher_args
    assert texts(launch.script_args) == script_args


@pytest.mark.parametrize(
    "line",
    [
        "pip install deepspeed accelerate",
        "echo torchrun train.py",
        "python -c 'import torch; print(torch.__version__)'",
        "python -m pip install -r requirements.txt",
        "accelerate config",
        "nohup bash other.sh",
        "python",
    ],
)
def test_commands_that_are_not_launches(tmp_path, line):
    assert read_shell_script(write(tmp_path, "run.sh", line + "\n")).launches == []


def test_launches_inside_blocks_and_functions_count(tmp_path):
    text = """\
if [ "$MODE" = "train" ]; then
    python train.py --lr 1
fi
for seed in 1 2 3; do
    torchrun eval.py --seed $seed
done
run() {
    msrun --worker_num=8 main.py
}
"""
    script = read_shell_script(write(tmp_path, "run.sh", text))
    assert [(launch.launcher, launch.script) for launch in script.launches] == [
        ("python", "train.py"), ("torchrun", "eval.py"), ("msrun", "main.py"),
    ]  # fmt: skip
    assert script.launches[1].flags()["seed"].value == "$seed"


def test_launcher_named_by_a_variable(tmp_path):
    text = 'PYTHON="python3 -u"\n$PYTHON train.py --lr 2\n'
    launch = only_launch(read_shell_script(write(tmp_path, "run.sh", text)))
    assert (launch.launcher, texts(launch.launcher_args), launch.flags()["lr"].value) == ("python", ["-u"], "2")


# ---------------------------------------------------------------- words and flags


def test_continuations_spread_one_command_over_lines(tmp_path):
    text = "python train.py \\\n    --lr 1e-4 \\\n    --bf16 \\\n    --name=run-1\n"
    path = write(tmp_path, "run.sh", text)
    launch = only_launch(read_shell_script(path))
    assert texts(launch.script_args) == ["--lr", "1e-4", "--bf16", "--name=run-1"]
    assert launch.script_args[2].span == where(path, "--bf16", 3)
    assert launch.span == Span(str(path), 1, 1, 4, 17)


def test_flag_forms_and_last_occurrence_wins(tmp_path):
    text = "python t.py --a 1 --b=2 --c --d -0.5 --e= -f x --a 3 positional --g\n"
    flags = only_launch(read_shell_script(write(tmp_path, "run.sh", text))).flags()
    assert {name: flag.value for name, flag in flags.items()} == {
        "a": "3", "b": "2", "c": None, "d": "-0.5", "e": "", "f": "x", "g": None,
    }  # fmt: skip


def test_quoting(tmp_path):
    text = """\
NAME='my run'
TAG="a \\"quoted\\" tag"
python t.py --name "$NAME" --tag "$TAG" --raw '$NOT_EXPANDED' --split $NAME --empty "" --glue=x"$NAME"y \\
    --escaped a\\ b --tab $'a\\tb'
"""
    flags = only_launch(read_shell_script(write(tmp_path, "run.sh", text))).flags()
    assert flags["name"].value == "my run"
    assert flags["tag"].value == 'a "quoted" tag'
    assert flags["raw"].value == "$NOT_EXPANDED" and flags["raw"].known
    assert flags["split"].value == "my"  # unquoted: split into `my` and `run`
    assert flags["empty"].value == ""
    assert flags["glue"].value == "xmy runy"
    assert flags["escaped"].value == "a b"
    assert flags["tab"].value == "a\tb"


def test_blocks_built_from_other_blocks(tmp_path):
    text = """\
COMMON="--seed 1 --bf16"
ARGS="
    $COMMON \\
    --lr 2
"
N=x
python t.py $ARGS --name "  $N  "
"""
    path = write(tmp_path, "run.sh", text)
    launch = only_launch(read_shell_script(path))
    assert texts(launch.script_args) == ["--seed", "1", "--bf16", "--lr", "2", "--name", "  x  "]
    assert launch.script_args[0].span == where(path, "--seed", 1)
    assert launch.script_args[3].span == where(path, "--lr", 4)
    assert launch.flags()["name"].value_span == where(path, '  $N  ', 7)


def test_default_and_alternate_expansions(tmp_path):
    text = """\
EMPTY=
SET=value
A=${UNSET:-fallback}
B=${EMPTY:-fallback}
C=${EMPTY-fallback}
D=${SET:-fallback}
E=${SET:+alt}
F=${UNSET:+alt}
G=${SET%%lue}
"""
    variables = read_shell_script(write(tmp_path, "run.sh", text)).variables
    values = {name: variables[name].value for name in "ABCDEFG"}
    assert values == {"A": "fallback", "B": "fallback", "C": "", "D": "value", "E": "alt", "F": "", "G": None}


def test_arithmetic_and_command_substitution_are_unknown(tmp_path):
    text = """\
GBS=$((8 * 32))
HOST=$(hostname -i)
python t.py --global-batch-size $GBS --host "$HOST" --when `date +%s`
"""
    path = write(tmp_path, "run.sh", text)
    script = read_shell_script(path)
    assert script.variables["GBS"].value is None and script.variables["GBS"].raw == "$((8 * 32))"
    assert script.variables["HOST"].value is None
    flags = only_launch(script).flags()
    assert flags["global-batch-size"].value == "$((8 * 32))" and not flags["global-batch-size"].known
    assert flags["global-batch-size"].value_span == where(path, "$((8 * 32))", 1)
    assert flags["host"].value == "$(hostname -i)"
    assert flags["when"].value == "`date +%s`"


def test_arrays(tmp_path):
    text = """\
ARGS=(--lr 1e-4 "--run-name" "a b" $EXTRA)
python t.py "${ARGS[@]}" --second ${ARGS[1]} --all "${ARGS[*]}" --out ${ARGS[9]}
"""
    path = write(tmp_path, "run.sh", text)
    script = read_shell_script(path)
    launch = only_launch(script)
    assert texts(launch.script_args)[:5] == ["--lr", "1e-4", "--run-name", "a b", "$EXTRA"]
    assert launch.script_args[1].span == where(path, "1e-4", 1)
    assert launch.script_args[3].span == where(path, "a b", 1)  # inside the quotes
    flags = launch.flags()
    assert flags["second"].value == "1e-4"
    assert flags["out"].value is None  # past the end: expands to nothing
    assert flags["all"].value == "--lr 1e-4 --run-name a b $EXTRA"
    assert script.variables["ARGS"].value is None  # $EXTRA is unknown
    assert script.variables["ARGS"].raw == '(--lr 1e-4 "--run-name" "a b" $EXTRA)'


def test_non_ascii_columns_count_characters(tmp_path):
    text = 'TAG="模型" python t.py --tag 中文 --lr 1\n'
    path = write(tmp_path, "run.sh", text)
    launch = only_launch(read_shell_script(path))
    assert launch.flags()["lr"].span == where(path, "--lr 1", 1)
    assert launch.env[0].value == "模型"


# ---------------------------------------------------------------- variables and exports


def test_export_versus_plain(tmp_path):
    text = """\
PLAIN=1
export EXPORTED=2 ALSO=3
export LATER
LATER=4
declare -x DECLARED=5
local LOCAL=6
"""
    script = read_shell_script(write(tmp_path, "run.sh", text))
    exported = {name: assignment.exported for name, assignment in script.variables.items()}
    assert exported == {
        "PLAIN": False, "EXPORTED": True, "ALSO": True, "LATER": True, "DECLARED": True, "LOCAL": False,
    }  # fmt: skip
    assert set(script.final_env()) == {"EXPORTED", "ALSO", "LATER", "DECLARED"}


def test_export_after_assignment(tmp_path):
    path = write(tmp_path, "run.sh", "HCCL_DETERMINISTIC=true\nexport HCCL_DETERMINISTIC\n")
    script = read_shell_script(path)
    assert [(a.name, a.value, a.exported) for a in script.env] == [
        ("HCCL_DETERMINISTIC", "true", False),
        ("HCCL_DETERMINISTIC", "true", True),
    ]
    final = script.final_env()["HCCL_DETERMINISTIC"]
    assert final.span == where(path, "HCCL_DETERMINISTIC=true", 1)  # where the value was written


def test_unset_and_unexport(tmp_path):
    text = "export A=1 B=2 C=3\nunset A\nexport -n B\n"
    script = read_shell_script(write(tmp_path, "run.sh", text))
    assert "A" not in script.variables
    assert set(script.final_env()) == {"C"}
    assert script.variables["B"].value == "2"


def test_prefix_assignments_belong_to_the_launch(tmp_path):
    text = "export HCCL_DETERMINISTIC=true\nASCEND_LAUNCH_BLOCKING=1 LR=2 python train.py --lr $LR\nexport LATE=1\n"
    path = write(tmp_path, "run.sh", text)
    script = read_shell_script(path)
    launch = only_launch(script)
    assert [(a.name, a.value, a.exported) for a in launch.env] == [
        ("ASCEND_LAUNCH_BLOCKING", "1", True),
        ("LR", "2", True),
    ]
    assert launch.env[0].span == where(path, "ASCEND_LAUNCH_BLOCKING=1", 2)
    assert "ASCEND_LAUNCH_BLOCKING" not in script.variables  # a prefix does not outlive its command
    assert launch.flags()["lr"].value == "$LR"  # expanded before the prefix applies, as bash does
    assert set(launch.effective_env()) == {"HCCL_DETERMINISTIC", "ASCEND_LAUNCH_BLOCKING", "LR"}
    assert launch.span.column == 1  # the launch starts at its prefix


def test_env_wrapper_assignments(tmp_path):
    launch = only_launch(read_shell_script(write(tmp_path, "run.sh", "env OMP_NUM_THREADS=4 python t.py\n")))
    assert [(a.name, a.value) for a in launch.env] == [("OMP_NUM_THREADS", "4")]


def test_assignment_lines_before_a_command_stay_shell_variables(tmp_path):
    # tree-sitter-bash reads `A=1 B=2<newline>cmd` as one command with two prefixes.
    script = read_shell_script(write(tmp_path, "run.sh", "A=1 B=2\npython t.py --a $A --b $B\n"))
    launch = only_launch(script)
    assert launch.env == () and launch.span.line == 2
    assert set(script.variables) == {"A", "B"}
    assert launch.flags()["b"].value == "2"


def test_accumulated_arguments(tmp_path):
    text = 'ARGS="--lr 1"\nARGS="$ARGS --bf16"\nARGS+=" --seed 7"\npython t.py $ARGS\n'
    path = write(tmp_path, "run.sh", text)
    launch = only_launch(read_shell_script(path))
    assert texts(launch.script_args) == ["--lr", "1", "--bf16", "--seed", "7"]
    assert launch.script_args[0].span == where(path, "--lr", 1)
    assert launch.script_args[2].span == where(path, "--bf16", 2)
    assert launch.script_args[4].span == where(path, "7", 3)


# ---------------------------------------------------------------- sourcing


def test_missing_source_is_recorded(tmp_path):
    text = "source ./not_there.sh\n. $UNKNOWN_DIR/acclint_absent.sh\nsource ~/.bashrc\n"
    script = read_shell_script(write(tmp_path, "run.sh", text))
    assert script.sourced == []
    assert script.unresolved_sources == ["./not_there.sh", "$UNKNOWN_DIR/acclint_absent.sh", "~/.bashrc"]


def test_source_through_a_script_dir_variable(tmp_path):
    write(tmp_path, "env.sh", "export FROM_ENV=1\n")
    text = 'SCRIPT_DIR=$(cd "$(dirname "$0")" && pwd)\nsource "${SCRIPT_DIR}/env.sh"\n'
    script = read_shell_script(write(tmp_path, "run.sh", text))
    assert script.sourced == [str(tmp_path / "env.sh")]
    assert script.final_env()["FROM_ENV"].value == "1"


def test_source_relative_to_the_script_folder_after_expansion(tmp_path):
    (tmp_path / "jobs").mkdir()
    write(tmp_path / "jobs", "gpt.env", "export SEQ=4096\n")
    script = read_shell_script(write(tmp_path / "jobs", "run.sh", "NAME=gpt\n. ./$NAME.env\npython t.py --seq $SEQ\n"))
    assert script.sourced == [str(tmp_path / "jobs" / "gpt.env")]
    assert only_launch(script).flags()["seq"].value == "4096"


def test_sourcing_loop_terminates():
    script = read_shell_script(FIXTURES / "loop_a.sh")
    assert script.sourced == [str(FIXTURES / "loop_b.sh")]
    assert script.unresolved_sources == [str(FIXTURES / "loop_a.sh")]
    assert set(script.final_env()) == {"FROM_A", "FROM_B"}
    assert only_launch(script).script == "train.py"


# ---------------------------------------------------------------- odd input


def test_syntax_error_region_does_not_lose_what_follows():
    path = FIXTURES / "broken_then_launch.sh"
    script = read_shell_script(path)
    launch = only_launch(script)
    assert (launch.launcher, launch.script) == ("python", "train.py")
    assert launch.flags()["lr"].value == "3e-4"
    assert launch.flags()["lr"].value_span == where(path, "3e-4", 6)
    assert script.final_env()["HCCL_DETERMINISTIC"].value == "true"


def test_crlf_line_endings(tmp_path):
    path = tmp_path / "run.sh"
    path.write_bytes(b'ARGS="--lr 1 \\\r\n  --bf16"\r\npython t.py \\\r\n  $ARGS --seed 3\r\n')
    launch = only_launch(read_shell_script(path))
    assert texts(launch.script_args) == ["--lr", "1", "--bf16", "--seed", "3"]
    assert launch.script_args[2].span == Span(str(path), 2, 3, 2, 9)
    assert launch.script_args[3].span == Span(str(path), 4, 9, 4, 15)


def test_empty_file(tmp_path):
    script = read_shell_script(write(tmp_path, "empty.sh", ""))
    assert (script.env, script.variables, script.launches, script.sourced) == ([], {}, [], [])


def test_text_argument_overrides_the_file(tmp_path):
    script = read_shell_script(tmp_path / "never_written.sh", text="python t.py\n")
    assert only_launch(script).span.path == str(tmp_path / "never_written.sh")


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"\x7fELF\x02\x01\x01\x00\x00\x00", "binary"), (b"echo caf\xe9\n", "UTF-8")],
)
def test_unreadable_input_raises_one_clear_error(tmp_path, content, message):
    path = tmp_path / "run.sh"
    path.write_bytes(content)
    with pytest.raises(ShellReadError, match=message) as error:
        read_shell_script(path)
    assert isinstance(error.value, ValueError)


def test_missing_file_raises_shell_read_error(tmp_path):
    with pytest.raises(ShellReadError, match="cannot read"):
        read_shell_script(tmp_path / "absent.sh")


@pytest.mark.parametrize(
    "text",
    ['"unterminated\npython t.py', "$(( \npython a.py", "}}}{{{((\n", "case x in\n", "ARGS=(\n", "\\", "${", "${X:-"],
)
def test_odd_input_never_raises(tmp_path, text):
    read_shell_script(write(tmp_path, "odd.sh", text))


def test_large_script_is_read_whole(tmp_path):
    # 5,000 lines of what launch scripts are made of: exports, argument blocks, growing
    # argument strings, launches inside blocks (its cost is measured in benchmarks/, not asserted here).
    lines = ['BASE_ARGS="--seed 1234"']
    for number in range(714):
        lines += [
            f"export HCCL_VAR_{number}=${{HCCL_VAR_{number}:-{number}}}",
            f'RUN_ARGS_{number}="--lr 1e-4 \\',
            f'    --tag run-{number}"',
            f'BASE_ARGS="$BASE_ARGS --x{number}"' if number < 20 else f"echo step {number} >> log.txt",
            f'if [ "$MODE" == "{number}" ]; then',
            f"    FOO={number} torchrun --nproc_per_node 8 train.py $BASE_ARGS $RUN_ARGS_{number} | tee log.txt",
            "fi",
        ]
    path = write(tmp_path, "big.sh", "\n".join(lines) + "\n")
    script = read_shell_script(path)
    assert len(script.launches) == 714 and len(script.final_env()) == 714
    last = script.launches[-1]
    assert texts(last.script_args)[-4:] == ["--lr", "1e-4", "--tag", "run-713"]
    assert last.flags()["tag"].value_span == where(path, "run-713", 4995)  # block 713 starts on line 2 + 7 * 713
    assert len(last.inherited_env) == 714


def test_random_shell_soup_never_raises(tmp_path):
    tokens = [
        '"', "'", "$", "${", "}", "$(", ")", "(", "$((", "`", "\\", "\n", " ", "\\\n", "=", "A", "B=", "export ",
        "source ", "python ", "torchrun ", "x.py ", "--lr ", "1e-4", "[@]", ":-", "|", "&&", ";", "&", "#", "if ",
        "then ", "fi", "<<EOF\n", "EOF\n", "ARR=(", "+=", "unset ", "${X:-", "${#", "case ", "{", "f() ", "中", "\r\n",
    ]  # fmt: skip
    rng = random.Random(20240601)
    for _ in range(300):
        text = "".join(rng.choice(tokens) for _ in range(rng.randint(0, 40)))
        script = read_shell_script(tmp_path / "soup.sh", text=text)
        for launch in script.launches:
            launch.flags(), launch.launcher_flags()
