"""The one pass and the project flow: names through aliases, fallback imports, positions, reachability."""

from __future__ import annotations

from pathlib import Path

from acclint.config import Config
from acclint.linter.analyze import analyze_file
from acclint.linter.discovery import discover
from acclint.linter.engine import scan
from acclint.linter.project import Project
from acclint.linter.suppress import is_suppressed, suppressions
from acclint.linter.walker import callee_text
from acclint.rules import all_rules


def facts_of(tmp_path: Path, source: str, name: str = "train.py"):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    outcome = analyze_file(str(path), name, [])
    assert outcome.error is None, outcome.error
    return outcome.facts


def test_names_resolve_through_every_import_form(tmp_path):
    facts = facts_of(tmp_path, (
        "import torch.backends.cudnn as cudnn\n"
        "from numpy import random as npr\n"
        "import torch as T\n"
        "back = T.backends\n"
        "cudnn.benchmark = True\n"
        "npr.seed(0)\n"
        "back.cudnn.deterministic = True\n"
        "T.npu.manual_seed_all(1)\n"
    ))
    assignments = {a.target: a.names for a in facts.assignments}
    assert assignments["cudnn.benchmark"] == {"torch.backends.cudnn.benchmark"}
    assert assignments["back.cudnn.deterministic"] == {"torch.backends.cudnn.deterministic"}
    calls = {c.callee: c.names for c in facts.calls}
    assert calls["npr.seed"] == {"numpy.random.seed"}
    assert calls["T.npu.manual_seed_all"] == {"torch.npu.manual_seed_all"}


def test_fallback_import_matches_any_binding_and_torch_npu_is_canonical(tmp_path):
    facts = facts_of(tmp_path, (
        "try:\n    import torch_npu as acc\nexcept ImportError:\n    import torch.cuda as acc\n"
        "acc.npu.manual_seed(0)\nacc.manual_seed_all(0)\n"
    ))
    calls = {c.callee: c.names for c in facts.calls}
    assert "torch.npu.manual_seed" in calls["acc.npu.manual_seed"]
    assert calls["acc.manual_seed_all"] == {"torch_npu.manual_seed_all", "torch.cuda.manual_seed_all"}
    assert all(i.in_fallback for i in facts.imports)


def test_use_before_import_still_resolves(tmp_path):
    facts = facts_of(tmp_path, "def seed():\n    np.random.seed(0)\n\nimport numpy as np\n")
    assert facts.calls[0].names == {"numpy.random.seed"}


def test_positions_are_one_based_and_exact(tmp_path):
    facts = facts_of(tmp_path, "import torch\n\nif True:\n    x = torch.manual_seed(\n        3)\n")
    call = facts.calls[0]
    span = facts.spans[call.node]
    assert (span.line, span.column, span.end_line, span.end_column) == (4, 9, 5, 11)


