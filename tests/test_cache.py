"""The content cache (`.acclint_cache/`), through the command and the engine."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from acclint.cli import main
from acclint.config import Config, rule_enabled
from acclint.linter.cache import MAGIC, Cache
from acclint.linter.engine import scan
from acclint.linter.maturity import is_preview
from acclint.rules import all_rules

TRAIN = '''\
import torch
from helpers import seed_everything


if __name__ == "__main__":
    seed_everything(0)
    torch.backends.cudnn.benchmark = True
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(2, 4)).sum().backward()
    optimizer.step()
'''
HELPERS = '''\
import torch


def seed_everything(seed):
    torch.manual_seed(seed)
'''


def _project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[tool.acclint]\n", encoding="utf-8")
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    (root / "helpers.py").write_text(HELPERS, encoding="utf-8")
    return root


def _json_scan(root: Path, monkeypatch, *args: str) -> dict:
    monkeypatch.chdir(root)
    # --preview: the program checks these tests rely on include ACL104, a preview rule.
    done = CliRunner().invoke(main, ["scan", ".", "--format", "json", "--preview", *args])
    assert done.exit_code in (0, 1), done.output
    return json.loads(done.stdout)


SRC = Path(__file__).resolve().parents[1] / "src"


def subprocess_env() -> dict:
    """This checkout's sources first, whatever the child's working folder."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH", "")]))
    return env


def _entries(cache_root: Path) -> list:
    return sorted(p for p in cache_root.rglob("*") if p.is_file() and p.parent.parent.parent == cache_root)


# Preview rules on: the probe is ACL202 (cudnn.benchmark), and whether it runs by default is measured data.
CONFIG = Config(preview=True)


def _default_rules() -> list:
    """The rules `acclint scan --preview` runs."""
    return [rule for rule in all_rules() if rule_enabled(CONFIG, rule.code, rule.category, is_preview(rule))]


def _engine_scan(root: Path, cache_root: Path):
    """The engine as `acclint scan --preview` runs it (the cache is keyed by its rules)."""
    rules = _default_rules()
    cache = Cache(cache_root, rules, CONFIG)
    return scan([root], rules, CONFIG, jobs=1, cwd=root, cache=cache), cache


def test_cache_is_written_next_to_pyproject_and_ignored_by_git(tmp_path, monkeypatch):
    root = _project(tmp_path)
    (root / "sub").mkdir()
    monkeypatch.chdir(root / "sub")
    done = CliRunner().invoke(main, ["scan", str(root), "--format", "json"])
    assert done.exit_code == 1, done.output
    cache_root = root / ".acclint_cache"
    assert (cache_root / ".gitignore").read_text().splitlines()[-1] == "*"
    assert len(_entries(cache_root)) == 2
    assert not (root / "sub" / ".acclint_cache").exists()
    # git really ignores it
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root,
                            capture_output=True, text=True, check=True).stdout
    assert ".acclint_cache" not in status and "train.py" in status


def test_warm_scan_reads_every_file_from_the_cache_and_reports_the_same(tmp_path):
    root = _project(tmp_path / "p")
    cold, cache = _engine_scan(root, tmp_path / "cache")
    assert (cache.hits, cache.misses) == (0, 2)
    warm, cache = _engine_scan(root, tmp_path / "cache")
    assert (cache.hits, cache.misses) == (2, 0)
    assert warm.findings == cold.findings and warm.findings
    uncached = scan([root], _default_rules(), CONFIG, jobs=1, cwd=root)
    assert warm.findings == uncached.findings


def test_a_changed_helper_changes_the_entry_points_findings(tmp_path, monkeypatch):
    root = _project(tmp_path)
    first = _json_scan(root, monkeypatch)
    assert not [f for f in first["findings"] if f["rule"] == "ACL104"]
    (root / "helpers.py").write_text(HELPERS.replace("torch.manual_seed(seed)", "pass"), encoding="utf-8")
    second = _json_scan(root, monkeypatch)
    unseeded = [f for f in second["findings"] if f["rule"] == "ACL104"]
    assert [f["path"] for f in unseeded] == ["train.py"]  # program checks ran again over cached train.py
    assert second == _json_scan(root, monkeypatch, "--no-cache")


