"""`acclint compare A.json B.json` (or msprobe dumps): exit 0 parity, 1 mismatches, 2 error (never a traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from acclint.runtime_checks.compare.compare import (
    DEFAULT_ACTIVATION_RTOL,
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    DEFAULT_UPDATE_RTOL,
)
from acclint.runtime_checks.dumps.compare_dumps import compare_paths
from acclint.runtime_checks.model.errors import FingerprintError

EXIT_PARITY, EXIT_MISMATCH, EXIT_ERROR = 0, 1, 2


def _non_negative(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if not value >= 0:  # also rejects NaN
        raise click.BadParameter("must be a non-negative number")
    return value


@click.command("compare")
@click.argument("left", type=click.Path())
@click.argument("right", type=click.Path())
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Readable verdict or the JSON contract.")
@click.option("--output", "output", type=click.Path(dir_okay=False), default=None,
              help="Write the report to FILE instead of standard output.")
@click.option("--rtol", type=float, default=DEFAULT_RTOL, show_default=True, callback=_non_negative,
              help="Relative tolerance for losses and norms.")
@click.option("--atol", type=float, default=DEFAULT_ATOL, show_default=True, callback=_non_negative,
              help="Absolute tolerance for losses and norms.")
@click.option("--update-rtol", type=float, default=DEFAULT_UPDATE_RTOL, show_default=True, callback=_non_negative,
              help="Relative tolerance for per-parameter update norms (adaptive optimizers amplify float32 noise).")
@click.option("--activation-rtol", type=float, default=DEFAULT_ACTIVATION_RTOL, show_default=True,
              callback=_non_negative,
              help="Relative tolerance for module activations (scaled by each tensor's RMS / norm).")
@click.option("--mapping", type=click.Path(dir_okay=False), default=None,
              help="YAML name mapping (names / prefixes / cells / ignore) for names the built-in table does not know; "
              "for msprobe dumps also msprobe's cell-mapping or layer-mapping file.")
@click.option("--step", type=click.IntRange(min=0), default=None,
              help="msprobe dumps: the step folder to read (default: the first one).")
def compare_command(left: str, right: str, output_format: str, output: str | None, rtol: float, atol: float,
                    update_rtol: float, activation_rtol: float, mapping: str | None, step: int | None) -> None:
    """Compare two step-0 fingerprints (LEFT, RIGHT) written by acclint.runtime.capture or Probe, or msprobe
    dumps (a dump_path, a step* folder or a rank / proc folder; PyTorch or MindSpore), or one of each."""
    try:
        result = compare_paths(left, right, rtol=rtol, atol=atol, update_rtol=update_rtol,
                               activation_rtol=activation_rtol, mapping=mapping, step=step)
        report = json.dumps(result.to_dict(), indent=2) if output_format == "json" else result.verdict()
        if output:
            Path(output).write_text(report + "\n", encoding="utf-8")
        else:
            click.echo(report)
    except FingerprintError as error:
        _fail(str(error))
    except OSError as error:
        _fail(f"cannot write {output}: {error.strerror or error}")
    except Exception as error:  # a bug of ours must still not show the user a traceback
        _fail(f"internal error ({type(error).__name__}: {error}); please report it with both files")
    click.get_current_context().exit(EXIT_PARITY if result.ok else EXIT_MISMATCH)


def _fail(message: str) -> None:
    click.echo(f"acclint compare: error: {message}", err=True)
    click.get_current_context().exit(EXIT_ERROR)
