#!/usr/bin/env python3
"""Regenerate src/acclint/knowledge/api_differences.toml from MindSpore's PyTorch mapping pages.

mindspore-ai/docs documents, per release branch, how each MindSpore API differs from the PyTorch one
it maps to: `docs/mindspore/source_en/note/api_mapping/pytorch_diff/<Name>.md`, one page per API with
both signatures and a table of parameters ("Categories | Subcategories | PyTorch | MindSpore |
Difference"). This reads every release branch from r2.0 on, straight from a git directory (a bare
mirror is enough: nothing is checked out), keeps the differences that can change results (a default
value, a parameter meaning, a formula, an initialiser, a unit, a parameter MindSpore lacks; never a
rename or `inplace`) and writes one row per difference with the branches it holds for. How rows are
classified is data: tools/api_difference_kinds.toml. Usage, from the repository root:

    python tools/gen_api_differences.py PATH/TO/mindspore-docs.git \
        -o src/acclint/knowledge/api_differences.toml

The consequence text is written from templates here, never copied from the pages.
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

PAGES = "docs/mindspore/source_en/note/api_mapping/pytorch_diff"
KINDS_FILE = Path(__file__).with_name("api_difference_kinds.toml")
_MISSING = object()

CONSEQUENCE = {
    "default-value": "MindSpore's `{ms_param}` defaults to {ms_default} where PyTorch's `{torch_param}` defaults to "
                     "{torch_default}: a call that leaves it out computes with another value than the PyTorch code.",
    "parameter-meaning": "MindSpore's `{ms_param}` is {relation} of PyTorch's `{torch_param}`: a value copied from the "
                         "PyTorch code means something else here.",
    "formula": "The two APIs compute with different formulas ({detail}); results differ for some inputs even with "
               "equal arguments.",
    "init": "MindSpore initialises with `{ms_param}={ms_default}` where PyTorch uses its own initialiser: a run from "
            "scratch starts from other weights.",
    "unit": "MindSpore's `{ms_param}` takes another unit than PyTorch's `{torch_param}`.",
    "missing-parameter": "MindSpore has no `{torch_param}` (PyTorch default {torch_default}): a PyTorch call that sets "
                         "it computes something this API cannot.",
}


@dataclass
class Signature:
    api: str
    params: list[str] = field(default_factory=list)
    defaults: dict[str, str] = field(default_factory=dict)  # name -> default's source text


@dataclass
class Page:
    name: str  # file name, e.g. LeakyReLU.md
    torch: list[Signature]
    mindspore: list[Signature]
    rows: list[tuple[str, str, str]]  # (torch parameter or "-", MindSpore parameter or "-", difference text)
    prose: str


# --- reading a page -------------------------------------------------------------------------------

_HEADING = re.compile(r"^##\s+(?:Function\s+)?`?([A-Za-z_][\w.]*)`?\s*$")


def _signature(api: str, code: str) -> Signature:
    """Parameters and default texts of the first call form in a page's code block (`class X(a=1)(x)`)."""
    sig = Signature(api)
    text = " ".join(line.strip() for line in code.splitlines())
    text = re.sub(r"^\s*class\s+", "", text)
    start = text.find("(")
    if start < 0:
        return sig
    depth = 0
    for end in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        if depth == 0:
            break
    else:
        return sig
    try:
        args = ast.parse(f"def f({text[start + 1:end]}): pass").body[0].args
    except SyntaxError:
        return sig
    positional = args.posonlyargs + args.args
    for i, arg in enumerate(positional):
        sig.params.append(arg.arg)
        offset = i - (len(positional) - len(args.defaults))
        if offset >= 0:
            sig.defaults[arg.arg] = ast.unparse(args.defaults[offset])
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        sig.params.append(arg.arg)
        if default is not None:
            sig.defaults[arg.arg] = ast.unparse(default)
    if sig.params and sig.params[0] == "self":
        sig.params.pop(0)
    return sig


