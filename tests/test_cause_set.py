"""The cause set (benchmarks/causes/): real divergence causes with fixed twins, scanned with the engine.

Each case is scanned once per mode (default settings and --preview) and side; the tests then hold
the rules to what the set records: no fixed twin is reported by a rule expected to find its cause,
every case's files parse, and every case `--preview` found when it was written is still found.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

from acclint.rules import all_rules

REPO = Path(__file__).resolve().parents[1]
CAUSES = REPO / "benchmarks" / "causes"


def _load_recall():
    spec = importlib.util.spec_from_file_location("cause_recall", CAUSES / "recall.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


recall = _load_recall()
CASES = recall.load_cases(CAUSES)


@pytest.fixture(scope="module")
def verdicts():
    return recall.judge_all(CASES)


def test_the_set_is_large_and_broad():
    assert len(CASES) >= 30
    assert {case.family for case in CASES} == set(recall.FAMILIES)
    # A cause no rule covers yet is kept in the set as a miss (`expected = ["none"]`), never dropped; today
    # every case has a rule, so the set need not hold one.


def _contents(tree: Path) -> dict:
    return {p.relative_to(tree).as_posix(): p.read_bytes() for p in tree.rglob("*") if p.is_file()}


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_case_is_complete(case):
    codes = {rule.code for rule in all_rules()}
    assert case.source.startswith("https://"), "every cause names its public source"
    if case.kind == "scan":
        assert set(case.expected) <= codes, f"unknown rule codes {set(case.expected) - codes}"
    else:  # a diff case names the keys `acclint diff` must report, and holds both setups on each side
        assert case.expected and not set(case.expected) & codes
        assert all((side / part).is_dir() for side in (case.cause, case.fixed) for part in recall.DIFF_SIDES)
    assert case.cause.is_dir() and case.fixed.is_dir()
    lines = (case.cause / case.path).read_text("utf-8").splitlines()
    assert 1 <= case.line <= len(lines), f"{case.path}:{case.line} is not a line of the cause's file"
    assert (case.fixed / case.path).exists(), "the twin keeps the cause's file"
    assert _contents(case.cause) != _contents(case.fixed), "the twin differs from the cause"


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_case_files_parse(case, verdicts):
    for tree in (case.cause, case.fixed):
        for path in tree.rglob("*.py"):
            ast.parse(path.read_text("utf-8"), filename=str(path))
    for mode in recall.MODES:
        assert verdicts[case.name][mode].errors == []


def test_no_fixed_twin_is_flagged(verdicts):
    flagged = {name: {mode: v.twin_hits for mode, v in by_mode.items() if v.twin_hits}
               for name, by_mode in verdicts.items() if any(v.twin_hits for v in by_mode.values())}
    assert flagged == {}


def test_preview_still_finds_what_it_found(verdicts):
    lost = [case.name for case in CASES if case.found_with_preview and not verdicts[case.name]["preview"].found]
    assert lost == []


def test_causes_without_a_rule_are_misses(verdicts):
    figures = recall.summarize(CASES, verdicts)
    for case in CASES:
        if not case.expected:
            assert figures["missed_by_default"][case.name] == "no rule yet"
    assert figures["found_default"] <= figures["found_preview"]
    assert figures["found_preview"] == sum(verdicts[c.name]["preview"].found for c in CASES)


def _write_case(folder: Path, cause: str, fixed: str, line: int):
    for side, text in (("cause", cause), ("fixed", fixed)):
        (folder / side).mkdir(parents=True)
        (folder / side / "train.py").write_text(text, encoding="utf-8")
        (folder / side / "pyproject.toml").write_text('[project]\nname = "probe"\n', encoding="utf-8")
    (folder / "case.toml").write_text(
        'name = "probe"\nfamily = "contiguity"\nsource = "https://example.org"\nexpected = ["ACL501"]\n'
        f'where = "train.py:{line}"\nwhy = "probe"\n', encoding="utf-8")


# A view that only splits dims of a transposed softmax output: ACL501 reports it as info.
_SPLITTING_VIEW = """\
import torch


def main():
    model = torch.nn.Linear(8, 8)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    h = torch.softmax(model(torch.ones(2, 4, 8)), dim=-1)
    out = h.transpose(1, 2).view(2, 8, 2, 2)
    out.sum().backward()
    optimizer.step()


if __name__ == "__main__":
    main()
"""


def test_an_info_finding_is_not_found(tmp_path):
    _write_case(tmp_path / "probe", _SPLITTING_VIEW, _SPLITTING_VIEW.replace(".view(", ".reshape("), line=8)
    case = recall.load_case(tmp_path / "probe")
    verdict = recall.judge(case, preview=True)
    assert [(hit[2], hit[3]) for hit in verdict.cause_hits] == [("ACL501", "info")]
    assert not verdict.found
    why = recall.why_missed(case, {"default": recall.judge(case, preview=False), "preview": verdict})
    assert why.startswith("ACL501 reported as info")


def test_a_twin_that_keeps_the_cause_is_flagged(tmp_path):
    _write_case(tmp_path / "probe", _SPLITTING_VIEW, _SPLITTING_VIEW, line=8)
    figures = recall.measure(tmp_path)
    assert figures["twin_flagged"] == 1 and figures["twins_flagged"] == ["probe"]


def _write_diff_case(folder: Path, port_cause: dict, port_fixed: dict):
    import json

    reference = {"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": True}}
    for side, port in (("cause", port_cause), ("fixed", port_fixed)):
        for part, config in (("reference", reference), ("port", port)):
            (folder / side / part).mkdir(parents=True)
            (folder / side / part / "ds_config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    (folder / "case.toml").write_text(
        'name = "probe"\nfamily = "mixed-precision"\nkind = "diff"\nsource = "https://example.org"\n'
        'expected = ["data_types.grad_accum_dtype"]\nwhere = "port/ds_config.json:2"\nwhy = "probe"\n',
        encoding="utf-8")


def test_a_diff_case_is_found_by_acclint_diff_and_its_twin_judged_the_same_way(tmp_path):
    bf16_accumulation = {"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": True},
                         "data_types": {"grad_accum_dtype": "bf16"}}
    _write_diff_case(tmp_path / "quiet", bf16_accumulation, {"train_micro_batch_size_per_gpu": 2,
                                                             "bf16": {"enabled": True}})
    _write_diff_case(tmp_path / "kept", bf16_accumulation, bf16_accumulation)
    quiet = recall.judge(recall.load_case(tmp_path / "quiet"), preview=False)
    assert quiet.found and quiet.twin_hits == []
    port = (tmp_path / "quiet" / "cause" / "port" / "ds_config.json").read_text("utf-8").splitlines()
    line = next(number for number, text in enumerate(port, 1) if "grad_accum_dtype" in text)
    assert quiet.cause_hits[0][:3] == ("port/ds_config.json", line, "data_types.grad_accum_dtype")
    kept = recall.judge(recall.load_case(tmp_path / "kept"), preview=True)
    assert kept.found and [hit[2] for hit in kept.twin_hits] == ["data_types.grad_accum_dtype"]
