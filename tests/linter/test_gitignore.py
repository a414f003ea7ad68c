"""gitignore matching (acclint.linter.gitignore), checked against git itself.

The oracle is `git ls-files --others --exclude-standard`: the untracked files git does not ignore
are exactly the files a walk that respects .gitignore must find.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from acclint.linter.discovery import discover, would_discover
from acclint.linter.gitignore import GitIgnore, parse_line

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="the oracle is git itself")


def matches(line: str, path: str, is_dir: bool = False) -> bool:
    pattern = parse_line(line)
    assert pattern is not None, line
    return (is_dir or not pattern.dir_only) and bool(pattern.regex.match(path))


@pytest.mark.parametrize("line, path, is_dir, expected", [
    ("*.log", "x.log", False, True),
    ("*.log", "deep/down/x.log", False, True),  # no slash: any level
    ("*.log", "x.logs", False, False),
    ("/top.py", "top.py", False, True),  # a leading slash anchors
    ("/top.py", "a/top.py", False, False),
    ("a/b.py", "a/b.py", False, True),  # a middle slash anchors too
    ("a/b.py", "x/a/b.py", False, False),
    ("build/", "build", True, True),  # a trailing slash: directories only
    ("build/", "build", False, False),
    ("build/", "src/build", True, True),
    ("**/gen", "gen", True, True),
    ("**/gen", "x/y/gen", True, True),
    ("a/**/b.py", "a/b.py", False, True),
    ("a/**/b.py", "a/x/y/b.py", False, True),
    ("a/**", "a/x/y.py", False, True),
    ("a/**", "a", True, False),
    ("?.py", "a.py", False, True),
    ("?.py", "ab.py", False, False),
    ("*.py", "a/b.py", False, True),
    ("a*.py", "a/b.py", False, False),  # `*` never crosses a slash
    ("[ab].py", "b.py", False, True),
    ("[!ab].py", "c.py", False, True),
    ("[!ab].py", "a.py", False, False),
    ("[a-c]x.py", "bx.py", False, True),
    ("\\#hash.py", "#hash.py", False, True),
    ("\\!bang.py", "!bang.py", False, True),
    ("trailing.py   ", "trailing.py", False, True),
])
def test_pattern_syntax(line, path, is_dir, expected):
    assert matches(line, path, is_dir) is expected


@pytest.mark.parametrize("line", ["", "   ", "# a comment", "/"])
def test_lines_that_are_no_pattern(line):
    assert parse_line(line) is None


def test_negation_is_parsed():
    pattern = parse_line("!keep.py")
    assert pattern.negated and pattern.regex.match("keep.py")


def build_tree(root: Path, files: list, ignores: dict) -> None:
    for relative in files:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n", encoding="utf-8")
    for relative, text in ignores.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


FILES = [
    "train.py", "top.py", "a/top.py", "notes.log.py", "out/keep.py", "out/sub/x.py",
    "src/gen/g1.py", "src/gen/keep_me.py", "src/model.py", "src/generated.py", "src/deep/generated.py",
    "data/raw/a.py", "data/raw/important.py", "data/cache/c.py", "logs/run/x.py", "vendor/lib/v.py",
    "vendor/keep/v.py", "docs/a b.py", "tests/test_x.py", "tests/fixtures/f.py", "x/y/z/deep.py",
    "only_here.py", "sub/only_here.py",
]
IGNORES = {
    ".gitignore": "# root rules\n/top.py\nout/\n!keep.py\n*.log.py\ndata/**/\n!data/raw/\ndata/raw/*\n"
                  "!data/raw/important.py\nlogs\nvendor/*\n!vendor/keep/\ndocs/a\\ b.py\n/only_here.py\n",
    "src/.gitignore": "gen*\n!gen/keep_me.py\ngenerated.py\n",
    "src/deep/.gitignore": "!generated.py\n",
    "tests/.gitignore": "fixtures/\n",
    ".git/info/exclude": "x/y/\n",
}


def git_untracked(root: Path) -> set:
    listing = subprocess.run(["git", "ls-files", "--others", "--exclude-standard"], cwd=root,
                             capture_output=True, text=True, check=True).stdout
    return {line for line in listing.splitlines() if line.endswith(".py")}


@needs_git
def test_folder_walk_finds_exactly_what_git_does_not_ignore(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "."], cwd=root, check=True)
    build_tree(root, FILES, IGNORES)
    expected = git_untracked(root)
    # The oracle itself must show that patterns act in every way tested here.
    assert {"train.py", "a/top.py", "data/raw/important.py", "vendor/keep/v.py", "src/deep/generated.py",
            "sub/only_here.py"} <= expected
    assert not {"top.py", "out/keep.py", "src/gen/keep_me.py", "data/raw/a.py", "tests/fixtures/f.py",
                "x/y/z/deep.py", "docs/a b.py"} & expected

    found = discover([root], root, gitignore=GitIgnore())
    assert {p.relative_to(root).as_posix() for p in found.files} == expected
    everything = discover([root], root)
    assert len(everything.files) == len(FILES)  # without it, nothing is skipped


@needs_git
def test_walk_of_a_subfolder_applies_the_parent_folders_rules(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "."], cwd=root, check=True)
    build_tree(root, FILES, IGNORES)
    found = discover([root / "src"], root / "src", gitignore=GitIgnore())
    assert {p.relative_to(root).as_posix() for p in found.files} == \
        {p for p in git_untracked(root) if p.startswith("src/")}


def test_outside_a_git_repository_nothing_is_ignored(tmp_path):
    build_tree(tmp_path, ["a.py", "b.py"], {".gitignore": "a.py\n"})
    found = discover([tmp_path], tmp_path, gitignore=GitIgnore())
    assert sorted(p.name for p in found.files) == ["a.py", "b.py"]


def test_a_worktree_git_file_marks_the_root(tmp_path):
    build_tree(tmp_path, ["a.py", "b.py"], {".gitignore": "a.py\n", ".git": "gitdir: /elsewhere\n"})
    found = discover([tmp_path], tmp_path, gitignore=GitIgnore())
    assert [p.name for p in found.files] == ["b.py"]


def test_paths_given_by_name_are_scanned_even_when_ignored(tmp_path):
    build_tree(tmp_path, ["gen/a.py", "b.py"], {".gitignore": "gen/\nb.py\n"})
    (tmp_path / ".git").mkdir()
    found = discover([tmp_path / "b.py", tmp_path / "gen"], tmp_path, gitignore=GitIgnore())
    assert sorted(p.relative_to(tmp_path).as_posix() for p in found.files) == ["b.py", "gen/a.py"]


def test_context_files_follow_the_same_rules(tmp_path):
    """A module read for context is one a walk of the scan's root would have found."""
    build_tree(tmp_path, ["pkg/helper.py", "gen/helper.py"], {".gitignore": "gen/\n"})
    (tmp_path / ".git").mkdir()
    ignore = GitIgnore()
    assert would_discover(str(tmp_path / "pkg/helper.py"), tmp_path, (), ignore)
    assert not would_discover(str(tmp_path / "gen/helper.py"), tmp_path, (), ignore)
    assert would_discover(str(tmp_path / "gen/helper.py"), tmp_path, ())