def test_no_cache_writes_nothing_and_cache_dir_moves_it(tmp_path, monkeypatch):
    root = _project(tmp_path / "p")
    _json_scan(root, monkeypatch, "--no-cache")
    assert not (root / ".acclint_cache").exists()
    _json_scan(root, monkeypatch, "--cache-dir", str(tmp_path / "elsewhere"))
    assert not (root / ".acclint_cache").exists()
    assert len(_entries(tmp_path / "elsewhere")) == 2


def test_corrupt_and_foreign_entries_are_ignored_and_rewritten(tmp_path):
    root = _project(tmp_path / "p")
    cache_root = tmp_path / "cache"
    cold, _ = _engine_scan(root, cache_root)
    entries = _entries(cache_root)
    good = {path: path.read_bytes() for path in entries}
    train_entry = next(p for p in entries if b"train.py" in p.read_bytes())
    payload = good[train_entry][len(MAGIC) + 32:]
    key, digest, path, read_from, outcome = pickle.loads(payload)
    outcome.findings = []  # a forged entry: valid pickle, but the checksum no longer matches
    forged = pickle.dumps((key, digest, path, read_from, outcome))
    foreign_key = pickle.dumps(("another acclint", digest, path, read_from, outcome))
    import hashlib

    damaged = [
        b"",  # empty
        b"garbage",  # no header
        good[train_entry][:-10],  # torn write
        good[train_entry][:-1] + bytes([good[train_entry][-1] ^ 1]),  # flipped bit
        MAGIC + hashlib.sha256(payload).digest() + forged,  # checksum of another payload
        MAGIC + hashlib.sha256(foreign_key).digest() + foreign_key,  # another settings key
        MAGIC + hashlib.sha256(b"cos\nsystem\n.").digest() + b"cos\nsystem\n.",  # not ours at all
    ]
    for data in damaged:
        train_entry.write_bytes(data)
        result, cache = _engine_scan(root, cache_root)
        assert result.findings == cold.findings, data[:40]
        assert (cache.hits, cache.misses) == (1, 1)
        assert train_entry.read_bytes().startswith(MAGIC)  # rewritten
        assert _engine_scan(root, cache_root)[1].hits == 2


def test_a_valid_entry_is_what_the_scan_uses(tmp_path):
    """The warm scan really reads entries (not a re-analysis that happens to agree)."""
    root = _project(tmp_path / "p")
    cache_root = tmp_path / "cache"
    cold, cache = _engine_scan(root, cache_root)
    target = cache.entry_path(os.path.abspath(root / "train.py"), "train.py")
    key, digest, path, read_from, outcome = pickle.loads(target.read_bytes()[len(MAGIC) + 32:])
    # The cached outcome no longer shows `cudnn.benchmark = True`: neither its facts nor the
    # per-file finding the rule made from them.
    outcome.facts.assignments = []
    outcome.findings = [item for item in outcome.findings if item[0].rule != "ACL202"]
    cache._store(os.path.abspath(root / "train.py"), "train.py", digest, outcome)
    warm, _ = _engine_scan(root, cache_root)
    assert {f.rule for f in cold.findings} - {f.rule for f in warm.findings} == {"ACL202"}


def test_rule_selection_is_part_of_the_key(tmp_path, monkeypatch):
    root = _project(tmp_path)
    only = _json_scan(root, monkeypatch, "--select", "ACL202")
    assert {f["rule"] for f in only["findings"]} == {"ACL202"}
    everything = _json_scan(root, monkeypatch)
    assert everything == _json_scan(root, monkeypatch, "--no-cache")
    assert len({f["rule"] for f in everything["findings"]}) > 1


