"""What a launch line starts (acclint.rules.launch_run): how many processes, on which device, and the
premises ACL205 states from them."""

from __future__ import annotations

from pathlib import Path

from acclint.config import Config
from acclint.linter.analyze import analyze_file
from acclint.linter.context import ProgramContext
from acclint.linter.facts import FileFacts
from acclint.linter.project import Project
from acclint.linter.engine import scan
from acclint.rules import all_rules
from project_files import write
from acclint.rules.determinism import _ZOO_CONFIG_TRAIN, _ZOO_CONFIGS, NPU_DDP_TRAIN
from acclint.rules.launch_run import one_process, other_device

RULES = {rule.code: rule for rule in all_rules()}


def acl205(root: Path) -> dict:
    result = scan([root], [RULES["ACL205"]], Config(preview=True), jobs=1, cwd=root)
    assert result.errors == []
    return {(f.path, f.line): f for f in result.findings if f.rule == "ACL205"}


def launcher(count: int) -> str:
    return ("#!/bin/bash\nsource /usr/local/Ascend/ascend-toolkit/set_env.sh\n"
            f"NUM_GPUS_PER_WORKER={count}\n"
            "python -m torch.distributed.launch --nproc_per_node $NUM_GPUS_PER_WORKER train.py\n")


def test_a_launcher_told_to_start_several_processes_proves_the_run_material(tmp_path):
    found = acl205(write(tmp_path, {"train.py": NPU_DDP_TRAIN, "train_full_8p.sh": launcher(8)}))
    finding = found[("train_full_8p.sh", 4)]
    premises = {p.premise: (p.proven, p.evidence) for p in finding.premises}
    assert premises["material"] == (True, "torch.distributed.launch --nproc_per_node 8 at train_full_8p.sh:4 "
                                          "starts 8 processes")
    assert finding.proven


def test_a_launcher_told_to_start_one_process_is_no_multi_card_run(tmp_path):
    assert acl205(write(tmp_path, {"train.py": NPU_DDP_TRAIN, "train_full_1p.sh": launcher(1)})) == {}


def test_a_rank_loop_proves_its_size_by_the_world_size_it_exports(tmp_path):
    script = ("#!/bin/bash\nexport RANK_SIZE=8\nfor((RANK_ID=0;RANK_ID<RANK_SIZE;RANK_ID++)); do\n"
              "    export RANK_ID=$RANK_ID\n    python3 train.py > train_$RANK_ID.log 2>&1 &\ndone\n")
    finding = acl205(write(tmp_path, {"train.py": NPU_DDP_TRAIN, "train_full_8p.sh": script}))[("train_full_8p.sh", 5)]
    material = next(p for p in finding.premises if p.premise == "material")
    assert material.proven and material.evidence == "RANK_SIZE=8 (line 2) for the launch at train_full_8p.sh:5"


def test_the_config_a_launch_loads_by_default_selects_its_device(tmp_path):
    files = {"train.py": _ZOO_CONFIG_TRAIN, **_ZOO_CONFIGS,
             "run_distribute_train_gpu.sh": "#!/bin/bash\nmpirun -n 8 python train.py\n",
             "run_distribute_train_ascend.sh": "#!/bin/bash\nmpirun -n 8 python train.py "
                                               "--config_path=./default_config.yaml\n"}
    found = acl205(write(tmp_path, files))
    assert set(found) == {("run_distribute_train_ascend.sh", 2)}  # the GPU launch loads default_config_gpu.yaml


def test_the_device_key_of_the_loaded_config_is_the_evidence(tmp_path):
    root = write(tmp_path, {"train.py": _ZOO_CONFIG_TRAIN, **_ZOO_CONFIGS,
                            "run_gpu.sh": "#!/bin/bash\nmpirun -n 8 python train.py\n"})
    outcomes = [analyze_file(str(root / name), name, []) for name in ("train.py", "run_gpu.sh")]
    facts = [o.facts for o in outcomes]
    shells = [f for f in facts if not isinstance(f, FileFacts)]
    project = Project([f for f in facts if isinstance(f, FileFacts)], shells, [str(root)])
    program = next(p for p in project.programs() if p.entry.path == "train.py")
    shell, launch = next(run.launches[0] for run in project.runs(shells))
    context = ProgramContext(program=program, project=project, sink=None)
    assert other_device(context, shell, launch) == ("device_target: GPU in default_config_gpu.yaml:1 (the default of "
                                                    "`--config_path` at train.py:12)")


def program_and_launch(root: Path, files: dict, entry: str):
    write(root, files)
    names = list(files)
    outcomes = [analyze_file(str(root / name), name, []) for name in names]
    facts = [o.facts for o in outcomes]
    shells = [f for f in facts if not isinstance(f, FileFacts)]
    project = Project([f for f in facts if isinstance(f, FileFacts)], shells, [str(root)])
    program = next(p for p in project.programs() if p.entry.path == entry)
    shell, launch = next(run.launches[0] for run in project.runs(shells))
    return program, launch, f"{shell.path}:{launch.span.line}"


SPAWNING = """\
import torch
import torch.multiprocessing as mp


def worker(rank):
    torch.distributed.init_process_group("hccl", rank=rank, world_size=8)
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(2, 2)).sum().backward()
    optimizer.step()


if __name__ == "__main__":
    mp.spawn(worker, nprocs=8)
"""


def test_one_python_line_of_a_program_that_spawns_nothing_is_one_process(tmp_path):
    program, launch, at = program_and_launch(tmp_path, {"train.py": NPU_DDP_TRAIN,
                                                        "run.sh": "#!/bin/bash\npython train.py &\n"}, "train.py")
    assert one_process(launch, at, program) == ("one `python` process at run.sh:2, in no loop, with no world size "
                                                "exported, and train.py starts no workers of its own")
    assert one_process(launch, at) is None  # the program unknown: it may spawn


def test_a_python_line_in_a_loop_or_of_a_spawning_program_is_not_one_process(tmp_path):
    loop = "#!/bin/bash\nfor i in 0 1 2 3; do\n    python train.py --rank $i &\ndone\n"
    program, launch, at = program_and_launch(tmp_path / "loop", {"train.py": NPU_DDP_TRAIN, "run.sh": loop}, "train.py")
    assert launch.repeated and one_process(launch, at, program) is None
    program, launch, at = program_and_launch(tmp_path / "spawn", {"main.py": SPAWNING,
                                                                  "run.sh": "#!/bin/bash\npython main.py\n"}, "main.py")
    assert one_process(launch, at, program) is None


def test_a_count_from_a_script_argument_with_a_default_is_the_callers_choice(tmp_path):
    script = ("#!/bin/bash\nsource /usr/local/Ascend/ascend-toolkit/set_env.sh\nDEV_NUM=${2:-1}\n"
              "msrun --worker_num=$DEV_NUM --local_worker_num=$DEV_NUM train.py\n")
    found = acl205(write(tmp_path, {"train.py": NPU_DDP_TRAIN, "run_train.sh": script}))
    finding = found[("run_train.sh", 4)]  # the README's 4 cards as much as the default 1: still a multi-card launch
    assert "material" not in {p.premise for p in finding.premises}
