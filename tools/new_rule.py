#!/usr/bin/env python3
"""Start a new rule: the next free code of its category, a class skeleton in the category's module
(a new module when the category has none, registered in acclint/rules/__init__.py), and the steps
that remain.

    python tools/new_rule.py --category seed --name unseeded-dataloader [--kind explicit|program]
                             [--severity warning]

The skeleton's summary, doc and examples say TODO(new_rule): tests/rules/test_rule_examples.py
fails on them until the author writes the real ones (see CONTRIBUTING.md). Bad input exits 2.
"""

from __future__ import annotations

import argparse
import ast
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 120  # the project's line length

KINDS = {
    # kind: (base class, imports the skeleton needs, the hook it overrides)
    "explicit": ("ExplicitRule", {
        "typing": ["Iterator"],
        "acclint.linter.facts": ["FileFacts"],
        "acclint.linter.rulebase": ["Example", "RuleDoc"],
        "acclint.rules.base": ["ExplicitRule", "Written"],
    }, '''
    def written(self, facts: FileFacts) -> Iterator[Written]:
        # Yield Written(node, message, fix) for each explicit setting in this file's facts
        # (facts.calls, facts.assignments, ...: acclint/linter/facts.py). Reported in any scanned file.
        return iter(())
'''),
    "program": ("ProgramRule", {
        "acclint.linter.context": ["ProgramContext"],
        "acclint.linter.rulebase": ["Example", "RuleDoc"],
        "acclint.rules.base": ["ProgramRule"],
        "acclint.rules.program_facts": ["ProgramFacts"],
    }, '''
    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        # `facts`: what the whole training program does, in execution order (acclint/rules/program_facts.py).
        # Report with self.report_program(ctx, message, fix) or self.report_at_source(ctx, source, message, fix).
        return None
'''),
}

SKELETON = '''

class {cls}({base}):
    code = "{code}"
    name = "{name}"
    category = "{category}"
    severity = "{severity}"
    maturity = "preview"  # until measured on the judged corpus (CONTRIBUTING.md, "Precision")
    summary = "TODO(new_rule): one line for `acclint rules`"
    doc = RuleDoc(
        what="TODO(new_rule): exactly what is reported, and what is not.",
        why="TODO(new_rule): why it changes results between GPU and NPU/MindSpore, with the facts from "
        "docs/knowledge/.",
        fix="TODO(new_rule): what to write instead.",
        references=("docs/knowledge/README.md",),
    )
    invalid = (
        Example.script("""
            # TODO(new_rule): code the rule must flag; end each flagged line with  # expect: {code}
        """),
    )
    valid = (
        Example.script("""
            # TODO(new_rule): the nearest code the rule must leave alone
        """),
    )
{hook}'''


class UsageError(Exception):
    """Bad input: printed as one line, exit 2."""


def camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("-"))


def module_for(category: str, rules: list, rules_dir: Path) -> Path:
    """The module named after the category, else the one holding most of its rules, else a new one."""
    named = rules_dir / f"{category.replace('-', '_')}.py"
    if named.exists():
        return named
    modules = [type(rule).__module__.rsplit(".", 1)[-1] for rule in rules if rule.category == category]
    if modules:
        return rules_dir / f"{max(set(modules), key=modules.count)}.py"
    return named


