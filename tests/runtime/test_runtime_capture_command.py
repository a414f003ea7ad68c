"""`acclint capture -- COMMAND` on an unmodified nanoGPT-style training script (tests/runtime/nanogpt_style)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rank_launcher import SRC, free_port

from acclint.runtime import compare, load

FIXTURE = Path(__file__).with_name("nanogpt_style")


@pytest.fixture(scope="module")
def project(torch, tmp_path_factory) -> Path:
    """A copy of the training script, so the test can check that nothing is written into it."""
    target = tmp_path_factory.mktemp("nanogpt") / "project"
    shutil.copytree(FIXTURE, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def capture(project: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = dict(os.environ, OMP_NUM_THREADS="1", **(env or {}))
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), environment.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "acclint", "capture", *args], cwd=project, env=environment,
                          capture_output=True, text=True, timeout=240)


def train(*overrides: str) -> list[str]:
    return ["--", sys.executable, "train.py", "config/tiny.py", *overrides]


@pytest.fixture(scope="module")
def reference(project: Path, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("reference") / "a.json"
    before = sorted(p.name for p in project.rglob("*") if "__pycache__" not in p.parts)
    run = capture(project, "-o", str(path), *train())
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in project.rglob("*") if "__pycache__" not in p.parts) == before
    return path


def test_writes_the_fingerprint_of_the_first_step(reference):
    fingerprint = load(reference)
    assert fingerprint.framework == "torch" and fingerprint.model == "TinyGPT"
    assert len(fingerprint.optimizer.groups) == 2  # decay / no decay, as the script builds them
    assert fingerprint.optimizer.groups[0].hparams["adam-beta2"] == 0.95
    assert fingerprint.optimizer.extra["clip-grad"] == 1.0  # torch.nn.utils.clip_grad_norm_ was seen
    # two micro-batches (gradient accumulation) of (X, Y), 4 sequences of 16 tokens each
    assert [(v.path, v.shape) for v in fingerprint.batch] == [("0.0", [4, 16]), ("0.1", [4, 16]),
                                                               ("1.0", [4, 16]), ("1.1", [4, 16])]
    # the forward of both micro-batches, not the evaluation at iteration 0 (under no_grad)
    outputs = [r for r in fingerprint.forward if r.name == "" and r.io == "output"]
    assert [r.call for r in outputs] == [0, 1]
    step = fingerprint.step
    assert 3.5 < step.loss < 5.0  # the mean of the micro-batch losses of a 64-token vocabulary (ln 64 = 4.16)
    assert step.grad_norm is not None and step.grad_norm > 0
    assert set(step.update_norms) == {p.name for p in fingerprint.params}
    assert all(norm > 0 for norm in step.update_norms.values())


def test_the_job_stops_after_the_captured_step(project, tmp_path):
    done = tmp_path / "done.txt"
    run = capture(project, "-o", str(tmp_path / "x.json"), *train(f"--out_file={done}"))
    assert run.returncode == 0, run.stderr
    assert "iter 0" not in run.stdout and not done.exists()


def test_continue_runs_the_job_to_its_end(project, tmp_path):
    done = tmp_path / "done.txt"
    run = capture(project, "-o", str(tmp_path / "x.json"), "--continue", *train(f"--out_file={done}"))
    assert run.returncode == 0, run.stderr
    assert "iter 4" in run.stdout and done.read_text().startswith("finished 5 iterations")


def test_two_runs_at_parity_exit_0(project, reference, tmp_path):
    run = capture(project, "-o", str(tmp_path / "b.json"), "--reference", str(reference), *train())
    assert run.returncode == 0, run.stderr
    assert "at parity" in run.stderr
    assert compare(load(tmp_path / "b.json"), load(reference)).ok


def test_a_changed_beta2_is_reported_as_optimizer_hparam_first_exit_1(project, reference, tmp_path):
    run = capture(project, "-o", str(tmp_path / "c.json"), "--reference", str(reference), *train("--beta2=0.99"))
    assert run.returncode == 1, run.stderr
    # The reference is the left side, as in `acclint compare REF NEW`; the verdict goes to stdout.
    assert "[optimizer-hparam] adam-beta2 is 0.95 on the left, 0.99 on the right" in run.stdout
    first = compare(load(tmp_path / "c.json"), load(reference)).causes[0]
    assert (first.kind, first.name) == ("optimizer-hparam", "adam-beta2")


def test_warn_prints_the_verdict_and_lets_the_job_finish(project, reference, tmp_path):
    done = tmp_path / "done.txt"
    run = capture(project, "-o", str(tmp_path / "c.json"), "--reference", str(reference), "--on-mismatch", "warn",
                  *train("--beta2=0.99", f"--out_file={done}"),  # no --continue needed
                  env={"PYTHONWARNINGS": "ignore"})  # a program that silences warnings still shows the verdict
    assert run.returncode == 0, run.stderr
    assert "adam-beta2" in run.stdout + run.stderr and done.exists()
    assert "the job ended with exit status 0" in run.stderr


JOB_THAT_FAILS_AFTER_TRAINING = """
import sys
import torch
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=float(sys.argv[1]))
for step in range(3):
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(torch.ones(2, 4)), torch.zeros(2, 1)).backward()
    optimizer.step()
