"""The `acclint` command: parse options, call the library, pick a reporter. Nothing else."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from acclint import __version__
from acclint.config import Config, ConfigError, fails, find_pyproject, load_config, rule_enabled, validate_selectors
from acclint.progress import for_scan

SCAN_FORMATS = ("text", "json", "github", "sarif", "html")


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


# `acclint capture -- COMMAND`: runs a training command with the step-0 hooks (runtime extras).
_LazyGroup.lazy["capture"] = ("acclint.runtime_checks.capture_hooks.command", "capture_command")


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
    from acclint.reports import render

    rules = _all_rules()
    config = _scan_config(paths, config_path, select, ignore, exclude, fail_on, {rule.code for rule in rules})
    active = [rule for rule in rules if rule_enabled(config, rule.code, rule.category)]
    cache = None if no_cache else _cache(cache_dir, config.source, active, config)
    known = _load_baseline(baseline_path)
    progress = for_scan(quiet=quiet, machine_output_on_stdout=output is None and fmt != "text")
    notes = _Notes(quiet)

    def scan_once():
        result = _run_scan(paths, active, config, jobs, cache=cache, progress=progress)
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
        result = _fix(scan_once, unsafe_fixes, notes) if apply_fix else scan_once()
    except Exception as exc:
        _internal_error(exc)
    if write_baseline_path is not None:
        _write_baseline(write_baseline_path, notes.full_result, notes)
    use_color = color if color is not None else (output is None and fmt == "text" and sys.stdout.isatty())
    report = render(result, fmt, rules, color=use_color, show_fix=not no_fix, base_dir=str(Path.cwd()),
                    active_codes=frozenset(rule.code for rule in active), paths=tuple(map(str, paths)))
    _emit(report, output, color=use_color)
    notes.flush()
    failed = any(fails(config, finding.severity) for finding in result.findings)
    sys.exit(1 if failed else 0)


def _scan_config(paths, config_path, select, ignore, exclude, fail_on, codes) -> Config:
    """[tool.acclint] from the config file, overridden by the command line; bad values exit 2."""
    try:
        explicit = config_path is not None
        config_file = config_path if explicit else find_pyproject(Path(paths[0]) if paths else Path.cwd())
        config = load_config(config_file, explicit=explicit, known_codes=codes)
        return config.merged(
            select=validate_selectors(_split(select), codes, "--select"),
            ignore=validate_selectors(_split(ignore), codes, "--ignore"),
            exclude=list(exclude),
            fail_on=fail_on,
        )
    except ConfigError as exc:
        raise click.UsageError(str(exc))


def _run_scan(paths, active, config, jobs, cache=None, progress=None):
    from acclint.linter.engine import scan as run_scan

    try:
        return run_scan(list(paths) or [Path(".")], active, config, jobs=jobs, cache=cache, progress=progress)
    except Exception as exc:
        _internal_error(exc)


def _internal_error(exc: Exception) -> None:
    """A bug of ours: say so plainly, exit 2, no traceback."""
    click.echo(f"acclint: internal error: {type(exc).__name__}: {exc} "
               "(please report it with the file that triggered it)", err=True)
    sys.exit(2)


def _cache(cache_dir, config_file, rules, config):
    """The cache next to the configuration file (the project root), else in the current folder."""
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


@main.command("diff")
@click.argument("left", type=click.Path(path_type=Path))
@click.argument("right", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write the report here.")
@click.option("--ignore", multiple=True,
              help="Keys, globs (`*-parallel-size`), categories or groups (`parallel`) accepted as different.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="pyproject.toml to read [tool.acclint.diff] from; default: the nearest pyproject.toml.")
@click.option("--color/--no-color", default=None, help="Colour text output [default: when writing to a terminal].")
def diff(left, right, fmt, output, ignore, config_path, color) -> None:
    """Compare two training setups (launch scripts, Python scripts, configs or folders); LEFT is the reference."""
    from acclint.reports import render_diff
    from acclint.setups import SetupError, diff_setups, extract

    try:
        explicit = config_path is not None
        config = load_config(config_path if explicit else find_pyproject(left), explicit=explicit,
                             known_codes={rule.code for rule in _all_rules()})
    except ConfigError as exc:
        raise click.UsageError(str(exc))
    try:
        sides = [extract(str(left)), extract(str(right))]
    except SetupError as exc:
        click.echo(f"acclint diff: {exc}", err=True)
        sys.exit(2)
    empty = [side for side in sides if not side.settings]
    if empty:  # nothing to compare: say what could not be read, not a list of one-sided settings
        for side in empty:
            reasons = "; ".join(side.problems) or "no setting acclint recognises"
            click.echo(f"acclint diff: no training settings found in {side.path} ({reasons})", err=True)
        sys.exit(2)
    result = diff_setups(*sides, ignore=[*config.diff_ignore, *_split(ignore)])
    use_color = color if color is not None else (output is None and fmt == "text" and sys.stdout.isatty())
    _emit(render_diff(result, fmt, color=use_color), output, color=use_color)
    sys.exit(1 if result.mismatches else 0)


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



# --- acclint report: the HTML migration-readiness report (scan + optional diff + fingerprints) --------


@main.command("report")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The HTML file to write (one self-contained file).")
@click.option("--diff", "diff_sides", nargs=2, type=click.Path(path_type=Path), default=None, metavar="LEFT RIGHT",
              help="Also compare two setups (launch scripts, training scripts, configs or folders).")
@click.option("--fingerprints", nargs=2, type=click.Path(path_type=Path), default=None, metavar="A.json B.json",
              help="Also compare two step-0 fingerprints (acclint.runtime.capture).")
@click.option("--select", multiple=True, help="Only these rule codes/prefixes or categories (comma-separated).")
@click.option("--ignore", multiple=True, help="Skip these rule codes/prefixes or categories (comma-separated).")
@click.option("--exclude", multiple=True, help="Glob of paths to skip (repeatable).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="pyproject.toml (or acclint.toml) to read [tool.acclint] from; default: the nearest pyproject.toml.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes [default: all cores].")
def report_command(paths, output, diff_sides, fingerprints, select, ignore, exclude, config_path, jobs) -> None:
    """Write one HTML migration-readiness report: the checklist filled in, with its evidence."""
    from acclint.reports.html import html_report
    from acclint.reports.html_inputs import ReportInputError, check_output, load_comparison, load_diff
    from acclint.reports.html_runtime import runtime_view
    from acclint.reports.text import summary_line

    def fail(message: str) -> None:
        click.echo(f"acclint report: error: {message}", err=True)
        sys.exit(2)

    rules = _all_rules()
    config = _scan_config(paths, config_path, select, ignore, exclude, None, {rule.code for rule in rules})
    try:  # every input is checked before the scan, so a typo costs no time
        check_output(output)
        diff = load_diff(*diff_sides) if diff_sides else None
        runtime = runtime_view(*load_comparison(*fingerprints)) if fingerprints else None
    except ReportInputError as exc:
        fail(str(exc))
    active = [rule for rule in rules if rule_enabled(config, rule.code, rule.category)]
    result = _run_scan(paths, active, config, jobs)
    try:
        page = html_report(result, rules, active_codes=frozenset(rule.code for rule in active), base_dir=Path.cwd(),
                           paths=[str(p) for p in paths], diff=diff, runtime=runtime)
        output.write_text(page, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}")
    except Exception as exc:  # a bug of ours: say so plainly, exit 2, no traceback
        fail(f"internal error: {type(exc).__name__}: {exc} (please report it with the command line)")
    click.echo(f"Wrote {output}: {summary_line(result)}")