def _cells(line: str) -> list[str]:
    return [c.strip().strip("`").strip() for c in line.strip().strip("|").split("|")]


def parse_page(name: str, text: str) -> Page:
    torch, mindspore, rows, prose = [], [], [], []
    lines = text.splitlines()
    heading, in_code, code, columns, category = None, False, [], None, ""
    for line in lines:
        if line.lstrip().startswith("```"):
            if in_code:
                if heading:
                    side = mindspore if heading.startswith("mindspore") else torch
                    side.append(_signature(heading, "\n".join(code)))
                    heading = None
                in_code, code = False, []
            else:
                in_code = True
            continue
        if in_code:
            code.append(line)
            continue
        match = _HEADING.match(line)
        if match and match.group(1).split(".")[0] in ("torch", "torchvision", "torchaudio", "torchtext", "mindspore"):
            heading = match.group(1)
            continue
        if line.startswith("#"):
            heading = None
        if line.lstrip().startswith("|"):
            cells = _cells(line)
            lowered = [c.lower() for c in cells]
            if "pytorch" in lowered and "mindspore" in lowered:
                columns = (lowered.index("pytorch"), lowered.index("mindspore"))
                category = ""
                continue
            if columns is None or all(set(c) <= set("-: ") for c in cells) or len(cells) <= max(columns) + 1:
                continue
            category = cells[0].lower() or category
            if category.startswith("param"):
                rows.append((cells[columns[0]] or "-", cells[columns[1]] or "-", " ".join(cells[max(columns) + 1:])))
        else:
            columns = None if line.strip() and not line.lstrip().startswith("|") else columns
            prose.append(line)
    return Page(name, torch, mindspore, rows, "\n".join(prose))


# --- classifying ----------------------------------------------------------------------------------

def _number(node: ast.AST):
    """A numeric literal or simple arithmetic of them (`3.0 / 4.0`); else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return -inner if inner is not None else None
    if isinstance(node, ast.BinOp) and type(node.op) in (ast.Div, ast.Mult, ast.Add, ast.Sub):
        left, right = _number(node.left), _number(node.right)
        if left is None or right is None or (isinstance(node.op, ast.Div) and right == 0):
            return None
        return {ast.Div: lambda a, b: a / b, ast.Mult: lambda a, b: a * b, ast.Add: lambda a, b: a + b,
                ast.Sub: lambda a, b: a - b}[type(node.op)](left, right)
    return None


def _value(text: str):
    """A default's comparable value: numbers as floats, tuples whose items are all equal as that item
    ((1, 1, 1, 1) and (1, 1) are both "1 everywhere"), enum members and strings by lower-cased name
    (`Inter.BILINEAR` == `InterpolationMode.BILINEAR` == 'bilinear'), None as "none"."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return text.lower()
    if isinstance(node, ast.Tuple | ast.List):
        items = [_value(ast.unparse(e)) for e in node.elts]
        return items[0] if items and all(i == items[0] for i in items) else tuple(items)
    number = _number(node)
    if number is not None:
        return float(number)
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, bool) else str(node.value).lower()
    if isinstance(node, ast.Attribute):
        return node.attr.lower()
    return ast.unparse(node).lower()


def _differ(a: str, b: str) -> bool:
    left, right = _value(a), _value(b)
    if isinstance(left, bool) or isinstance(right, bool):
        return left is not right
    return left != right


def _has(text: str, words) -> bool:
    text = text.lower()
    return any(w in text for w in words)


def _pairs(page: Page, torch: Signature, ms: Signature, kinds: dict) -> list[tuple[str, str, str]]:
    """(torch parameter or "-", MindSpore parameter or "-", text): the table's rows, then the
    signatures' parameters the table does not name (same name, or an alias from the kinds file)."""
    pairs = []
    for t, m, text in page.rows:
        t, m = (t.split()[0] if t.split() else "-"), (m.split()[0] if m.split() else "-")
        if t != m and _has(text, kinds["kinds"]["order_only"]):
            continue  # paired by position only: matched by name below
        pairs.append((t, m, text))
    named_t = {t for t, _, _ in pairs}
    named_m = {m for _, m, _ in pairs}
    for t in torch.params:
        m = t if t in ms.params else kinds["aliases"].get(t)
        if t not in named_t and m in ms.params and m not in named_m:
            pairs.append((t, m, ""))
            named_t.add(t)
            named_m.add(m)
    return pairs