print("trained to the end", flush=True)
raise SystemExit(7)
"""


def test_warn_exits_with_the_jobs_own_status(torch, tmp_path):
    script = tmp_path / "job.py"
    script.write_text(JOB_THAT_FAILS_AFTER_TRAINING)
    first = capture(tmp_path, "-o", str(tmp_path / "a.json"), "--", sys.executable, str(script), "0.1")
    assert first.returncode == 0, first.stderr  # stopped after step 0: the job's exit 7 never came
    run = capture(tmp_path, "-o", str(tmp_path / "b.json"), "--reference", str(tmp_path / "a.json"),
                  "--on-mismatch", "warn", "--", sys.executable, str(script), "0.2")
    assert run.returncode == 7, run.stderr
    assert "trained to the end" in run.stdout and "[optimizer-hparam] lr" in run.stdout


def test_an_output_folder_that_does_not_exist_is_an_error_not_a_new_folder(project, tmp_path):
    missing = tmp_path / "nonexistent"
    run = capture(project, "-o", str(missing / "x.json"), *train())
    assert run.returncode == 2
    assert "does not exist" in run.stderr and "Traceback" not in run.stderr
    assert not missing.exists()


def test_steps_2_records_the_loss_of_the_next_step(project, tmp_path):
    run = capture(project, "-o", str(tmp_path / "s.json"), "--steps", "2", *train())
    assert run.returncode == 0, run.stderr
    step = load(tmp_path / "s.json").step
    assert step.after_step_batch == "next" and step.loss_after_step is not None
    assert step.loss_after_step != step.loss


def test_steps_beyond_the_run_keep_the_steps_that_ran(project, tmp_path):
    """--steps 8 on a 5-iteration run: the fingerprint is written at exit with the 5 steps, saying why not 8."""
    run = capture(project, "-o", str(tmp_path / "s.json"), "--steps", "8", *train("--eval_iters=0"))
    assert run.returncode == 0, run.stderr
    step = load(tmp_path / "s.json").step
    assert len(step.losses) == len(step.lrs) == 5 and step.losses[0] == pytest.approx(step.loss)
    assert step.steps_unrecorded == "the training ended after 5 of the 8 steps asked for"


@pytest.mark.parametrize("program, reason", [
    ("import torch", "torch was imported but no torch.optim.Optimizer was created"),
    ("import torch; torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1); raise SystemExit(3)",
     "the program ended before its first optimizer step (exit status 3)"),
    ("print('no framework')", "no Python process of the command imported torch or MindSpore"),
])
def test_no_optimizer_step_exit_2_says_why(torch, tmp_path, program, reason):
    run = capture(tmp_path, "-o", str(tmp_path / "x.json"), "--", sys.executable, "-c", program)
    assert run.returncode == 2
    assert reason in run.stderr
    assert not (tmp_path / "x.json").exists()


def test_a_command_that_cannot_start_exit_2(tmp_path):
    run = capture(tmp_path, "--", "no-such-program-acclint")
    assert run.returncode == 2 and "cannot run 'no-such-program-acclint'" in run.stderr
    assert "Traceback" not in run.stderr


def test_a_sitecustomize_of_the_environment_still_runs(project, tmp_path):
    """The start-up hook hides any sitecustomize further down the path; it runs that one too."""
    site = tmp_path / "site"
    site.mkdir()
    marker = tmp_path / "ran.txt"
    (site / "sitecustomize.py").write_text(f"import sys\nopen({str(marker)!r}, 'a').write(' '.join(sys.argv) + '\\n')\n")
    run = capture(project, "-o", str(tmp_path / "x.json"), *train(), env={"PYTHONPATH": str(site)})
    assert run.returncode == 0, run.stderr
    # acclint's own process has the folder on its path too; the training process is the one that matters
    assert "train.py config/tiny.py" in marker.read_text().splitlines()


def test_a_shell_script_launching_python(project, reference, tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(f'cd {project}\n"{sys.executable}" train.py config/tiny.py "$@"\necho after > {tmp_path}/after\n')
    run = capture(project, "-o", str(tmp_path / "sh.json"), "--reference", str(reference), "--", "bash", str(script))
    assert run.returncode == 0, run.stderr
    assert not (tmp_path / "after").exists()  # the job (the whole script) stopped after the capture


def test_torchrun_two_ranks_one_logical_fingerprint(project, reference, tmp_path):
    def torchrun(path: Path, *overrides: str) -> subprocess.CompletedProcess:
        return capture(project, "-o", str(path), "--", sys.executable, "-m", "torch.distributed.run",
                       "--nproc_per_node", "2", "--master_port", str(free_port()), "train.py", "config/tiny.py",
                       *overrides)

    first = torchrun(tmp_path / "t1.json")
    assert first.returncode == 0, first.stderr
    fingerprint = load(tmp_path / "t1.json")
    assert (fingerprint.logical, fingerprint.world_size) == (True, 2)
    assert sorted(p.name for p in tmp_path.glob("t1*")) == ["t1.json"]  # written once, on rank 0
    # each rank drew its own micro-batch: the global batch holds both ranks' samples
    assert [v.shape for v in fingerprint.batch] == [[8, 16], [8, 16]]
    # the forward of every module (rank 0's view where the ranks' data differ), not only the agreed ones
    single = load(reference)
    assert {r.name for r in fingerprint.forward} == {r.name for r in single.forward}
    assert compare(fingerprint, load(tmp_path / "t1.json")).ok
    second = torchrun(tmp_path / "t2.json", "--beta2=0.99")
    assert second.returncode == 0, second.stderr
    result = compare(load(tmp_path / "t2.json"), fingerprint)
    assert (result.causes[0].kind, result.causes[0].name) == ("optimizer-hparam", "adam-beta2")


@pytest.mark.parametrize("how", ["model", "loop"])
def test_mindspore_without_an_edit(ms, tmp_path, how):
    """Model.train, and a loop of the program's own around nn.TrainOneStepCell."""
    script = Path(__file__).with_name("ms_model_train.py")
    run = capture(tmp_path, "-o", str(tmp_path / "ms.json"), "--", sys.executable, str(script), "0.01", how)
    assert run.returncode == 0, run.stderr
    assert "trained to the end" not in run.stdout  # stopped after the captured step
    fingerprint = load(tmp_path / "ms.json")
    assert fingerprint.framework == "mindspore" and fingerprint.step.loss > 0
    assert [p.name for p in fingerprint.params][:1] == ["0.weight"]  # the network's own names, not WithLossCell's
    other = capture(tmp_path, "-o", str(tmp_path / "ms2.json"), "--reference", str(tmp_path / "ms.json"), "--",
                    sys.executable, str(script), "0.02", how)
    assert other.returncode == 1
    assert "[optimizer-hparam] lr" in other.stdout


