"""`acclint scan --fix / --unsafe-fixes / --diff`, through the command, on files on disk.

Every rule's invalid examples go through fix and re-scan (rules added later are covered by
iterating over `all_rules()`): the fixed files still parse, the fixed findings are gone, the
findings without a fix stay, and a second --fix changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import libcst as cst
import pytest
from click.testing import CliRunner

from acclint.cli import main
from acclint.config import Config
from acclint.linter.engine import scan
from acclint.linter.shell import read_shell_script
from acclint.rules import all_rules

RULES = all_rules()
CASES = [
    pytest.param(rule, index, example, id=f"{rule.code}-{index}")
    for rule in RULES
    for index, example in enumerate(rule.invalid)
]


def _write(root: Path, files: dict) -> None:
    for relative, source in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source, encoding="utf-8")


def _snapshot(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(root.rglob("*")) if p.is_file() and ".acclint_cache" not in p.parts}


def _cli(root: Path, monkeypatch, *args: str):
    monkeypatch.chdir(root)
    return CliRunner().invoke(main, ["scan", ".", *args])


def _rule_findings(root: Path, rule) -> list:
    result = scan([root], [rule], Config(), jobs=1, cwd=root)
    assert result.errors == [], result.errors
    return [f for f in result.findings if f.rule == rule.code]


@pytest.mark.parametrize("rule,index,example", CASES)
def test_every_fixable_example_is_fixed_and_stays_fixed(rule, index, example, tmp_path, monkeypatch):
    _write(tmp_path, example.on_disk())
    before = _rule_findings(tmp_path, rule)
    with_fix = [f for f in before if f.autofix is not None]
    without_fix = [(f.path, f.message) for f in before if f.autofix is None]

    first = _cli(tmp_path, monkeypatch, "--select", rule.code, "--fix", "--unsafe-fixes")
    assert first.exit_code in (0, 1), first.output
    fixed = _snapshot(tmp_path)
    if not with_fix:
        assert fixed == dict(example.on_disk())  # nothing to fix: nothing touched
        return
    assert fixed != dict(example.on_disk())
    for relative, text in fixed.items():  # every fixed file still parses
        if relative.endswith(".py"):
            cst.parse_module(text)
        else:
            read_shell_script(str(tmp_path / relative), text)
    after = _rule_findings(tmp_path, rule)
    assert [(f.path, f.message) for f in after] == without_fix, [f"{f.path}:{f.line} {f.message}" for f in after]
    assert first.exit_code == (1 if without_fix else 0)  # the exit code counts what remains

    second = _cli(tmp_path, monkeypatch, "--select", rule.code, "--fix", "--unsafe-fixes")
    assert second.exit_code == first.exit_code
    assert _snapshot(tmp_path) == fixed  # idempotent


def test_rules_declare_fixes_of_both_kinds():
    """The declarations the test above relies on exist: safe and unsafe fixes, Python and shell."""
    kinds, root_fixes = set(), {}
    for rule in RULES:
        for example in rule.invalid:
            for finding in _scan_files(example.on_disk(), rule):
                if finding.autofix is not None:
                    kinds.add(finding.autofix.safe)
                    root_fixes.setdefault(rule.code, set()).add(Path(finding.autofix.changes[0].path).suffix)
    assert kinds == {True, False}
    assert ".sh" in root_fixes["ACL205"] and ".py" in root_fixes["ACL202"]


def _scan_files(files: dict, rule) -> list:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        _write(root, files)
        return _rule_findings(root, rule)


TRAIN = '''\
"""Training entry point."""
import torch


if __name__ == "__main__":
    # speed first
    torch.backends.cudnn.benchmark = True  # set by the old GPU recipe
    torch.use_deterministic_algorithms(True)
    model = torch.nn.Linear(2, 1).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(2, device="cuda")).sum().backward()
    optimizer.step()
'''
LAUNCH = """\
#!/bin/bash
export HCCL_CONNECT_TIMEOUT=1200
torchrun --nproc_per_node 8 train.py --device npu
"""


def _project(root: Path) -> None:
    _write(root, {"train.py": TRAIN, "run.sh": LAUNCH})


def test_fix_applies_only_safe_fixes_and_keeps_comments(tmp_path, monkeypatch):
    _project(tmp_path)
    done = _cli(tmp_path, monkeypatch, "--fix", "--select", "ACL202,ACL204")
    train = (tmp_path / "train.py").read_text()
    # ACL204 (safe) is fixed before the call, with the import it needs; ACL202 (unsafe) is not.
    assert 'os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\n    torch.use_deterministic_algorithms(True)' in train
    assert train.startswith('"""Training entry point."""\nimport os\nimport torch\n')
    assert "torch.backends.cudnn.benchmark = True  # set by the old GPU recipe" in train
    assert "# speed first" in train
    assert done.exit_code == 1  # ACL202 remains
    assert "1 more with --unsafe-fixes" in done.output

    done = _cli(tmp_path, monkeypatch, "--fix", "--unsafe-fixes", "--select", "ACL202,ACL204", "--format", "json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["findings"] == []
    assert "torch.backends.cudnn.benchmark = False  # set by the old GPU recipe" in (tmp_path / "train.py").read_text()


def test_shell_fix_exports_before_the_launch_line(tmp_path, monkeypatch):
    _project(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN.replace("torch.use_deterministic_algorithms(True)",
                                                     'torch.distributed.init_process_group("hccl")'))
    done = _cli(tmp_path, monkeypatch, "--fix", "--select", "ACL205,ACL102")
    assert done.exit_code == 0, done.output
    assert (tmp_path / "run.sh").read_text() == (
        "#!/bin/bash\nexport HCCL_CONNECT_TIMEOUT=1200\nexport HCCL_DETERMINISTIC=true\nexport PYTHONHASHSEED=0\n"
        "torchrun --nproc_per_node 8 train.py --device npu\n")


def test_diff_prints_the_patch_and_writes_nothing(tmp_path, monkeypatch):
    _project(tmp_path)
    before = _snapshot(tmp_path)
    done = _cli(tmp_path, monkeypatch, "--diff", "--unsafe-fixes", "--select", "ACL202,ACL204")
    assert done.exit_code == 1
    assert _snapshot(tmp_path) == before
    assert "--- a/train.py\n+++ b/train.py\n" in done.stdout
    assert "-    torch.backends.cudnn.benchmark = True  # set by the old GPU recipe\n" in done.stdout
    assert "+    torch.backends.cudnn.benchmark = False  # set by the old GPU recipe\n" in done.stdout
    # The patch applies: what --diff shows is what --fix writes.
    _cli(tmp_path, monkeypatch, "--fix", "--unsafe-fixes", "--select", "ACL202,ACL204")
    assert _cli(tmp_path, monkeypatch, "--diff", "--unsafe-fixes", "--select", "ACL202,ACL204").exit_code == 0


def test_suppressed_findings_are_not_fixed(tmp_path, monkeypatch):
    _project(tmp_path)
    source = TRAIN.replace("# set by the old GPU recipe", "# acclint: ignore[ACL202]")
    (tmp_path / "train.py").write_text(source)
    done = _cli(tmp_path, monkeypatch, "--fix", "--unsafe-fixes", "--select", "ACL202")
    assert done.exit_code == 0
    assert (tmp_path / "train.py").read_text() == source


def test_shell_insert_goes_before_a_continued_command(tmp_path, monkeypatch):
    launch = "#!/bin/bash\nASCEND_RT_VISIBLE_DEVICES=0,1 \\\n  torchrun --nproc_per_node 2 train.py --device npu\n"
    _write(tmp_path, {"train.py": TRAIN.replace("torch.use_deterministic_algorithms(True)",
                                                'torch.distributed.init_process_group("hccl")'),
                      "run.sh": launch})
    done = _cli(tmp_path, monkeypatch, "--fix", "--select", "ACL205")
    assert done.exit_code == 0, done.output
    assert (tmp_path / "run.sh").read_text() == launch.replace("#!/bin/bash\n", "#!/bin/bash\nexport HCCL_DETERMINISTIC=true\n")


def test_a_fix_that_cannot_apply_leaves_the_others(tmp_path, monkeypatch):
    one_line = ('import torch\nimport torch.nn as nn\n'
                'torch.backends.cudnn.benchmark = True  # speed\n'
                'if __name__ == "__main__": opt = torch.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1); opt.step()\n')
    _write(tmp_path, {"train.py": one_line})
    done = _cli(tmp_path, monkeypatch, "--fix", "--unsafe-fixes", "--select", "ACL202,ACL104")
    text = (tmp_path / "train.py").read_text()
    assert "torch.backends.cudnn.benchmark = False  # speed" in text  # applied
    assert "manual_seed" not in text  # no place to put it: the `if` body is on one line
    assert done.exit_code == 1 and "1 remaining" in done.output