def classify(page: Page, kinds: dict) -> list[dict]:
    """The numerics-relevant differences of one page, one dict per (MindSpore API, parameter, kind)."""
    if not page.torch or not page.mindspore:
        return []
    torch = page.torch[0]
    if torch.api.startswith(tuple(kinds["excluded_torch_prefixes"])):
        return []
    ignored = set(kinds["ignored_parameters"])
    deprecated = set(kinds["deprecated_torch_defaults"])
    found = []
    for ms in page.mindspore:
        base = {"mindspore": ms.api, "torch": torch.api, "page": page.name}
        for t, m, text in _pairs(page, torch, ms, kinds):
            if t in ignored or m in ignored or f"{torch.api}:{t}" in deprecated:
                continue
            t_default = torch.defaults.get(t, "") if t != "-" else ""
            m_default = ms.defaults.get(m, "") if m != "-" else ""
            row = dict(base, mindspore_parameter=m if m != "-" else "", torch_parameter=t if t != "-" else "",
                       mindspore_default=m_default, torch_default=t_default)
            if m != "-" and m in ms.params:
                row["mindspore_position"] = ms.params.index(m)
            if t != "-" and t in torch.params:  # where a positional argument of the PyTorch call lands
                row["torch_position"] = torch.params.index(t)
            if t != "-" and m != "-":
                if _has(text, kinds["kinds"]["meaning"]):
                    found.append(dict(row, kind="parameter-meaning", relation="one minus the value"))
                elif t_default and m_default and _differ(t_default, m_default):
                    comparable = "none" not in (_value(t_default), _value(m_default)) and (
                        t == m or kinds["aliases"].get(t) == m)
                    if comparable or _has(text, kinds["kinds"]["default"]):
                        found.append(dict(row, kind="default-value"))
                elif _has(text, kinds["kinds"]["unit"]):
                    found.append(dict(row, kind="unit"))
            elif t == "-" and m != "-" and m_default and any(m.endswith(s) for s in kinds["kinds"]["init_suffixes"]):
                if str(_value(m_default)) not in kinds["kinds"]["init_same_as_torch"]:
                    found.append(dict(row, kind="init"))
            elif m == "-" and t != "-" and t_default and _missing_counts(torch.api, kinds):
                found.append(dict(row, kind="missing-parameter"))
        # Page-level statements: the prose says the computation or a parameter's meaning differs.
        if _has(page.prose, kinds["kinds"]["formula"]):
            found.append(dict(base, kind="formula", mindspore_parameter="", torch_parameter="", mindspore_default="",
                              torch_default=""))
        for m in _prose_meaning(page.prose, ms, kinds):
            if any(r["kind"] == "parameter-meaning" and r["mindspore_parameter"] == m for r in found):
                continue
            t = {v: k for k, v in kinds["aliases"].items()}.get(m, "")
            found.append(dict(base, kind="parameter-meaning", relation="one minus the value", mindspore_parameter=m,
                              torch_parameter=t, mindspore_default=ms.defaults.get(m, ""),
                              torch_default=torch.defaults.get(t, ""), mindspore_position=ms.params.index(m)))
    return found


def _missing_counts(api: str, kinds: dict) -> bool:
    missing = kinds["missing"]
    return (api.startswith(tuple(missing["torch_prefixes"]))
            and not api.startswith(tuple(missing["torch_excluded_prefixes"])))


