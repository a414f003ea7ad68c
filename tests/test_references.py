"""Every reference the project's pages, rules and tests make resolves inside the repository: local paths
and Markdown links name files that exist (and headings that exist, for `page.md#anchor`), and nothing
points at notes outside it (the knowledge notes, the design notes or the guides they were drawn from).
The documentation site builds strictly: a broken link or anchor, or a page missing from the nav, fails."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from acclint.rules import all_rules

REPO = Path(__file__).resolve().parents[1]
THIS = Path(__file__).resolve()
TEXT_SUFFIXES = {".py", ".toml", ".md", ".sh", ".yaml", ".yml", ".json", ".cfg"}
ROOTS = ("src", "docs", "tests", "tools", "benchmarks", "examples")

# Notes the project was built from, which a reader of the repository does not have.
OUTSIDE = [
    re.compile(r"(?<![\w/.-])knowledge\.md"),  # the knowledge notes (docs/knowledge/<page>.md are ours)
    re.compile(r"\bDESIGN\.md"),
    re.compile(r"(?<![\w])seeds/\d"),  # the guides, by file number
    re.compile(r"\.\./shared|\bshared/(?:seeds|knowledge|DESIGN)"),
    re.compile(r"/work/(?:shared|main|wt|corpus)\b"),
]
LOCAL_PATH = re.compile(r"(?<![\w./<-])((?:%s)/[\w./-]*[\w/])(#[\w-]+)?" % "|".join(ROOTS))
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


def project_files() -> list:
    files = [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "benchmarks" / "README.md"]
    for root in ("src", "docs", "tests", "tools"):
        files += [p for p in sorted((REPO / root).rglob("*")) if p.suffix in TEXT_SUFFIXES and p.is_file()
                  and "__pycache__" not in p.parts and p.resolve() != THIS]
    return [f for f in files if f.exists()]


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_~]{2,}|[`*~]", "", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set:
    found, seen = set(), {}
    in_code = False
    for line in page.read_text("utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match and not in_code:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            found.add(base if count == 0 else f"{base}-{count}")
            seen[base] = count + 1
    return found


def problem(target: Path, anchor: str) -> str:
    if not target.exists():
        return f"{target.relative_to(REPO) if target.is_relative_to(REPO) else target} does not exist"
    if not target.resolve().is_relative_to(REPO):
        return f"{target} is outside the repository"
    if anchor and target.suffix == ".md" and anchor not in anchors(target):
        return f"{target.relative_to(REPO)} has no heading for #{anchor}"
    return ""


def ours(relative: str) -> bool:
    """Whether a path names this repository's files rather than another project's (`docs/zh/...` of
    op-plugin, `examples/mcore/...` of MindSpeed-LLM, `tools/train.py` of a user's tree in an example):
    its first folder below the top one exists here, or it is a page at the top of docs/ or benchmarks/."""
    parts = relative.rstrip("/").split("/")
    if len(parts) >= 3 or relative.endswith("/"):
        return (REPO / parts[0] / parts[1]).is_dir()
    return parts[0] in ("docs", "benchmarks")


def references(path: Path, text: str):
    """(line, written, target, anchor) for each local reference in `text`. Inside a fenced code block
    `a[i](b)` is code, not a Markdown link."""
    in_code = False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
        for match in LOCAL_PATH.finditer(line):
            if ours(match.group(1)):
                yield number, match.group(0), REPO / match.group(1), (match.group(2) or "#")[1:]
        if path.suffix == ".md" and not in_code:
            for match in MARKDOWN_LINK.finditer(line):
                link = match.group(1)
                if re.match(r"[a-z]+:", link) or link.startswith("<"):
                    continue  # a URL
                file, _, anchor = link.partition("#")
                yield number, link, (path.parent / file) if file else path, anchor


FILES = project_files()


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(REPO)) for p in FILES])
def test_references_stay_inside_and_resolve(path):
    text = path.read_text("utf-8", errors="replace")
    bad = [f"{path.name}:{n}: {pattern.pattern!r}: {line.strip()[:120]}"
           for n, line in enumerate(text.splitlines(), start=1) for pattern in OUTSIDE if pattern.search(line)]
    if path.parts[len(REPO.parts)] != "tests":  # tests write fixture trees whose paths are not ours
        bad += [f"{path.name}:{n}: {written}: {why}" for n, written, target, anchor in references(path, text)
                if (why := problem(target, anchor))]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_page_references_resolve(rule):
    """A rule's references and texts, as its page shows them (docs/rules/ is generated from these)."""
    texts = [*rule.doc.references, rule.doc.what, rule.doc.why, rule.doc.fix, rule.summary]
    bad = [text for text in texts for pattern in OUTSIDE if pattern.search(text)]
    bad += [f"{written}: {why}" for text in texts for _, written, target, anchor in references(REPO / "x.txt", text)
            if (why := problem(target, anchor))]
    assert not bad, bad


def test_the_checker_sees_what_it_must():
    """The patterns catch a reference outside, a missing file and a missing anchor."""
    assert any(p.search("see knowledge.md §2") for p in OUTSIDE)
    assert not any(p.search("see docs/knowledge/fused-ops.md#npu_swiglu") for p in OUTSIDE)
    assert problem(REPO / "docs/knowledge/fused-ops.md", "npu_swiglu") == ""
    assert "no heading" in problem(REPO / "docs/knowledge/fused-ops.md", "no-such-heading")
    assert "does not exist" in problem(REPO / "docs/knowledge/nothing.md", "")
    assert ours("docs/knowledge/nothing.md") and ours("src/acclint/nothing.py") and ours("docs/nothing.md")
    assert not ours("docs/zh/custom_APIs/torch_npu/") and not ours("tools/train.py")
    assert list(references(REPO / "x.md", "```python\nCOMMANDS[name](sys.argv[2:])\n```\n")) == []
    assert [r[1] for r in references(REPO / "x.md", "see [a](missing.md)\n")] == ["missing.md"]
    assert slug("The GLM4 contiguity case") == "the-glm4-contiguity-case" and slug("`npu_gelu`") == "npu_gelu"


def build_site(config: Path, site: Path) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` of `config` into `site`: warnings (a broken link or anchor, a page the nav
    leaves out, a missing include) fail the build."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], cwd=config.parent, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_documentation_site_builds_strictly(tmp_path):
    built = build_site(REPO / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stdout + built.stderr
    pages = [p.relative_to(REPO / "docs").with_suffix("") for p in (REPO / "docs").rglob("*.md")]
    assert Path("rules/ACL101") in pages and Path("index") in pages
    for page in pages:  # every page of docs/ is in the site: index.md and README.md are their folder's index
        folder = page.parent if page.name in ("index", "README") else page
        assert (tmp_path / "site" / folder / "index.html").is_file(), page
    performance = (tmp_path / "site" / "performance" / "index.html").read_text("utf-8")
    assert "bench_scan.py" in performance  # benchmarks/README.md, included


def test_the_site_build_fails_on_a_broken_link_and_a_page_left_out_of_the_nav(tmp_path):
    """The strict build sees what it must: a copy of the site with one broken link, one broken anchor and
    one page the nav does not list fails, naming each."""
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copytree(REPO / "benchmarks", tmp_path / "benchmarks", ignore=shutil.ignore_patterns("*.py", "judged"))
    with (tmp_path / "docs" / "cache.md").open("a", encoding="utf-8") as page:
        page.write("\nSee [nowhere](no-such-page.md) and [the scan](scanning.md#no-such-heading).\n")
    (tmp_path / "docs" / "orphan.md").write_text("# Orphan\n", encoding="utf-8")
    built = build_site(tmp_path / "mkdocs.yml", tmp_path / "site")
    output = built.stdout + built.stderr
    assert built.returncode != 0, output
    assert "no-such-page.md" in output and "no-such-heading" in output and "orphan.md" in output