def test_two_scans_at_once_do_not_corrupt_the_cache(tmp_path):
    root = _project(tmp_path)
    for index in range(30):  # enough files that the two writers overlap
        (root / f"mod{index}.py").write_text(f"import torch\nX{index} = torch.ones({index})\n", encoding="utf-8")
    command = [sys.executable, "-m", "acclint", "scan", ".", "--format", "json", "--jobs", "1", "--preview"]
    env = subprocess_env()
    expected = subprocess.run([*command, "--no-cache"], cwd=root, capture_output=True, text=True, env=env).stdout
    assert json.loads(expected)["files_scanned"] == 32
    for _ in range(2):
        runs = [subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                for _ in range(3)]
        outputs = [run.communicate(timeout=120) for run in runs]
        assert all(out == expected for out, _ in outputs), [err for _, err in outputs]
    _, cache = _engine_scan(root, root / ".acclint_cache")
    assert (cache.hits, cache.misses) == (32, 0)  # every entry whole and valid
    assert not [p for p in (root / ".acclint_cache").rglob("*.tmp")]


def test_a_warm_one_file_scan_after_a_parallel_folder_scan_reports_what_a_cold_one_does(tmp_path):
    # Enough files for the worker pool, which analyses the largest first: each outcome must be
    # stored under its own file's entry, not under the entry of the file at its place in the list.
    root = tmp_path / "p"
    (root / "runs").mkdir(parents=True)
    (root / "runs" / "npu_run.sh").write_text(
        "#!/bin/bash\nNPUS_PER_NODE=8\ntorchrun --nproc_per_node $NPUS_PER_NODE pretrain_llm.py\n", encoding="utf-8")
    for index in range(20):  # sizes differ, so the pool's order differs from the folder's
        (root / "runs" / f"other_{index:02}.sh").write_text(
            f"#!/bin/bash\nexport HCCL_DETERMINISTIC=true\n# {'x' * 40 * index}\n"
            "torchrun --nproc_per_node 8 pretrain_llm.py\n", encoding="utf-8")
    rules, config = all_rules(), Config()
    scan([root], rules, config, jobs=2, cwd=root, cache=Cache(tmp_path / "cache", rules, config))
    given = [root / "runs" / "npu_run.sh"]
    warm_cache = Cache(tmp_path / "cache", rules, config)
    warm = scan(given, rules, config, jobs=2, cwd=root, cache=warm_cache)
    cold = scan(given, rules, config, jobs=2, cwd=root)
    assert warm_cache.hits == 1
    assert [(f.path, f.rule) for f in cold.findings] == [("runs/npu_run.sh", "ACL205")]
    assert warm.findings == cold.findings


def test_an_entry_holding_another_files_outcome_is_a_miss(tmp_path):
    root = _project(tmp_path / "p")
    rules, config = all_rules(), Config()
    cache = Cache(tmp_path / "cache", rules, config)
    train, helpers = str(root / "train.py"), str(root / "helpers.py")
    outcome, _ = cache.lookup(helpers, "helpers.py")
    assert outcome is None
    from acclint.linter.analyze import analyze_file

    _, digest = cache.lookup(train, "train.py")
    cache.store(train, "train.py", digest, analyze_file(helpers, "helpers.py", rules))
    assert cache.lookup(train, "train.py")[0] is None


def test_a_changed_sourced_file_changes_a_warm_scan_of_the_launch_script(tmp_path):
    # A launch script's facts include what it sources: its entry is good only while those files
    # (and the ones looked for but absent) are as they were.
    root = tmp_path / "p"
    (root / "recipes").mkdir(parents=True)
    (root / "recipes" / "run.sh").write_text(
        "#!/bin/bash\nsource env.sh\ntorchrun --nproc_per_node 8 pretrain_llm.py\n", encoding="utf-8")
    rules, config = all_rules(), Config()

    def rules_found(warm: bool) -> list:
        cache = Cache(tmp_path / "cache", rules, config) if warm else None
        return [f.rule for f in scan([root / "recipes" / "run.sh"], rules, config, jobs=1, cwd=root, cache=cache).findings]

    assert rules_found(warm=True) == rules_found(warm=False) == []  # not shown to be an NPU run
    (root / "env.sh").write_text("export ASCEND_HOME=/usr/local/Ascend\n", encoding="utf-8")  # appears above
    assert rules_found(warm=True) == rules_found(warm=False) == ["ACL205"]
    (root / "env.sh").write_text("export ASCEND_HOME=/usr/local/Ascend\nexport HCCL_DETERMINISTIC=true\n",
                                 encoding="utf-8")
    assert rules_found(warm=True) == rules_found(warm=False) == []