def _prose_meaning(prose: str, ms: Signature, kinds: dict) -> list[str]:
    """MindSpore parameters a prose sentence says mean the opposite (Dropout's `keep_prob`)."""
    found = []
    for sentence in re.split(r"(?<=\.)\s+", prose):
        if _has(sentence, kinds["kinds"]["meaning"]):
            for name in re.findall(r"`(\w+)`", sentence):
                if name in ms.params and name not in found:
                    found.append(name)
    return found


# --- reading the branches -------------------------------------------------------------------------

def _git(gitdir: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(gitdir), *args], check=True, capture_output=True, text=True).stdout


def _version(branch: str) -> tuple[int, ...]:
    return tuple(int(p) for p in branch[1:].split("."))


def release_branches(gitdir: Path, pattern: str) -> list[str]:
    names = _git(gitdir, "for-each-ref", "--format=%(refname:short)", "refs/heads").split()
    names = [n for n in names if re.match(pattern, n)]
    patched = {n.rsplit(".", 1)[0] for n in names if n.count(".") == 2}
    return sorted((n for n in names if n not in patched), key=_version)


def read_branch(gitdir: Path, branch: str) -> dict[str, str]:
    files = _git(gitdir, "ls-tree", "--name-only", f"{branch}:{PAGES}").split() if _has_pages(gitdir, branch) else []
    return {name: _git(gitdir, "show", f"{branch}:{PAGES}/{name}") for name in files if name.endswith(".md")}


def _has_pages(gitdir: Path, branch: str) -> bool:
    return subprocess.run(["git", "-C", str(gitdir), "cat-file", "-e", f"{branch}:{PAGES}"],
                          capture_output=True).returncode == 0


_KEY = ("mindspore", "mindspore_parameter", "torch", "torch_parameter", "kind", "mindspore_default", "torch_default")


def build(gitdir: Path, kinds: dict, torch_default=None) -> dict:
    """{"branches": [...], "pages": {branch: count}, "documented": {branch: [pages with differences]},
    "difference": [rows with since/until]}. `torch_default(api, parameter)`: the installed torch's
    default, checked against the pages' PyTorch signatures (installed_torch_default by default)."""
    branches = release_branches(gitdir, kinds["branch_pattern"])
    found: list[tuple[str, dict]] = []
    present: dict[str, set[str]] = {}
    pages = {}
    for branch in branches:
        texts = read_branch(gitdir, branch)
        present[branch] = set(texts)
        pages[branch] = len(texts)
        for name, text in sorted(texts.items()):
            found += [(branch, row) for row in classify(parse_page(name, text), kinds)]
    lookup = functools.lru_cache(maxsize=None)(torch_default or installed_torch_default)
    rows: dict[tuple, dict] = {}
    for branch, row in found:
        kept = check_torch_side(row, lookup)
        if kept is None:
            continue
        key = tuple(str(kept.get(k, "")) for k in _KEY)
        entry = rows.setdefault(key, dict(kept, since=branch, seen=[]))
        entry["seen"].append(branch)
    documented = {b: sorted({e["page"] for e in rows.values() if b in e["seen"]}) for b in branches}
    table = []
    for entry in rows.values():
        seen = entry.pop("seen")
        last = seen[-1]
        later = branches[branches.index(last) + 1:]
        # A row stops holding where a later branch still has the page but no longer states it; a page
        # removed from the docs (r2.5 moved the mapping to mindspore.mint) leaves its rows open-ended.
        entry["until"] = last if any(entry["page"] in present[b] for b in later) else ""
        entry["consequence"] = _consequence(entry)
        table.append(entry)
    table.sort(key=lambda r: (r["mindspore"], r["mindspore_parameter"], r["kind"], _version(r["since"])))
    return {"branches": branches, "pages": pages, "documented": documented, "difference": table}


