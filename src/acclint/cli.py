"""The `acclint` command: parse options, call the library, pick a reporter. Nothing else."""

from __future__ import annotations

import copy
import importlib
import sys
from pathlib import Path
from types import SimpleNamespace

import click

from acclint import __version__
from acclint.linter.maturity import is_preview
from acclint.config import (Config, ConfigError, fails, find_pyproject, load_config, rule_enabled, validate_selectors,
                            waiting_for_preview)
from acclint.progress import for_scan

SCAN_FORMATS = ("text", "json", "github", "sarif", "html")


def _split(values) -> list:
    return [item.strip() for value in values for item in value.split(",") if item.strip()]


def _all_rules() -> list:
    from acclint.rules import all_rules

    return all_rules()


def _active(config: Config, rules) -> list:
    """The rules a scan under `config` runs."""
    return [rule for rule in rules if rule_enabled(config, rule.code, rule.category, is_preview(rule))]


def _preview_codes(config: Config, rules) -> frozenset:
    """The rules off only because they are preview (`--preview` would run them), for the report's wording."""
    return frozenset(rule.code for rule in rules if waiting_for_preview(config, rule, is_preview(rule)))


def _with_plugins(rules: list, config) -> list:
    """The built-in rules and the project-local ones the configuration names (`plugins`)."""
    from acclint.plugins import plugin_rules

    try:
        return rules + plugin_rules(config, rules)
    except ConfigError as exc:
        raise click.UsageError(str(exc))


def _project_rules(config_path) -> list:
    """Every rule a scan from here would know: built-ins and the nearest configuration's plugins."""
    rules = _all_rules()
    explicit = config_path is not None
    try:
        config = load_config(config_path if explicit else find_pyproject(Path.cwd()), explicit=explicit,
                             known_codes={rule.code for rule in rules})
    except ConfigError as exc:
        raise click.UsageError(str(exc))
    return _with_plugins(rules, config)


class _LazyGroup(click.Group):
    """Loads the runtime half's command only when asked for: it needs numpy, the scanner does not.
    Also answers to ruff's command names (`check` is `scan`)."""

    lazy = {"compare": ("acclint.runtime_checks.cli", "compare_command")}
    aliases = {"check": "scan"}

    def list_commands(self, ctx):
        return sorted([*super().list_commands(ctx), *self.lazy, *self.aliases])

    def get_command(self, ctx, name):
        if name in self.aliases:
            alias = copy.copy(super().get_command(ctx, self.aliases[name]))
            alias.name, alias.short_help = name, f"The same as `{self.aliases[name]}` (ruff's name)."
            return alias
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


def _fix_choice(ctx, param, value):
    """--fix/--no-fix: the last one given wins (None: neither). --no-fix used to hide the fix text."""
    if value is False:
        click.echo("acclint: note: --no-fix now means 'apply no fixes' (as in ruff); "
                   "the fix text is hidden with --hide-fix", err=True)
    return value


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--format", "--output-format", "fmt", type=click.Choice(SCAN_FORMATS), default="text",
              show_default=True, help="Report format (--output-format: ruff's name).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write the report here.")
@click.option("--select", multiple=True, help="Only these rule codes/prefixes or categories (comma-separated).")
@click.option("--extend-select", multiple=True, help="Rules or categories to run in addition to those selected.")
@click.option("--ignore", multiple=True, help="Skip these rule codes/prefixes or categories (comma-separated).")
@click.option("--exclude", multiple=True, help="Glob of paths to skip (repeatable).")
@click.option("--extend-exclude", multiple=True, help="Glob of paths to skip, in addition to --exclude (repeatable).")
@click.option("--respect-gitignore/--no-respect-gitignore", default=None,
              help="Skip files that .gitignore files ignore while walking folders [default: on].")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="pyproject.toml (or acclint.toml) to read [tool.acclint] from; default: the nearest pyproject.toml.")
@click.option("--fail-on", type=click.Choice(["error", "warning", "info", "never"]), default=None,
              help="Lowest severity that makes the exit code 1 [default: warning].")