def test_acclint_capture_itself_imports_no_framework():
    """The parent only launches and reads status files: torch's import time is the command's alone."""
    script = ("import sys\nimport acclint.runtime_checks.capture_hooks.command\n"
              "print(sorted(m for m in sys.modules if m.split('.')[0] in {'torch', 'mindspore'}))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_bad_output_and_bad_reference_exit_2_with_a_message(project, tmp_path):
    unwritable = capture(project, "-o", "/proc/acclint-a.json", *train())  # the folder exists, unwritable
    assert unwritable.returncode == 2
    assert "error: cannot write /proc/acclint-a.json" in unwritable.stderr
    stranger = tmp_path / "other.json"
    stranger.write_text('{"x": 1}')
    unreadable = capture(project, "-o", str(tmp_path / "z.json"), "--reference", str(stranger), *train())
    assert unreadable.returncode == 2
    assert "not an acclint fingerprint" in unreadable.stderr
    for run in (unwritable, unreadable):
        assert "Traceback" not in run.stderr


@pytest.mark.parametrize("how", ["model", "loop"])
def test_mindspore_graph_mode_without_an_edit(ms, tmp_path, how):
    """GRAPH mode (mindcv's default), through Model.train and TrainOneStepCell: step 0 is captured in
    PyNative (graph mode allows no hook in the compiled step), the program's own steps run in GRAPH
    mode to the end, and the fingerprint equals a PyNative run's."""
    script = Path(__file__).with_name("ms_model_train.py")
    graph = capture(tmp_path, "-o", str(tmp_path / "g.json"), "--continue", "--", sys.executable, str(script), "0.01",
                    how, "graph")
    assert graph.returncode == 0, graph.stderr
    assert "trained to the end" in graph.stdout and "Traceback" not in graph.stderr
    fingerprint = load(tmp_path / "g.json")
    assert fingerprint.env["settings"]["mindspore-mode"].startswith("GRAPH (step 0 captured in PyNative")
    assert fingerprint.forward  # recorded in the PyNative replay of the step
    pynative = capture(tmp_path, "-o", str(tmp_path / "p.json"), "--", sys.executable, str(script), "0.01", how)
    assert pynative.returncode == 0, pynative.stderr
    result = compare(load(tmp_path / "p.json"), fingerprint)
    assert result.ok, result.verdict()