def test_call_ranges_agree_with_libcst_positions_on_awkward_text(tmp_path):
    """Ranges come from token counts mapped onto the text: Windows newlines, characters outside
    ASCII, a continuation line and no final newline must not shift them from libcst's own."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    source = ("s = 'é€😀'; t = h('ü', k=f(2))\r\nfor a in b:\r\n    c = d(a, \\\r\n      e(1))\r\n"
              "x = g(  # é\r\n    y)")
    path = tmp_path / "train.py"
    path.write_bytes(source.encode("utf-8"))
    facts = analyze_file(str(path), "train.py", []).facts
    wrapper = MetadataWrapper(cst.parse_module(source))
    expected = {}

    class Calls(cst.CSTVisitor):
        METADATA_DEPENDENCIES = (PositionProvider,)

        def visit_Call(self, node):
            where = self.get_metadata(PositionProvider, node)
            expected[callee_text(node.func)] = (where.start.line, where.start.column + 1,
                                                where.end.line, where.end.column + 1)

    wrapper.visit(Calls())
    found = {c.callee: tuple(vars(facts.spans[c.node]).values()) for c in facts.calls}
    assert found == expected and len(found) == 5


def test_env_writes_from_subscripts_setdefault_and_update(tmp_path):
    facts = facts_of(tmp_path, (
        "import os\nfrom os import environ\n"
        "os.environ['HCCL_DETERMINISTIC'] = 'true'\n"
        "environ['A'] = x\n"
        "os.environ.setdefault('CUBLAS_WORKSPACE_CONFIG', ':4096:8')\n"
        "os.environ.update({'PYTHONHASHSEED': '0'})\n"
        "other = {}\nother['B'] = '1'\n"
    ))
    writes = {(w.name, w.value) for w in facts.env_writes}
    assert writes == {("HCCL_DETERMINISTIC", "true"), ("A", None), ("CUBLAS_WORKSPACE_CONFIG", ":4096:8"),
                      ("PYTHONHASHSEED", "0")}


def test_main_guard_and_scopes(tmp_path):
    facts = facts_of(tmp_path, (
        "class T:\n    def fit(self):\n        self.step()\n\n"
        "def main():\n    T().fit()\n\nif __name__ == '__main__':\n    main()\n"
    ))
    assert facts.main_guard is not None
    scopes = {c.callee: (c.scope, c.in_main) for c in facts.calls}
    assert scopes["self.step"] == ("T.fit", False)
    assert scopes["main"] == ("<module>", True)


def _project(tmp_path, files: dict) -> Project:
    outcomes = []
    for name, source in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    for name in files:
        outcomes.append(analyze_file(str(tmp_path / name), name, []).facts)
    return Project(outcomes, [], [str(tmp_path)])


def test_flow_follows_helpers_across_files_methods_and_relative_imports(tmp_path):
    project = _project(tmp_path, {
        "pkg/__init__.py": "from .seeding import seed_all\n",
        "pkg/seeding.py": "import torch\n\ndef seed_all(s):\n    torch.manual_seed(s)\n",
        "train.py": (
            "import pkg\nfrom pkg import seed_all as s_all\n\nclass Trainer:\n    def __init__(self):\n"
            "        self.setup()\n    def setup(self):\n        s_all(1)\n    def fit(self, loss):\n"
            "        loss.backward()\n        self.optimizer.step()\n\nif __name__ == '__main__':\n    t = Trainer()\n"
            "    t.fit(None)\n"
        ),
    })
    (program,) = project.programs()
    callees = [(s.file.path, s.fact.callee) for s in program.flow if hasattr(s.fact, "callee")]
    assert ("pkg/seeding.py", "torch.manual_seed") in callees
    assert ("train.py", "loss.backward") in callees
    assert callees.index(("pkg/seeding.py", "torch.manual_seed")) < callees.index(("train.py", "loss.backward"))


def test_a_library_module_is_not_an_entry_point(tmp_path):
    project = _project(tmp_path, {"model.py": "import torch\n\nclass Net(torch.nn.Module):\n    pass\n"})
    assert project.programs() == []


def test_uncalled_helper_does_not_count_as_seeding(tmp_path):
    for name, source in {
        "train.py": "import torch\n\ndef seed_all():\n    torch.manual_seed(0)\n\n"
        "if __name__ == '__main__':\n    torch.nn.Linear(1, 1)(torch.ones(1)).sum().backward()\n",
    }.items():
        (tmp_path / name).write_text(source)
    result = scan([tmp_path], all_rules(), Config(), jobs=1, cwd=tmp_path)
    codes = {f.rule for f in result.findings}
    assert {"ACL104", "ACL107"} <= codes


def test_discovery_skips_vcs_virtualenvs_and_excluded(tmp_path):
    for name in ("a.py", "run.sh", ".git/x.py", "venv/lib.py", "env2/pyvenv.cfg", "env2/y.py",
                 "build/z.py", "third_party/t.py", "notes.txt"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    found = discover([tmp_path], tmp_path, ["third_party/*"])
    assert sorted(p.relative_to(tmp_path).as_posix() for p in found.files) == ["a.py", "run.sh"]


def test_suppression_table():
    table = suppressions("a = 1  # noqa: ACL202, ACL101\nb = 2  # acclint: ignore[ACL203]\nc = 3  # noqa\n")
    assert is_suppressed(table, "ACL101", 1, 1) and not is_suppressed(table, "ACL203", 1, 1)
    assert is_suppressed(table, "ACL203", 2, 2) and not is_suppressed(table, "ACL202", 2, 2)
    assert is_suppressed(table, "ACL999", 3, 3)
    assert is_suppressed(table, "ACL203", 1, 2)  # multi-line finding, marker on its last line