@click.option("--exit-zero", is_flag=True,
              help="Exit 0 even with findings or unreadable files (2 stays for usage and internal errors).")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule instead of the findings.")
@click.option("--show-settings", is_flag=True, help="Print the resolved settings and exit 0.")
@click.option("--stdin-filename", help="Read the text from stdin (path `-` or none) and report it under this name.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes [default: all cores].")
@click.option("--hide-fix", is_flag=True, help="Text format: do not print the fix under each finding.")
@click.option("--color/--no-color", default=None,
              help="Colour text output [default: on a terminal, unless NO_COLOR is set; FORCE_COLOR forces it].")
@click.option("--fix/--no-fix", "apply_fix", default=None, callback=_fix_choice,
              help="Apply safe fixes in place and report what remains; "
                   "--no-fix cancels `fix = true` or an earlier --fix.")
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
@click.option("--preview/--no-preview", default=None,
              help="Also run preview rules (new, or measured under 90% precision) [default: preview in config, else off].")
@click.option("--max-file-size", default=None, metavar="SIZE",
              help="Skip files larger than this (2MB, 500KB, bytes; 0 or none: no limit) [default: 1MB].")
def scan(paths, **options) -> None:
    """Lint training scripts, model code and launch scripts against the accuracy-migration checklist."""
    from acclint.exit_codes import exit_status
    from acclint.linter.stdin import read_stdin, wants_stdin
    from acclint.reports import render
    from acclint.reports.color import color_enabled
    from acclint.reports.statistics import render_statistics

    o = SimpleNamespace(**options)
    from_stdin = wants_stdin(paths, o.stdin_filename)
    _check_usage(paths, o, from_stdin)
    rules = _all_rules()
    anchors = [Path(o.stdin_filename)] if from_stdin and o.stdin_filename else ([] if from_stdin else list(paths))
    config = _scan_config(anchors, o.config_path, o.select, o.ignore, o.exclude, o.fail_on,
                          {rule.code for rule in rules}, extend_select=o.extend_select,
                          extend_exclude=o.extend_exclude, respect_gitignore=o.respect_gitignore, preview=o.preview,
                          max_file_size=o.max_file_size,
                          fix=False if from_stdin else o.apply_fix)
    rules = _with_plugins(rules, config)
    active = _active(config, rules)
    cache_root = None if o.no_cache else _cache_root(o.cache_dir, config.source)
    to_terminal_stream = o.output is None and o.fmt == "text"
    use_color = color_enabled(o.color, to_terminal_stream=to_terminal_stream, isatty=sys.stdout.isatty)
    if o.show_settings:
        _emit(_settings(config, active, paths, o, cache_root, use_color), None)
        sys.exit(0)
    stdin = read_stdin(getattr(sys.stdin, "buffer", sys.stdin), o.stdin_filename) if from_stdin else None
    cache = None if cache_root is None else _cache(cache_root, active, config)
    known = _load_baseline(o.baseline_path)
    progress = for_scan(quiet=o.quiet, machine_output_on_stdout=o.output is None and o.fmt != "text")
    notes = _Notes(o.quiet)

    def scan_once():
        result = _run_scan(paths, active, config, o.jobs, cache=cache, progress=progress, stdin=stdin)
        progress.close()
        notes.full_result = result  # what --write-baseline records: everything found now
        if known is None:
            return result
        from acclint.baseline import new_findings

        result, hidden = new_findings(result, o.baseline_path, known, Path.cwd())
        notes.baseline_hidden = hidden
        return result

    try:
        if o.show_diff:
            _print_diff(scan_once(), o.unsafe_fixes, o.exit_zero)
        result = _fix(scan_once, o.unsafe_fixes, notes) if config.fix else scan_once()
    except Exception as exc:
        _internal_error(exc)
    if o.write_baseline_path is not None:
        _write_baseline(o.write_baseline_path, notes.full_result, notes)
    if o.statistics:
        report = render_statistics(result, rules, o.fmt)
    else:
        report = render(result, o.fmt, rules, color=use_color, show_fix=not o.hide_fix, base_dir=str(Path.cwd()),
                        active_codes=frozenset(rule.code for rule in active), paths=tuple(map(str, paths)),
                        preview_codes=_preview_codes(config, rules))
    _emit(report, o.output, color=use_color)
    notes.flush()
    failed = any(fails(config, finding.severity) for finding in result.findings)
    sys.exit(exit_status(result, failed=failed, exit_zero=o.exit_zero))


