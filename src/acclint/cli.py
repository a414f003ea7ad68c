"""The `acclint` command: parse options, call the library, pick a reporter. Nothing else."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from acclint import __version__
from acclint.config import Config, ConfigError, fails, find_pyproject, load_config, rule_enabled, validate_selectors
from acclint.progress import for_scan

SCAN_FORMATS = ("text", "json", "github", "sarif")


def _split(values) -> list:
    return [item.strip() for value in values for item in value.split(",") if item.strip()]


def _all_rules() -> list:
    from acclint.rules import all_rules

    return all_rules()


class _LazyGroup(click.Group):
    """Loads the runtime half's command only when asked for: it needs numpy, the scanner does not."""

    lazy = {"compare": ("acclint.runtime_checks.cli", "compare_command")}

    def list_commands(self, ctx):
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx, name):
        if name not in self.lazy:
            return super().get_command(ctx, name)
        module, attribute = self.lazy[name]
        try:
            return getattr(importlib.import_module(module), attribute)
        except ImportError as exc:
            return _unavailable(name, f"`acclint {name}` needs the runtime extras ({exc.name} is missing): "
                                "pip install 'acclint[torch]' or 'acclint[mindspore]'")


def _unavailable(name: str, message: str) -> click.Command:
    """Stands in for a command whose dependencies are missing, so --help still works."""

    @click.command(name, help=f"Unavailable: {message}",
                   context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
    def command() -> None:
        raise click.UsageError(message)

    return command


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="acclint")
def main() -> None:
    """Find the causes of GPU -> Ascend NPU / MindSpore accuracy divergence before they cost NPU hours."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(SCAN_FORMATS), default="text", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write the report here.")
@click.option("--select", multiple=True, help="Only these rule codes/prefixes or categories (comma-separated).")
@click.option("--ignore", multiple=True, help="Skip these rule codes/prefixes or categories (comma-separated).")
@click.option("--exclude", multiple=True, help="Glob of paths to skip (repeatable).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="pyproject.toml (or acclint.toml) to read [tool.acclint] from; default: the nearest pyproject.toml.")
@click.option("--fail-on", type=click.Choice(["error", "warning", "info", "never"]), default=None,
              help="Lowest severity that makes the exit code 1 [default: warning].")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes [default: all cores].")
@click.option("--no-fix", is_flag=True, help="Text format: do not print the fix under each finding.")
@click.option("--color/--no-color", default=None, help="Colour text output [default: when writing to a terminal].")
@click.option("--fix", "apply_fix", is_flag=True, help="Apply safe fixes in place; report what remains.")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix or --diff: apply unsafe fixes too (they change results).")
@click.option("--diff", "show_diff", is_flag=True,
              help="Print the fixes as a unified diff instead of writing them; exit 1 when there are any.")
@click.option("--no-cache", is_flag=True, help="Analyse every file afresh; read and write no cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Cache folder [default: .acclint_cache next to pyproject.toml, else in the current folder].")
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Report only findings not recorded in this baseline file.")
@click.option("--write-baseline", "write_baseline_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Record today's findings in this file (JSON) and exit 0.")
@click.option("--quiet", "-q", is_flag=True, help="No progress display and no summaries on stderr.")
def scan(paths, fmt, output, select, ignore, exclude, config_path, fail_on, jobs, no_fix, color,
         apply_fix, unsafe_fixes, show_diff, no_cache, cache_dir, baseline_path, write_baseline_path, quiet) -> None:
    """Lint training scripts, model code and launch scripts against the accuracy-migration checklist."""
    from acclint.linter.engine import scan as run_scan
    from acclint.reports import render

    rules = _all_rules()
    codes = {rule.code for rule in rules}
    try:
        explicit = config_path is not None
        config_file = config_path if explicit else find_pyproject(Path(paths[0]) if paths else Path.cwd())
        config = load_config(config_file, explicit=explicit, known_codes=codes)
        config = config.merged(
            select=validate_selectors(_split(select), codes, "--select"),
            ignore=validate_selectors(_split(ignore), codes, "--ignore"),
            exclude=list(exclude),
            fail_on=fail_on,
        )
    except ConfigError as exc:
        raise click.UsageError(str(exc))
    active = [rule for rule in rules if rule_enabled(config, rule.code, rule.category)]

    cache = None if no_cache else _cache(cache_dir, config_file, active, config)
    known = _load_baseline(baseline_path)
    progress = for_scan(quiet=quiet, machine_output_on_stdout=output is None and fmt != "text")
    notes = _Notes(quiet)

    def scan_once():
        result = run_scan(list(paths) or [Path(".")], active, config, jobs=jobs, cache=cache, progress=progress)
        progress.close()
        notes.full_result = result  # what --write-baseline records: everything found now
        if known is None:
            return result
        from acclint.baseline import new_findings

        result, hidden = new_findings(result, baseline_path, known, Path.cwd())
        notes.baseline_hidden = hidden
        return result

    try:
        if show_diff:
            _print_diff(scan_once(), unsafe_fixes)
        elif apply_fix:
            result = _fix(scan_once, unsafe_fixes, notes)
        else:
            result = scan_once()
    except Exception as exc:  # a bug of ours: say so plainly, exit 2, no traceback
        click.echo(f"acclint: internal error: {type(exc).__name__}: {exc} "
                   "(please report it with the file that triggered it)", err=True)
        sys.exit(2)
    if write_baseline_path is not None:
        _write_baseline(write_baseline_path, notes.full_result, notes)
    use_color = color if color is not None else (output is None and fmt == "text" and sys.stdout.isatty())
    report = render(result, fmt, rules, color=use_color, show_fix=not no_fix, base_dir=str(Path.cwd()))
    _emit(report, output, color=use_color)
    notes.flush()
    failed = any(fails(config, finding.severity) for finding in result.findings)
    sys.exit(1 if failed else 0)


def _cache(cache_dir, config_file, rules, config):
    from acclint.linter.cache import Cache, default_root

    root = cache_dir if cache_dir is not None else default_root(config_file, Path.cwd())
    return Cache(root, rules, config)


def _print_diff(result, unsafe: bool) -> None:
    """--diff: the edits --fix would make, as a patch on stdout; exit 1 when there are any (as ruff)."""
    from acclint.linter.fix import plan_fixes

    outcome = plan_fixes(result.findings, unsafe=unsafe)
    for path, message in outcome.errors:
        click.echo(f"acclint: {path}: {message}", err=True)
    patch = outcome.diff(Path.cwd())
    if patch:
        click.echo(patch, nl=False)
    click.echo(f"Would fix {len(outcome.fixed)} finding(s) in {len(outcome.files)} file(s).", err=True)
    sys.exit(1 if outcome.files else 0)


def _fix(scan_once, unsafe: bool, notes: "_Notes"):
    from acclint.linter.fix import fix_and_rescan, fixable

    run = fix_and_rescan(scan_once, unsafe=unsafe)
    for path, message in run.errors:
        click.echo(f"acclint: {path}: {message}", err=True)
    left_unsafe = len(fixable(run.result.findings, unsafe=True)) - len(fixable(run.result.findings, unsafe=False))
    hint = f" ({left_unsafe} more with --unsafe-fixes)" if left_unsafe and not unsafe else ""
    notes.add(f"Fixed {run.fixed} finding(s); {len(run.result.findings)} remaining{hint}.")
    return run.result


class _Notes:
    """Summary lines for stderr, printed after the report (none with --quiet)."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.lines: list = []
        self.baseline_hidden = 0
        self.full_result = None

    def add(self, line: str) -> None:
        self.lines.append(line)

    def flush(self) -> None:
        if self.baseline_hidden:
            self.lines.append(f"{self.baseline_hidden} finding(s) in the baseline not shown.")
        if not self.quiet:
            for line in self.lines:
                click.echo(line, err=True)