def add_imports(source: str, needed: dict) -> str:
    """`source` importing every name in `needed` (module -> names): a name missing from an existing
    `from module import ...` joins it; a module not imported from yet gets its own line after the imports."""
    tree = ast.parse(source) if source else ast.Module(body=[], type_ignores=[])
    have = {alias.asname or alias.name for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names}
    statements = {node.module: node for node in tree.body if isinstance(node, ast.ImportFrom) and not node.level}
    new_lines, edits = [], []
    for module, names in needed.items():
        missing = [name for name in names if name not in have]
        if not missing:
            continue
        node = statements.get(module)
        if node is None:
            new_lines.append(f"from {module} import {', '.join(missing)}")
        else:
            names_now = [ast.get_source_segment(source, alias) or alias.name for alias in node.names]
            one_line = f"from {module} import {', '.join(names_now + missing)}"
            edits.append((node, one_line if len(one_line) <= WIDTH
                          else wrapped(f"from {module} import (", names_now + missing, ")")))
    for node, text in sorted(edits, key=lambda edit: -edit[0].lineno):  # bottom-up keeps line numbers right
        source = replace_statement(source, node, text)
    for line in new_lines:  # the standard library's after its group, acclint's after the last import
        imports = [node for node in ast.parse(source).body if isinstance(node, (ast.Import, ast.ImportFrom))]
        own = line.startswith("from acclint")
        group = [node for node in imports if own or not (_is_acclint(node) or getattr(node, "module", "") == "__future__")]
        # The first of its group follows a blank line: after the imports, or the standard library's after __future__.
        after = group[-1].end_lineno if group else imports[-1].end_lineno if own else imports[0].end_lineno
        text = line + "\n" if group else "\n" + line + "\n"
        lines = source.splitlines(keepends=True)
        source = "".join(lines[:after]) + text + "".join(lines[after:])
    return source


def _is_acclint(node) -> bool:
    names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [alias.name for alias in node.names]
    return any(name == "acclint" or name.startswith("acclint.") for name in names)


def new_module(category: str, needed: dict) -> str:
    """A category module's head: docstring, then the standard library's and acclint's imports."""
    lines = [f"from {module} import {', '.join(names)}" for module, names in sorted(needed.items())]
    standard = [line for line in lines if not line.startswith("from acclint")]
    own = [line for line in lines if line.startswith("from acclint")]
    return "\n".join([f'"""Category `{category}`: TODO(new_rule) say what the rules of this module have in common."""',
                      "", "from __future__ import annotations", "", *standard, *([""] if standard else []), *own, ""])


def wrapped(head: str, items: list, close: str) -> str:
    """`head` + items joined by ', ' + `close`, on one line or wrapped under the opening bracket."""
    one_line = head + ", ".join(items) + close
    if len(one_line) <= WIDTH:
        return one_line
    lines, line = [], head
    for index, item in enumerate(items):
        piece = item + (", " if index < len(items) - 1 else close)
        if len(line) + len(piece.rstrip()) > WIDTH and line.strip() != head.strip():
            lines.append(line.rstrip())
            line = " " * len(head) + piece
        else:
            line += piece
    return "\n".join(lines + [line])


def replace_statement(source: str, node: ast.stmt, text: str) -> str:
    lines = source.splitlines(keepends=True)
    return "".join(lines[:node.lineno - 1]) + text + "\n" + "".join(lines[node.end_lineno:])