def installed_torch_default(api: str, parameter: str):
    """The installed torch's default of `parameter` as source text, or None when torch, the API or
    the parameter cannot be found (then the page's signature stands)."""
    import importlib
    import inspect

    module, _, name = api.rpartition(".")
    try:
        target = getattr(importlib.import_module(module), name)
        found = inspect.signature(target).parameters.get(parameter)
    except (ImportError, AttributeError, ValueError, TypeError):
        return None
    if found is None or found.default is inspect.Parameter.empty:
        return None
    return repr(found.default)


def check_torch_side(row: dict, torch_default=installed_torch_default) -> Optional[dict]:
    """Pages quote the PyTorch signature of their day, now and then with a typo ('zero' for 'zeros'):
    where the installed torch knows the parameter, its default replaces the page's, and a
    default-value row whose two defaults then agree is dropped (None)."""
    if row["kind"] != "default-value" or not row["torch_parameter"]:
        return row
    real = torch_default(row["torch"], row["torch_parameter"])
    if real is None:
        return row
    return dict(row, torch_default=real) if _differ(real, row["mindspore_default"]) else None


def _consequence(row: dict) -> str:
    detail = f"{row['torch']} vs {row['mindspore']}"
    return CONSEQUENCE[row["kind"]].format(ms_param=row["mindspore_parameter"], torch_param=row["torch_parameter"],
                                           ms_default=row["mindspore_default"] or "(none)",
                                           torch_default=row["torch_default"] or "(none)",
                                           relation=row.get("relation", ""), detail=detail)


# --- writing --------------------------------------------------------------------------------------

def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


_FIELDS = ("mindspore", "torch", "page", "kind", "mindspore_parameter", "torch_parameter", "mindspore_position",
           "torch_position",
           "mindspore_default", "torch_default", "relation", "since", "until", "consequence")


def render(data: dict, source: str) -> str:
    out = ["# GENERATED by tools/gen_api_differences.py from mindspore-ai/docs (" + source + "); do not edit.",
           "# One row per MindSpore-vs-PyTorch difference that can change results, from the pytorch_diff pages",
           "# of each release branch. `since`/`until`: the branches it is documented for (`until` empty: still",
           "# documented, or the page left the docs without the difference being withdrawn).",
           "", f"branches = {_toml_value(data['branches'])}", "", "[pages]  # mapping pages parsed per branch"]
    out += [f'"{b}" = {n}' for b, n in data["pages"].items()]
    out += ["", "[documented]  # pages with at least one difference, per branch"]
    out += [f'"{b}" = {_toml_value(names)}' for b, names in data["documented"].items()]
    for row in data["difference"]:
        out += ["", "[[difference]]"]
        out += [f"{k} = {_toml_value(row[k])}" for k in _FIELDS if k in row and row[k] != ""]
    return "\n".join(out) + "\n"


def _torch_version() -> str:
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed: the pages' signatures stand)"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gitdir", type=Path, help="a git directory of mindspore-ai/docs (bare is fine)")
    parser.add_argument("-o", "--output", type=Path, default=Path("src/acclint/knowledge/api_differences.toml"))
    parser.add_argument("--kinds", type=Path, default=KINDS_FILE)
    args = parser.parse_args(argv)
    try:
        kinds = tomllib.loads(args.kinds.read_text())
        data = build(args.gitdir, kinds)
    except (OSError, subprocess.CalledProcessError, tomllib.TOMLDecodeError) as exc:
        print(f"gen_api_differences: cannot read {args.gitdir}: {getattr(exc, 'stderr', '') or exc}", file=sys.stderr)
        return 1
    if not data["branches"]:
        print(f"gen_api_differences: no release branch matching {kinds['branch_pattern']} in {args.gitdir}",
              file=sys.stderr)
        return 1
    heads = ", ".join(f"{b}@{_git(args.gitdir, 'rev-parse', '--short=10', b).strip()}" for b in data["branches"])
    heads += f"; PyTorch defaults checked against torch {_torch_version()}"
    args.output.write_text(render(data, heads))
    print(f"{len(data['difference'])} differences from {sum(data['pages'].values())} pages on "
          f"{len(data['branches'])} branches -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