def _check_usage(paths, o, from_stdin: bool) -> None:
    """Combinations that cannot work are usage errors (exit 2) before anything is read."""
    from acclint.linter.stdin import stdin_usage_problem
    from acclint.reports.statistics import STATISTICS_FORMATS

    problem = stdin_usage_problem(paths, o.stdin_filename)
    if problem is None and o.statistics and o.fmt not in STATISTICS_FORMATS:
        problem = f"--statistics prints {' or '.join(STATISTICS_FORMATS)}, not {o.fmt}"
    if problem is None and from_stdin and (o.apply_fix or o.show_diff):
        problem = "--fix and --diff write files: they cannot be used on text read from stdin"
    if problem is not None:
        raise click.UsageError(problem)


def _settings(config, active, paths, o, cache_root, use_color) -> str:
    """--show-settings: what this command line resolves to, not only the config file."""
    from acclint.reports.settings import render_settings

    return render_settings(config, [rule.code for rule in active], {
        "paths": [str(p) for p in paths] or ["."],
        "stdin-filename": o.stdin_filename,
        "output-format": o.fmt,
        "output": str(o.output) if o.output is not None else None,
        "exit-zero": o.exit_zero,
        "statistics": o.statistics,
        "unsafe-fixes": o.unsafe_fixes,
        "hide-fix": o.hide_fix,
        "cache-dir": str(cache_root) if cache_root is not None else None,
        "cache": cache_root is not None,
        "baseline": str(o.baseline_path) if o.baseline_path is not None else None,
        "jobs": o.jobs,
        "color": use_color,
    })


def _scan_config(paths, config_path, select, ignore, exclude, fail_on, codes, *, extend_select=(),
                 extend_exclude=(), respect_gitignore=None, fix=None, preview=None,
                 max_file_size=None) -> Config:
    """[tool.acclint] from the config file, overridden by the command line; bad values exit 2."""
    try:
        explicit = config_path is not None
        config_file = config_path if explicit else find_pyproject(Path(paths[0]) if paths else Path.cwd())
        config = load_config(config_file, explicit=explicit, known_codes=codes)
        if config.plugins:  # project-local codes are selectable on the command line too
            from acclint.plugins import plugin_rules

            codes = set(codes) | {rule.code for rule in plugin_rules(config)}
        return config.merged(
            select=validate_selectors(_split(select), codes, "--select"),
            extend_select=validate_selectors(_split(extend_select), codes, "--extend-select"),
            ignore=validate_selectors(_split(ignore), codes, "--ignore"),
            exclude=[*exclude, *extend_exclude],
            fail_on=fail_on,
            respect_gitignore=respect_gitignore,
            fix=fix,
            preview=preview,
            max_file_size=max_file_size,
        )
    except ConfigError as exc:
        raise click.UsageError(str(exc))


def _run_scan(paths, active, config, jobs, cache=None, progress=None, stdin=None):
    from acclint.linter.engine import scan as run_scan

    if stdin is not None:
        paths = ()
    elif not paths:
        paths = (Path("."),)
    try:
        return run_scan(list(paths), active, config, jobs=jobs, cache=cache, progress=progress, stdin=stdin)
    except Exception as exc:
        _internal_error(exc)


def _internal_error(exc: Exception) -> None:
    """A bug of ours: say so plainly, exit 2, no traceback."""
    click.echo(f"acclint: internal error: {type(exc).__name__}: {exc} "
               "(please report it with the file that triggered it)", err=True)
    sys.exit(2)


def _cache_root(cache_dir, config_file) -> Path:
    """The cache next to the configuration file (the project root), else in the current folder."""
    from acclint.linter.cache import default_root

    return cache_dir if cache_dir is not None else default_root(config_file, Path.cwd())


