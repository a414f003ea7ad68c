"""Property-based tests: no input crashes the scanner. Every file yields findings or a per-file
error, never an internal error, and the whole scan (program checks included) always finishes.

Inputs: Python from hypothesmith (grammar- and CST-based), generated launch scripts, and
mutations of the bundled examples (Python and shell). The fixer runs over what they produce too.

Budget: a fixed number of examples per test that fits CI (about half a minute in all on
2 cores). For a long run: ACCLINT_FUZZ_EXAMPLES=2000 python -m pytest tests/test_fuzz.py
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acclint.config import Config
from acclint.linter.engine import scan
from acclint.linter.fix import plan_fixes
from acclint.linter.shell import ShellReadError, read_shell_script
from acclint.rules import all_rules

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"
RULES = all_rules()
# hypothesmith compiles what it generates; Python's warnings about that code are not ours.
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")


def _budget(default: int) -> int:
    return int(os.environ.get("ACCLINT_FUZZ_EXAMPLES", default))


def fuzz_settings(default: int):
    return settings(max_examples=_budget(default), deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def scan_files(files: dict) -> None:
    """Scan a small project; fail on anything but findings and plain per-file errors."""
    with tempfile.TemporaryDirectory(prefix="acclint-fuzz-") as folder:
        root = Path(folder)
        for relative, text in files.items():
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
        result = scan([root], RULES, Config(), jobs=1, cwd=root)
        internal = [e for e in result.errors if "internal error" in e.message]
        assert not internal, internal
        assert result.files_scanned + len(result.errors) + len(result.skipped) == len(files)
        # Fixes of whatever was found apply cleanly or are refused with a reason; never a crash.
        plan_fixes(result.findings, unsafe=True)


# -- Python ------------------------------------------------------------------------------------

@fuzz_settings(100)
@given(source=hypothesmith.from_grammar())
def test_generated_python_never_crashes(source):
    scan_files({"train.py": source})


@fuzz_settings(8)  # slow to generate: ~1 s an example
@given(source=hypothesmith.from_node())
def test_generated_cst_never_crashes(source):
    scan_files({"train.py": source})


# -- shell -------------------------------------------------------------------------------------

_WORDS = st.sampled_from([
    "torchrun", "python", "python3", "msrun", "deepspeed", "mpirun", "bash", "train.py", "pretrain_gpt.py",
    "--nproc_per_node", "8", "--lr", "1e-4", "--npu-deterministic", "--seed", "$SEED", "${LR:-0.1}", '"$@"',
    "'quoted word'", '"a $B c"', "$(date)", "`hostname`", "&&", "||", "|", ";", "&", ">", "2>&1", "<<EOF",
    "EOF", "\\", "{", "}", "(", ")", "[[", "]]", "if", "then", "fi", "for", "in", "do", "done", "case", "esac",
    "export", "source", ".", "set_env.sh", "HCCL_DETERMINISTIC=true", "X=", "A=(1 2 3)", "${A[@]}", "#", "\t",
    "ｔｏｒｃｈｒｕｎ", "\x00", "$((1+2))", "<(ls)", "function", "f()", "local", "declare", "-x", "=", "'",
    '"', "$", "${", "}}", "\r",
])
_LINES = st.lists(_WORDS, min_size=0, max_size=10).map(" ".join)
SHELL = st.lists(_LINES, min_size=0, max_size=15).map(lambda lines: "#!/bin/bash\n" + "\n".join(lines) + "\n")


@fuzz_settings(300)
@given(script=SHELL)
def test_generated_shell_never_crashes(script):
    try:
        read_shell_script("run.sh", script)
    except ShellReadError:
        pass
    scan_files({"run.sh": script, "train.py": "import torch\nif __name__ == '__main__':\n    torch.ones(1)\n"})


# -- mutations of the bundled examples ---------------------------------------------------------

def _example_projects() -> list:
    projects = []
    for folder in sorted(p for p in EXAMPLES_DIR.iterdir() if p.is_dir()):
        files = {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
                 for p in sorted(folder.rglob("*")) if p.is_file() and p.suffix in (".py", ".sh")}
        projects.append(files)
    return projects


PROJECTS = _example_projects()


@st.composite
def mutated_project(draw):
    files = dict(draw(st.sampled_from(PROJECTS)))
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(sorted(files)))
        files[path] = draw(_mutation(files[path]))
    return files


def _mutation(text: str):
    lines = text.splitlines(keepends=True) or [""]
    position = st.integers(0, max(len(text) - 1, 0))
    line = st.integers(0, len(lines) - 1)
    return st.one_of(
        st.tuples(position, st.integers(0, 40)).map(lambda p: text[:p[0]] + text[p[0] + p[1]:]),  # delete
        st.tuples(position, st.text(max_size=8)).map(lambda p: text[:p[0]] + p[1] + text[p[0]:]),  # insert
        st.tuples(line, line).map(lambda p: "".join(lines[:p[0]] + lines[p[1]:p[1] + 1] + lines[p[0]:])),  # duplicate
        st.tuples(line, st.sampled_from(["    ", "\t", "if x:\n", "def f(:\n", "\\\n", "'''", "\"", "\n\n"]))
        .map(lambda p: "".join(lines[:p[0]] + [p[1]] + lines[p[0]:])),  # structure-breaking insert
        st.just(text.replace("\n", "\r\n")),
        st.just(text[: len(text) // 2]),  # truncated
    )


@fuzz_settings(40)
@given(files=mutated_project())
def test_mutated_examples_never_crash(files):
    scan_files(files)


def test_the_examples_to_mutate_are_there():
    assert len(PROJECTS) >= 3 and all(PROJECTS)