def rules_assignment(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["RULES"] \
                and isinstance(node.value, (ast.List, ast.Tuple)):
            return node
    return None


def add_to_module(path: Path, cls: str, skeleton: str, needed: dict, category: str) -> bool:
    """Append the class and register it in the module's RULES; True when the module is new."""
    if not path.exists():
        path.write_text(new_module(category, needed) + skeleton + f"\n\nRULES = [{cls}()]\n", encoding="utf-8")
        return True
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    if any(isinstance(node, ast.ClassDef) and node.name == cls for node in tree.body):
        raise UsageError(f"{path.name} already defines a class {cls}")
    assignment = rules_assignment(tree)
    if assignment is None:
        raise UsageError(f"{path} has no `RULES = [...]` list to register the rule in")
    items = [ast.get_source_segment(source, element) for element in assignment.value.elts] + [f"{cls}()"]
    source = replace_statement(source, assignment, skeleton.strip("\n") + "\n\n\n" + wrapped("RULES = [", items, "]"))
    path.write_text(add_imports(source, needed), encoding="utf-8")
    return False


def register_module(init: Path, module: str) -> None:
    """Add a new category module to acclint/rules/__init__.py: its import and _FAMILIES."""
    source = init.read_text(encoding="utf-8")
    tree = ast.parse(source)
    families = next((node for node in tree.body if isinstance(node, ast.Assign)
                     and [getattr(t, "id", None) for t in node.targets] == ["_FAMILIES"]), None)
    imported = next((node for node in tree.body if isinstance(node, ast.ImportFrom)
                     and node.module == "acclint.rules"), None)
    if families is None or imported is None:
        raise UsageError(f"{init} lacks `from acclint.rules import (...)` or `_FAMILIES = (...)`")
    names = sorted({alias.name for alias in imported.names} | {module})
    members = [ast.get_source_segment(source, element) for element in families.value.elts] + [module]
    # Bottom-up, so the first statement's line numbers stay right.
    source = replace_statement(source, families, wrapped("_FAMILIES = (", members, ")"))
    source = replace_statement(source, imported, wrapped("from acclint.rules import (", names, ")"))
    init.write_text(source, encoding="utf-8")


def parse_args(argv: list, categories: list, severities: tuple) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--category", required=True, help=f"one of: {', '.join(categories)}")
    parser.add_argument("--name", required=True, help="kebab-case slug, e.g. unseeded-dataloader")
    parser.add_argument("--kind", choices=sorted(KINDS), default="explicit",
                        help="explicit: something written in a file (reported where written); "
                             "program: something a training program does or lacks [default: explicit]")
    parser.add_argument("--severity", choices=severities, default="warning", help="[default: warning]")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to edit [default: this one]")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    root = next((Path(argv[i + 1]) for i, a in enumerate(argv[:-1]) if a == "--root"), ROOT).resolve()
    sys.path.insert(0, str(root / "src"))  # the checkout being edited, not an installed acclint
    from acclint.codes import CATEGORY_DIGITS, NAME_PATTERN, next_free_code
    from acclint.findings import SEVERITIES
    from acclint.rules import all_rules

    args = parse_args(argv, list(CATEGORY_DIGITS), SEVERITIES)
    try:
        if args.category not in CATEGORY_DIGITS:
            raise UsageError(f"unknown category {args.category!r}; expected one of {', '.join(CATEGORY_DIGITS)}")
        if not NAME_PATTERN.fullmatch(args.name):
            raise UsageError(f"--name {args.name!r} is not kebab-case (lower-case words joined by '-')")
        rules = all_rules()
        clash = next((rule for rule in rules if rule.name == args.name), None)
        if clash is not None:
            raise UsageError(f"the name {args.name!r} is taken by {clash.code}")
        code = next_free_code(args.category, (rule.code for rule in rules))
        base, needed, hook = KINDS[args.kind]
        cls = camel(args.name)
        rules_dir = root / "src" / "acclint" / "rules"
        module = module_for(args.category, rules, rules_dir)
        skeleton = SKELETON.format(cls=cls, base=base, code=code, name=args.name, category=args.category,
                                   severity=args.severity, hook=textwrap.dedent(hook).replace("\n", "\n    ")
                                   .rstrip() + "\n")
        created = add_to_module(module, cls, skeleton, needed, args.category)
        if created:
            register_module(rules_dir / "__init__.py", module.stem)
    except (UsageError, ValueError, OSError, SyntaxError) as exc:
        print(f"new_rule.py: error: {exc}", file=sys.stderr)
        return 2
    relative = module.relative_to(root)
    print(f"Added {code} {args.name} ({cls}, {args.kind}) to {relative}"
          + (" (a new module, registered in src/acclint/rules/__init__.py)" if created else "") + ".")
    print(textwrap.dedent(f"""
        Next steps (CONTRIBUTING.md, "Adding a rule"):
          1. Replace every TODO(new_rule) in {relative}: summary, doc, an invalid example whose flagged
             lines end with `# expect: {code}`, a valid example; implement {"written()" if args.kind == "explicit"
                                                                             else "check()"}.
          2. PYTHONPATH=src python -m pytest tests/rules/test_rule_examples.py -k {code} -q
          3. PYTHONPATH=src python tools/gen_docs.py   # docs/rules/{code}.md, the rule tables and the site's nav
          4. Measure it: PYTHONPATH=src python benchmarks/precision/measure.py --root CORPUS --split tuning
             --unjudged todo.csv, judge each {code} warning into judged/<repo>.csv; it stays
             maturity = "preview" until then.""").rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