def _cache(root, rules, config):
    from acclint.linter.cache import Cache

    return Cache(root, rules, config)


def _print_diff(result, unsafe: bool, exit_zero: bool) -> None:
    """--diff: the edits --fix would make, as a patch on stdout; exit 1 when there are any (as ruff)."""
    from acclint.exit_codes import exit_status
    from acclint.linter.fix import plan_fixes

    outcome = plan_fixes(result.findings, unsafe=unsafe)
    for path, message in outcome.errors:
        click.echo(f"acclint: {path}: {message}", err=True)
    patch = outcome.diff(Path.cwd())
    if patch:
        click.echo(patch, nl=False)
    click.echo(f"Would fix {len(outcome.fixed)} finding(s) in {len(outcome.files)} file(s).", err=True)
    sys.exit(exit_status(result, failed=bool(outcome.files), exit_zero=exit_zero))


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
        if text:  # --statistics of a clean scan prints nothing, as ruff
            click.echo(text, color=color)
        return
    try:
        output.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise click.UsageError(f"cannot write {output}: {exc.strerror or exc}")


@main.command("diff")
@click.argument("left", type=click.Path(path_type=Path))
@click.argument("right", type=click.Path(path_type=Path))
@click.option("--format", "--output-format", "fmt", type=click.Choice(["text", "json", "github"]), default="text",
              show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write the report here.")
@click.option("--ignore", multiple=True,
              help="Keys, globs (`*-parallel-size`), categories or groups (`parallel`) accepted as different.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="pyproject.toml to read [tool.acclint.diff] from; default: the nearest pyproject.toml.")
@click.option("--color/--no-color", default=None, help="Colour text output [default: when writing to a terminal].")
def diff(left, right, fmt, output, ignore, config_path, color) -> None:
    """Compare two training setups (launch scripts, Python scripts, configs or folders) and the model code
    in them (fused vs composed ops); LEFT is the reference."""
    from acclint.reports import render_diff
    from acclint.reports.color import color_enabled
    from acclint.setups import SetupError, diff_paths

    try:
        explicit = config_path is not None
        config = load_config(config_path if explicit else find_pyproject(left), explicit=explicit,
                             known_codes={rule.code for rule in _all_rules()})
    except ConfigError as exc:
        raise click.UsageError(str(exc))
    try:  # a side with nothing to compare is an error, not a list of one-sided settings
        result = diff_paths(str(left), str(right), ignore=[*config.diff_ignore, *_split(ignore)])
    except SetupError as exc:
        for line in str(exc).splitlines():
            click.echo(f"acclint diff: {line}", err=True)
        sys.exit(2)
    use_color = color_enabled(color, to_terminal_stream=output is None and fmt == "text", isatty=sys.stdout.isatty)
    _emit(render_diff(result, fmt, color=use_color), output, color=use_color)
    sys.exit(1 if result.mismatches else 0)


_CONFIG_HELP = "pyproject.toml (or acclint.toml) whose `plugins` add rules; default: the nearest pyproject.toml."


@main.command("rules")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), help=_CONFIG_HELP)
def rules_command(fmt, config_path) -> None:
    """List every rule, the project's own (`plugins`) included."""
    from acclint.reports import render_rule_list

    click.echo(render_rule_list(_project_rules(config_path), fmt=fmt))


@main.command("rule")
@click.argument("code")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True)
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), help=_CONFIG_HELP)
def rule_command(code, fmt, config_path) -> None:
    """Explain one rule: what it does, why it matters, an example, the fix."""
    from acclint.reports import render_rule_page

    rules = {rule.code: rule for rule in _project_rules(config_path)}
    by_name = {rule.name: rule for rule in rules.values()}
    rule = rules.get(code.upper()) or by_name.get(code)
    if rule is None:
        raise click.UsageError(f"unknown rule {code!r}; `acclint rules` lists them")
    click.echo(render_rule_page(rule, fmt=fmt))


