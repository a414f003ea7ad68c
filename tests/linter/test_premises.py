"""Premises: every finding says what its claim rests on, proven or not, and a default run keeps a
warning only when every premise is proven (docs/premises.md)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from acclint.cli import main
from acclint.config import Config
from acclint.linter.engine import scan
from acclint.rules import all_rules
from project_files import write

RULES = {rule.code: rule for rule in all_rules()}

TRAINING = """\
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x).transpose(0, 1)
        return y.view(-1)


if __name__ == "__main__":
    torch.backends.cudnn.benchmark = True
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(4, 4)).sum().backward()
    optimizer.step()
"""

EXPORT = """\
import torch
from train import Net


if __name__ == "__main__":
    torch.backends.cudnn.benchmark = True
    model = Net()
    model.load_state_dict(torch.load("net.pt"))
    torch.onnx.export(model, torch.ones(4, 4), "net.onnx")
"""
# The same script without the trained weights: it runs, but nothing shows what it is for.
UNTRAINED_EXPORT = EXPORT.replace('    model.load_state_dict(torch.load("net.pt"))\n', "")


def findings(root: Path, paths, codes, preview: bool = False) -> dict:
    result = scan([root / p for p in paths], [RULES[c] for c in codes], Config(preview=preview), jobs=1, cwd=root)
    assert result.errors == []
    return {(f.path, f.line, f.rule): f for f in result.findings}


def premises(finding) -> dict:
    return {p.premise: (p.proven, p.evidence) for p in finding.premises}


def test_a_setting_in_a_training_entry_point_is_proven_with_the_step_that_trains(tmp_path):
    found = findings(write(tmp_path, {"train.py": TRAINING}), ["train.py"], ["ACL202"])
    finding = found[("train.py", 15, "ACL202")]
    assert finding.proven and finding.severity == "warning"
    stated = premises(finding)
    assert stated["trains"] == (True, "`optimizer.step()` at train.py:19, reached from train.py")
    assert stated["executes"][0] and "train.py:15 runs in the program started by train.py" in stated["executes"][1]


def test_a_line_in_forward_runs_when_the_program_calls_the_module(tmp_path):
    found = findings(write(tmp_path, {"train.py": TRAINING}), ["train.py"], ["ACL501"])
    finding = found[("train.py", 11, "ACL501")]
    assert finding.proven and finding.severity == "warning"


def test_an_export_script_that_loads_a_checkpoint_reports_nothing_of_its_own(tmp_path):
    """Certainly no training run (trained weights loaded, nothing that trains built): noise, not advice."""
    root = write(tmp_path, {"train.py": TRAINING, "export.py": EXPORT})
    assert findings(root, ["export.py"], ["ACL202"]) == {}
    assert ("train.py", 15, "ACL202") in findings(root, ["."], ["ACL202"])


def test_a_script_that_reaches_no_training_step_proves_no_training(tmp_path):
    root = write(tmp_path, {"train.py": TRAINING, "export.py": UNTRAINED_EXPORT})
    default = findings(root, ["export.py"], ["ACL202"])
    finding = default[("export.py", 6, "ACL202")]
    assert not finding.proven and finding.severity == "info"
    proven, evidence = premises(finding)["trains"]
    assert not proven and evidence == "no optimizer step or training call is reached from export.py"
    assert "Not proven: trains: no optimizer step or training call is reached from export.py;" in finding.message
    preview = findings(root, ["export.py"], ["ACL202"], preview=True)[("export.py", 6, "ACL202")]
    assert preview.severity == "warning" and "Not proven: trains:" in preview.message  # --preview keeps severity


def test_gradients_without_an_optimizer_step_prove_no_training(tmp_path):
    source = TRAINING.replace("    optimizer.step()\n", "")
    finding = findings(write(tmp_path, {"train.py": source}), ["train.py"], ["ACL202"])[("train.py", 15, "ACL202")]
    proven, evidence = premises(finding)["trains"]
    assert not proven and "computes gradients (train.py:18) but reaches no optimizer step" in evidence


def test_a_class_nothing_builds_does_not_run(tmp_path):
    source = TRAINING.replace("    model = Net()\n", "    model = torch.nn.Linear(4, 4)\n")
    finding = findings(write(tmp_path, {"train.py": source}), ["train.py"], ["ACL501"])[("train.py", 11, "ACL501")]
    proven, evidence = premises(finding)["executes"]
    assert not proven and "train.py:11 is not reached from train.py" in evidence
    assert premises(finding)["trains"][0]  # the file is a training program; the line is not in it


def test_a_helper_given_alone_is_advice_and_proven_in_its_program(tmp_path):
    helper = "import torch\n\n\ndef configure():\n    torch.backends.cudnn.benchmark = True\n"
    entry = TRAINING.replace("import torch\n", "import torch\nfrom helpers import configure\n", 1).replace(
        "    model = Net()\n", "    configure()\n    model = Net()\n")
    root = write(tmp_path, {"train.py": entry, "helpers.py": helper})
    alone = findings(root, ["helpers.py"], ["ACL202"])[("helpers.py", 5, "ACL202")]
    assert not alone.proven and alone.severity == "info"
    whole = findings(root, ["."], ["ACL202"])[("helpers.py", 5, "ACL202")]
    assert whole.proven and whole.severity == "warning"


def test_a_launch_line_whose_script_is_not_on_disk_proves_training_by_its_name(tmp_path):
    root = write(tmp_path, {"run.sh": "#!/bin/bash\nexport HCCL_CONNECT_TIMEOUT=1200\n"
                                      "torchrun --nproc_per_node 8 pretrain_gpt.py --train-iters 10\n"})
    finding = findings(root, ["run.sh"], ["ACL205"])[("run.sh", 3, "ACL205")]
    stated = premises(finding)
    assert stated["trains"][0] and "launches pretrain_gpt.py, a training script" in stated["trains"][1]
    assert finding.proven and finding.severity == "warning"


def test_a_never_claim_over_calls_chosen_at_run_time_is_not_proven(tmp_path):
    source = """\
        import torch
        from hydra.utils import instantiate


        def main(cfg):
            setup = instantiate(cfg.setup)
            setup.run()
            model = torch.nn.Linear(2, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.ones(2)).sum().backward()
            optimizer.step()


        if __name__ == "__main__":
            main(None)
    """
    found = findings(write(tmp_path, {"train.py": source}), ["train.py"], ["ACL201"], preview=True)
    finding = next(f for key, f in found.items() if key[2] == "ACL201")
    proven, evidence = premises(finding)["value"]
    assert not proven and "whose target is chosen at run time" in evidence


def test_json_sarif_and_html_carry_the_premises(tmp_path, monkeypatch):
    write(tmp_path, {"train.py": TRAINING, "export.py": UNTRAINED_EXPORT})
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    report = json.loads(runner.invoke(main, ["scan", ".", "--select", "ACL202", "--format", "json", "--no-cache"]).output)
    by_path = {f["path"]: f for f in report["findings"]}
    assert by_path["train.py"]["proven"] is True and by_path["export.py"]["proven"] is False
    assert [p["premise"] for p in by_path["export.py"]["premises"]] == ["trains", "executes"]
    sarif = json.loads(runner.invoke(main, ["scan", ".", "--select", "ACL202", "--format", "sarif",
                                            "--no-cache"]).output)
    properties = [r["properties"] for r in sarif["runs"][0]["results"]]
    assert sorted(p["proven"] for p in properties) == [False, True]
    runner.invoke(main, ["report", ".", "--select", "ACL202", "--preview", "-o", "report.html"])
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Why acclint thinks so (not proven):" in page and "trains not proven: no optimizer step" in page
