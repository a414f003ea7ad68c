"""`acclint capture [OPTIONS] -- COMMAND [ARGS]...`: options in, `launch` does the work."""

from __future__ import annotations

from pathlib import Path

import click

from acclint.runtime_checks.capture_hooks.launch import EXIT_ERROR, CommandError, print_outcome, run
from acclint.runtime_checks.capture_hooks.settings import ON_MISMATCH, Settings

MAX_STEPS = 100000


@click.command("capture", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=Path("fingerprint.json"),
              show_default=True, help="Where to write the step-0 fingerprint (one file, merged across ranks).")
@click.option("--steps", type=click.IntRange(1, MAX_STEPS), default=1, show_default=True,
              help="1: record step 0 and stop after its update; 2: also record the loss of step 1 (next batch) "
                   "and stop before its update; N > 2: also the loss and lr of each of the first N steps (torch; "
                   "MindSpore Model.train and TrainOneStepCell, GRAPH mode too; every rank's under torchrun), "
                   "compared step by step.")
@click.option("--continue", "keep_going", is_flag=True,
              help="Let the job run on after the capture (every hook is removed after it).")
@click.option("--reference", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Compare with this fingerprint at once: exit 0 at parity, 1 on a mismatch.")
@click.option("--on-mismatch", type=click.Choice(ON_MISMATCH), default="exit", show_default=True,
              help="exit: stop the job and exit 1; warn: print the verdict, let the job run to its end and exit "
                   "with the job's own status.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def capture_command(output: Path, steps: int, keep_going: bool, reference: Path | None, on_mismatch: str,
                    command: tuple[str, ...]) -> None:
    """Run COMMAND unchanged and record the fingerprint of its first optimizer step.

    Every Python process COMMAND starts (python, torchrun and its workers, a shell script's)
    loads acclint's step-0 observation; exit 2 when no optimizer step was seen."""
    if reference is not None and not reference.is_file():
        raise click.BadParameter(f"{reference}: no such file", param_hint="--reference")
    folder = output.resolve().parent
    if not folder.is_dir():  # a typo in a path must not become a new folder tree
        raise click.BadParameter(f"{output}: the folder {folder} does not exist", param_hint="'-o' / '--output'")
    settings = Settings(output=str(output.resolve()), status_dir="", steps=steps,
                        keep_going=keep_going or on_mismatch == "warn",
                        reference=None if reference is None else str(reference.resolve()), on_mismatch=on_mismatch)
    try:
        result = run(list(command), settings)
    except CommandError as error:
        click.echo(f"acclint capture: error: {error}", err=True)
        click.get_current_context().exit(EXIT_ERROR)
    print_outcome(result)
    click.get_current_context().exit(result.code)