@main.command("test-rules")
@click.argument("codes", nargs=-1)
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), help=_CONFIG_HELP)
def test_rules_command(codes, config_path) -> None:
    """Check rules against their own examples: the project's `plugins` rules, or the CODES given.
    Exit 0 when every invalid example is reported where it is marked and no valid one is."""
    from acclint.rule_examples import rule_problems

    builtin = {rule.code for rule in _all_rules()}
    rules = _project_rules(config_path)
    wanted = {code.upper() for code in codes}
    unknown = wanted - {rule.code for rule in rules}
    if unknown:
        raise click.UsageError(f"unknown rule(s) {', '.join(sorted(unknown))}; `acclint rules` lists them")
    chosen = [rule for rule in rules if rule.code in wanted] if wanted else \
        [rule for rule in rules if rule.code not in builtin]
    if not chosen:
        raise click.UsageError("no project rules to test: name codes, or list modules in [tool.acclint] plugins")
    failed = 0
    for rule in chosen:
        problems = rule_problems(rule)
        failed += bool(problems)
        examples = len(rule.invalid) + len(rule.valid)
        click.echo(f"{rule.code} {rule.name}: " + ("FAILED" if problems else f"{examples} example(s) pass"))
        for problem in problems:
            click.echo(f"  {problem}")
    click.echo(f"{len(chosen) - failed} of {len(chosen)} rule(s) pass their examples.")
    sys.exit(1 if failed else 0)


# --- acclint report: the HTML migration-readiness report (scan + optional diff + fingerprints) --------


@main.command("report")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The HTML file to write (one self-contained file).")
@click.option("--diff", "diff_sides", nargs=2, type=click.Path(path_type=Path), default=None, metavar="LEFT RIGHT",
              help="Also compare two setups (launch scripts, training scripts, configs or folders).")
@click.option("--fingerprints", nargs=2, type=click.Path(path_type=Path), default=None, metavar="A.json B.json",
              help="Also compare two step-0 fingerprints (acclint.runtime.capture) or msprobe dump folders.")
@click.option("--select", multiple=True, help="Only these rule codes/prefixes or categories (comma-separated).")
@click.option("--ignore", multiple=True, help="Skip these rule codes/prefixes or categories (comma-separated).")
@click.option("--exclude", multiple=True, help="Glob of paths to skip (repeatable).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="pyproject.toml (or acclint.toml) to read [tool.acclint] from; default: the nearest pyproject.toml.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes [default: all cores].")
@click.option("--preview/--no-preview", default=None,
              help="Also run preview rules (new, or measured under 90% precision) [default: preview in config, else off].")
def report_command(paths, output, diff_sides, fingerprints, select, ignore, exclude, config_path, jobs,
                   preview) -> None:
    """Write one HTML migration-readiness report: the checklist filled in, with its evidence."""
    from acclint.reports.html import html_report
    from acclint.reports.html_inputs import ReportInputError, check_output, load_comparison, load_diff
    from acclint.reports.html_runtime import runtime_view
    from acclint.reports.text import summary_line

    def fail(message: str) -> None:
        click.echo(f"acclint report: error: {message}", err=True)
        sys.exit(2)

    rules = _all_rules()
    config = _scan_config(paths, config_path, select, ignore, exclude, None, {rule.code for rule in rules},
                          preview=preview)
    rules = _with_plugins(rules, config)
    try:  # every input is checked before the scan, so a typo costs no time
        check_output(output)
        diff = load_diff(*diff_sides) if diff_sides else None
        runtime = runtime_view(*load_comparison(*fingerprints)) if fingerprints else None
    except ReportInputError as exc:
        fail(str(exc))
    active = _active(config, rules)
    result = _run_scan(paths, active, config, jobs)
    try:
        page = html_report(result, rules, active_codes=frozenset(rule.code for rule in active),
                           preview_codes=_preview_codes(config, rules), base_dir=Path.cwd(),
                           paths=[str(p) for p in paths], diff=diff, runtime=runtime)
        output.write_text(page, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}")
    except Exception as exc:  # a bug of ours: say so plainly, exit 2, no traceback
        fail(f"internal error: {type(exc).__name__}: {exc} (please report it with the command line)")
    click.echo(f"Wrote {output}: {summary_line(result)}")
