"""The facts the clip-before-unscale, deterministic-op, file-order and transfer_to_npu rules read, and
their behaviour on inputs their examples do not show (odd forms, half-written code)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from acclint.config import Config
from acclint.linter.analyze import analyze_file
from acclint.linter.engine import scan
from acclint.rules import all_rules
from acclint.knowledge import table as knowledge_table
from acclint.rules.deterministic_ops import _expand, recent_releases

REPO = Path(__file__).resolve().parents[2]
RULES = {rule.code: rule for rule in all_rules()}


def facts_of(tmp_path: Path, source: str):
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    outcome = analyze_file(str(path), "train.py", [])
    assert outcome.error is None, outcome.error
    return outcome.facts


def findings(tmp_path: Path, files: dict, code: str) -> list:
    for name, source in files.items():
        (tmp_path / name).write_text(textwrap.dedent(source), encoding="utf-8")
    result = scan([tmp_path], [RULES[code]], Config(), jobs=1, cwd=tmp_path)
    assert result.errors == []
    return sorted((f.path, f.line) for f in result.findings if f.rule == code)


def test_calls_record_where_their_result_flows(tmp_path):
    facts = facts_of(tmp_path, """
        import os, glob
        files = sorted(os.path.join(d, f) for f in os.listdir(d))
        self.paths = [p for p in glob.glob("*.jpg")]
        if "a" in os.listdir(d):
            n = len(glob.glob("*"))
    """)
    sinks = {(c.callee, c.sinks) for c in facts.calls if c.method in ("listdir", "glob")}
    assert ("os.listdir", ("name:files", "arg:sorted", "comp")) in sinks
    assert ("glob.glob", ("attr:self.paths", "comp")) in sinks
    assert ("os.listdir", ("test", "in")) in sinks
    assert ("glob.glob", ("name:n", "arg:len")) in sinks


def test_blocks_order_ranges_and_reads_of_listing_locals(tmp_path):
    facts = facts_of(tmp_path, """
        import glob
        from apex import amp

        def step(loss, opt):
            files = glob.glob("*.png")
            for path in files:
                out.append(path)
            with amp.scale_loss(loss, opt) as scaled:
                scaled.backward()
            clip()
    """)
    loop, with_block = [b for b in facts.blocks if b.kind == "for"][0], [b for b in facts.blocks if b.kind == "with"][0]
    assert loop.targets == ("path",) and loop.start < loop.head_end < loop.end
    append = next(c for c in facts.calls if c.callee == "out.append")
    assert loop.head_end < append.order < loop.end
    backward = next(c for c in facts.calls if c.method == "backward")
    clip = next(c for c in facts.calls if c.callee == "clip")
    assert with_block.head_end < backward.order < with_block.end < clip.order
    assert with_block.targets == ("scaled",) and "apex.amp.scale_loss" in with_block.items[0].base_names
    assert [(u.name, u.sinks) for u in facts.name_uses] == [("files", ("iter",))]


def test_decorators_are_recorded(tmp_path):
    facts = facts_of(tmp_path, """
        import torch

        @torch.jit.script
        def f(x):
            return x
    """)
    assert facts.functions["f"].decorators[0].names == frozenset({"torch.jit.script"})


def test_clip_with_unpacked_arguments_and_unknown_scaler_forms(tmp_path):
    assert findings(tmp_path, {"train.py": """
        import torch

        def step(scaler, loss, kw, opt):
            scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(**kw)
            scaler.step(opt)
            scaled = scaler.scale(loss)
            scaled.backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(*kw)
            scaler.step(opt)
    """}, "ACL610") == [("train.py", 6)]


def test_accelerate_clip_unscales_by_itself(tmp_path):
    assert findings(tmp_path, {"train.py": """
        def step(accelerator, scaler, loss, model):
            scaler.scale(loss).backward()
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
    """}, "ACL610") == []


def test_file_listing_odd_forms(tmp_path):
    assert findings(tmp_path, {"data.py": """
        import glob, os
        from pathlib import Path

        def a(root, pattern, **kw):
            process(glob.glob(pattern, **kw))
            files = glob.glob(pattern)
            files = sorted(files)
            return files

        def b(root):
            names = os.listdir(root)
            names.sort(key=len)
            return names

        def c(root):
            return list(Path(root).iterdir())

        corpus = load_dataset("text", data_files=c("data"))
    """}, "ACL211") == [("data.py", 17)]


def test_raising_ops_need_deterministic_mode_without_warn_only(tmp_path):
    source = """
        import torch
        import torch.nn.functional as F

        if __name__ == "__main__":
            torch.use_deterministic_algorithms(True, warn_only={warn})
            x = torch.nn.Conv2d(1, 1, 1).cuda()(torch.randn(1, 1, 4, 4, device="cuda"))
            F.interpolate(x, scale_factor=2, mode=MODE).sum().backward()
            F.interpolate(x, scale_factor=2, mode="bicubic").sum().backward()
            torch.histc(x, bins=4)
            x.cumsum(0, dtype=torch.float32)
            x.cumsum(0)
    """
    assert findings(tmp_path, {"train.py": source.format(warn="False")}, "ACL210") == [
        ("train.py", 9), ("train.py", 10), ("train.py", 11)]  # mode=MODE is unknown: quiet
    assert findings(tmp_path, {"train.py": source.format(warn="True")}, "ACL210") == []
    assert findings(tmp_path, {"train.py": source.format(warn="args.warn")}, "ACL210") == []


def test_transfer_to_npu_imported_as_a_module_path(tmp_path):
    assert findings(tmp_path, {"train.py": """
        import torch
        import torch_npu
        import torch_npu.contrib.transfer_to_npu

        if __name__ == "__main__":
            t = torch.cuda.DoubleTensor([1.0])
            torch.nn.Linear(1, 1).cuda()(t.float()).sum().backward()
    """}, "ACL611") == [("train.py", 7)]


def test_generated_table_matches_the_installed_torch(tmp_path):
    """The committed table holds the installed release as the generator reads it."""
    torch = pytest.importorskip("torch")
    release = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    out = tmp_path / "table.toml"
    table = REPO / "src" / "acclint" / "knowledge" / "deterministic_ops.toml"
    out.write_text(table.read_text(encoding="utf-8"), encoding="utf-8")
    sys.path.insert(0, str(REPO / "tools"))
    try:
        import gen_deterministic_ops as gen
    finally:
        sys.path.pop(0)
    gen.main(["-o", str(out)])
    assert out.read_text(encoding="utf-8") == table.read_text(encoding="utf-8")
    assert release in knowledge_table("deterministic_ops")['releases_recorded']
    lists = gen.parse(torch.use_deterministic_algorithms.__doc__)
    raising = dict(lists["raises"])
    assert "linear" in raising["torch.nn.functional.interpolate"] and "bicubic" in raising["torch.nn.functional.interpolate"]
    assert "torch.nn.AdaptiveAvgPool2d" in raising and "torch.nn.Conv2d" in dict(lists["deterministic"])


def test_an_op_fixed_in_the_newest_release_still_counts_in_the_recent_ones():
    recorded = knowledge_table("deterministic_ops")["releases_recorded"]
    assert recorded[0] == "2.0" and len(recorded) >= 16  # every release from 2.0 on, from its wheel
    assert _expand("2.1-2.3", recorded) == ["2.1", "2.2", "2.3"] and _expand("2.99", recorded) == []
    cumsum = knowledge_table("deterministic_ops")["ops"]["torch.cumsum"]["raises"]
    last = max(recorded.index(_expand(r, recorded)[-1]) for row in cumsum for r in row["releases"])
    # cumsum stopped raising after 2.13 (moved to the made-deterministic list), inside the window.
    assert recorded[last] == "2.13" and "2.13" in recent_releases()
