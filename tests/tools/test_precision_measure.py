"""benchmarks/precision: the corpus format, zoo splits, stratified samples and the figures they give."""

import importlib.util
import sys
import tomllib
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[2] / "benchmarks" / "precision"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


measure = _load("measure")
split_zoo = _load("split_zoo")


def test_corpus_entries_load_old_and_zoo_shapes():
    repos = measure.load_corpus()
    whole = [r for r in repos if not r.paths]
    parts = [r for r in repos if r.paths]
    assert whole and all(r.folder == r.name for r in whole)
    assert parts and all(r.folder != r.name for r in parts)
    # A zoo's parts share one tree and never share a model folder.
    by_tree = {}
    for part in parts:
        by_tree.setdefault(part.folder, []).append(set(part.paths))
    for folders in by_tree.values():
        assert len(folders) == 2 and not folders[0] & folders[1]


def test_model_folders_are_the_shallowest_with_a_readme():
    files = ["zoo/cv/resnet/README.md", "zoo/cv/resnet/train.py", "zoo/cv/resnet/src/README.md",
             "zoo/cv/resnet/src/net.py", "zoo/cv/vit/train.py", "zoo/README.md", "other/x/y/z.py"]
    assert split_zoo.model_folders(files, 3, ["zoo"]) == ["zoo/cv/resnet", "zoo/cv/vit"]


def test_split_is_seeded_and_disjoint():
    folders = [f"m{i}" for i in range(20)]
    tuning, heldout = split_zoo.split(folders, 27, 0.7)
    assert (tuning, heldout) == split_zoo.split(list(reversed(folders)), 27, 0.7)
    assert len(tuning) == 14 and not set(tuning) & set(heldout) and set(tuning) | set(heldout) == set(folders)
    assert split_zoo.split(folders, 28, 0.7) != (tuning, heldout)
    assert sum(map(len, split_zoo.split(folders, 27, 0.7, limit=10))) == 10


def _repo():
    return measure.Repo(name="zoo-tuning", repo="o/zoo", commit="0" * 40, kind="npu", split="tuning")


def test_a_sample_weighs_its_stratum_back(tmp_path):
    sample = measure.Sample(_repo(), tmp_path)
    keys = [(f"m/{i}.py", 1, "ACL1") for i in range(30)] + [("m/a.py", 2, "ACL2")]
    assert sample.draw(keys, {}, threshold=12, size=12, seed=27) == ["ACL1"]
    drawn = [k for k in keys if sample.weight(k) not in (None, 1.0)]
    assert len(drawn) == 12 and all(sample.weight(k) == 30 / 12 for k in drawn)
    assert sum(sample.weight(k) is None for k in keys) == 18  # not sampled, not "unjudged"
    assert sample.weight(("m/a.py", 2, "ACL2")) == 1.0  # a small stratum is judged whole
    assert sample.weight(("m/new.py", 9, "ACL1")) == 1.0  # appeared after the draw
    reread = measure.Sample(_repo(), tmp_path)  # the draw is recorded and read back, not drawn again
    assert reread.strata == sample.strata
    assert reread.draw(keys, {}, threshold=12, size=12, seed=1) == []


def test_a_stratum_already_judged_is_not_sampled(tmp_path):
    sample = measure.Sample(_repo(), tmp_path)
    keys = [(f"m/{i}.py", 1, "ACL1") for i in range(20)]
    verdicts = {k: {"verdict": "right"} for k in keys[:10]}
    assert sample.draw(keys, verdicts, threshold=12, size=12, seed=27) == []


def test_precision_counts_immaterial_right_and_strict_does_not():
    figures = measure.Figures({"right": 6, "immaterial": 2, "wrong": 2, "debatable": 2, "unjudged": 5})
    assert (figures.judged, figures.decided) == (12, 10)
    # Over the decided verdicts (right or wrong); the debatable ones count apart.
    assert (figures.precision(), figures.strict(), figures.debatable_as_wrong()) == ("80%", "60%", "67%")


def test_default_run_counts_proven_findings_of_stable_rules(capsys):
    tally = measure.Tally()
    tally.add("ACL1", "right", "proven", 2.0)
    tally.add("ACL1", "wrong", "unproven")
    tally.add("ACL2", "wrong", "proven")
    measure.print_table("t", tally, {"ACL1": "stable", "ACL2": "preview"})
    out = capsys.readouterr().out
    assert "| **default run (proven, stable rules)** | | 2 | 2 | 0 | 0 | 0 | **100%** |" in out
    assert "| **preview-only (preview rules)** | | 1 | 0 | 0 | 1 | 0 | **0%** |" in out
    assert "| ACL1 | stable | 3 | 2 | 0 | 1 | 0 | 67% | 67% | 67% | 100% of 2 | 0% of 1 |" in out


def test_proof_reads_the_finding_attribute():
    class Finding:
        pass

    finding = Finding()
    assert measure.proof(finding) == "unproven"
    finding.proven = True
    assert measure.proof(finding) == "proven"


def test_the_table_keeps_its_keys_and_adds_proof_subtables(tmp_path, monkeypatch):
    from acclint.linter import maturity

    tally = measure.Tally()
    for verdict, proven in (("right", "proven"), ("immaterial", "unproven"), ("wrong", "unproven")):
        tally.add("ACL101", verdict, proven)
    monkeypatch.setattr(measure, "TABLE", tmp_path / "rule_precision.toml")
    monkeypatch.setattr(measure.subprocess, "run", lambda *a, **k: None)  # docs are regenerated elsewhere
    measure.write_table(tally, 1)
    data = tomllib.loads((tmp_path / "rule_precision.toml").read_text())
    row = data["ACL101"]
    assert {k: row[k] for k in ("judged", "right", "wrong", "debatable", "immaterial")} == {
        "judged": 3, "right": 2, "wrong": 1, "debatable": 0, "immaterial": 1}
    assert row["proven"]["right"] == 1 and row["unproven"]["judged"] == 2
    # maturity.py reads the same four keys it always read.
    figures = maturity.Precision(**{k: row[k] for k in ("judged", "right", "wrong", "debatable")})
    assert figures.ratio == pytest.approx(2 / 3)


def test_the_table_is_written_from_the_tuning_split_only(capsys):
    # Held-out verdicts measure the maturity the table decides; they must never feed the table.
    for argv in (["--root", ".", "--split", "heldout", "--write-table"],
                 ["--root", ".", "--repo", "verl", "--write-table"]):
        with pytest.raises(SystemExit) as exit_info:
            measure.main(argv)
        assert exit_info.value.code == 2
    assert "--split tuning" in capsys.readouterr().err


def test_every_judged_warning_has_one_valid_verdict():
    """A second row for the same warning would silently replace the first (the last read wins), and a row
    that is no verdict (a header a merge repeated) stops measure.py: a merge that repeats a block, or two
    judges of one warning, must be resolved in the file."""
    import csv
    for path in sorted((HERE / "judged").glob("*.csv")):
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert all(row["verdict"] in measure.VERDICTS for row in rows), path.name
        keys = [(row["path"], row["line"], row["rule"]) for row in rows]
        repeated = sorted({key for key in keys if keys.count(key) > 1})
        assert not repeated, f"{path.name}: {repeated[:3]}"
