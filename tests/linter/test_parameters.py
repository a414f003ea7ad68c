"""Branches a run never takes because of values fixed in the code: a parameter whose literal default no call
the program reaches changes (linter.parameters), a local bound once to a test of flags, a number compared and
a string prefix tested (linter.runconfig). Asserted on the `executes` premise and its evidence."""

from __future__ import annotations

import textwrap

from acclint.config import Config
from acclint.linter.analyze import analyze_file
from acclint.linter.engine import scan
from acclint.rules import all_rules
from acclint.rules.framework_default import _BN_BEHIND_PARAMETER
from acclint.rules.seed import UnseededNumpy


def _scan(tmp_path, files: dict, select: str) -> list:
    for name, source in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    rules = [rule for rule in all_rules() if rule.code == select]
    return [f for f in scan([tmp_path], rules, Config(preview=True), jobs=1, cwd=tmp_path).findings
            if f.rule == select]


def _executes(finding):
    return next(p for p in finding.premises if p.premise == "executes")


# A layer helper whose momentum=0.1 branch only `res_base` turns on; `{built}` is how the net is built.
BN_HELPER = _BN_BEHIND_PARAMETER.replace("  # expect: ACL702", "")


def test_a_branch_under_a_parameter_no_call_turns_on_does_not_execute(tmp_path):
    (finding,) = _scan(tmp_path, {"train.py": BN_HELPER.format(built="Net()")}, "ACL702")
    executes = _executes(finding)
    assert finding.line == 7 and not executes.proven and not finding.proven
    assert executes.evidence.startswith("train.py:7 runs only when res_base is true, and `res_base` defaults to "
                                        "False (train.py:5), and none of the 2 calls of `_bn` the program reaches")
    # The value passed on through `self.res_base`, stored from the constructor's own parameter, is followed.
    assert "train.py:16 passes `self.res_base`, set in `__init__` from a parameter False in every call" \
        in executes.evidence


def test_a_construction_that_passes_the_parameter_runs_the_branch(tmp_path):
    (finding,) = _scan(tmp_path, {"train.py": BN_HELPER.format(built="Net(True)")}, "ACL702")
    assert finding.proven and _executes(finding).evidence == "train.py:7 runs in the program started by train.py"


def test_a_function_handed_over_as_a_value_may_be_called_with_anything(tmp_path):
    source = BN_HELPER.format(built="Net()").replace('    if __name__ == "__main__":',
                                                     '    FACTORIES = {"bn": _bn}\n\n\n    if __name__ == "__main__":')
    (finding,) = _scan(tmp_path, {"train.py": source}, "ACL702")
    assert _executes(finding).proven


# The only NumPy draw runs under `mixup_active = args.mixup > 0 or args.cutmix > 0`, both flags 0 by default.
MIXUP = UnseededNumpy.invalid[2].on_disk()["train.py"]


def test_the_draw_named_runs_only_under_a_local_bound_to_a_test_of_flags_off_by_default(tmp_path):
    (finding,) = _scan(tmp_path, {"train.py": MIXUP}, "ACL103")
    executes = _executes(finding)
    assert not finding.proven and finding.severity == "warning"  # --preview keeps it; a default run shows info
    assert executes.evidence == ("train.py:12 runs only when args.mixup > 0 or args.cutmix > 0, and `--mixup` "
                                 "defaults to 0.0 (train.py:7); `--cutmix` defaults to 0.0 (train.py:8)")


def test_a_launch_that_turns_one_side_on_runs_the_draw(tmp_path):
    (finding,) = _scan(tmp_path, {"train.py": MIXUP, "run.sh": "python train.py --cutmix 1.0\n"}, "ACL103")
    executes = _executes(finding)
    assert finding.proven and "runs when args.cutmix > 0: `--cutmix` is passed as 1.0 by run.sh:1" in executes.evidence


AUGMENT = """
    import numpy as np
    import torch


    class RandAugment:
        def __call__(self, img):
            return img * np.random.choice([0.5, 1.0])


    def augment(size, policy="original-mstd0.5"):
        if policy.startswith("rand"):
            return RandAugment()
        return None


    if __name__ == "__main__":
        torch.manual_seed(0)
        transform = augment(224)
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.ones(4)).sum().backward()
        opt.step()
"""


def test_a_prefix_tested_on_a_parameter_whose_default_every_call_keeps(tmp_path):
    (finding,) = _scan(tmp_path, {"train.py": AUGMENT}, "ACL103")
    assert _executes(finding).evidence == (
        "train.py:7 runs only when policy.startswith('rand'), and `policy` defaults to 'original-mstd0.5' "
        "(train.py:10), and the only call of `augment` the program reaches passes no other value")
    (finding,) = _scan(tmp_path, {"train.py": AUGMENT.replace("augment(224)", "augment(224, 'rand-m9')")}, "ACL103")
    assert finding.proven


def test_a_local_is_taken_for_its_test_only_when_bound_once(tmp_path):
    path = tmp_path / "t.py"
    path.write_text(textwrap.dedent("""
        def main(args):
            active = args.mixup > 0
            if active:
                pass
            again = args.a is not None
            again = False
            for looped in range(3):
                pass
            looped = args.b > 1
    """), encoding="utf-8")
    facts = analyze_file(str(path), "t.py", []).facts
    assert set(facts.tests) == {("main", "active")}
    (guard,) = facts.tests[("main", "active")]
    assert (guard.dotted, guard.form, guard.value, guard.text()) == ("args.mixup", "gt", 0, "args.mixup > 0")


def test_a_number_compared_with_anything_but_zero_picks_a_mode_not_an_opt_in(tmp_path):
    source = MIXUP.replace("mixup_active = args.mixup > 0 or args.cutmix > 0", "mixup_active = args.cutmix > 1")
    (finding,) = _scan(tmp_path, {"train.py": source}, "ACL103")
    assert finding.proven and _executes(finding).evidence == "train.py:12 runs in the program started by train.py"