def _load_baseline(path):
    if path is None:
        return None
    from acclint.baseline import BaselineError, load_baseline

    try:
        return load_baseline(path)
    except BaselineError as exc:
        raise click.UsageError(str(exc))


def _write_baseline(path, result, notes: "_Notes") -> None:
    """--write-baseline: record the findings, report them as usual, exit 0."""
    from acclint.baseline import BaselineError, write_baseline

    try:
        count = write_baseline(path, result, Path.cwd())
    except BaselineError as exc:
        raise click.UsageError(str(exc))
    notes.add(f"Wrote {count} finding(s) to baseline {path}.")
    notes.flush()
    sys.exit(0)


def _emit(text: str, output, color=None) -> None:
    if output is None:
        click.echo(text, color=color)
        return
    try:
        output.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise click.UsageError(f"cannot write {output}: {exc.strerror or exc}")


@main.command("rules")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rules_command(fmt) -> None:
    """List every rule."""
    from acclint.reports import render_rule_list

    click.echo(render_rule_list(_all_rules(), fmt=fmt))


@main.command("rule")
@click.argument("code")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True)
def rule_command(code, fmt) -> None:
    """Explain one rule: what it does, why it matters, an example, the fix."""
    from acclint.reports import render_rule_page

    rules = {rule.code: rule for rule in _all_rules()}
    by_name = {rule.name: rule for rule in rules.values()}
    rule = rules.get(code.upper()) or by_name.get(code)
    if rule is None:
        raise click.UsageError(f"unknown rule {code!r}; `acclint rules` lists them")
    click.echo(render_rule_page(rule, fmt=fmt))

