"""A setting written under a name one or two letters away from one acclint knows (issue 21 point 6):
`export HCCL_DETERMINISITIC=true` sets a variable nothing reads, so the run stays nondeterministic
while the script looks right on review; `--npu-deterministc` is the same for a launcher flag.

The known names are the ones acclint's own tables describe (seeding.toml's environment variables and
launcher flags, npu_modes.toml's variables, launch_flags.toml and fused_ops.toml's flags). A flag any
launcher defines (launcher_defaults.toml) is never a misspelling of another one.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterator, Optional

from acclint.knowledge import table
from acclint.linter.context import FileContext, ProgramContext
from acclint.linter.rulebase import Example, Rule, RuleDoc

# Names shorter than this are too close to each other by nature (HCCL_ALGO, SEED) to judge by spelling.
_MIN_LENGTH = 8


def _distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours."""
    previous2, previous = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = ca != cb
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if previous2 is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


@lru_cache(maxsize=1)
def known_variables() -> frozenset:
    npu = table("npu_modes")
    names = set(table("seeding")["env"]) | set(npu["runtime"]["variables"])
    names.update(entry["name"] for group in ("saturation", "requires_inf_nan") for entry in npu["overflow"][group])
    return frozenset(names)


@lru_cache(maxsize=1)
def known_flags() -> frozenset:
    return frozenset(table("seeding")["launcher_flags"]) | frozenset(table("launch_flags")) \
        | frozenset(table("fused_ops")["flags"])


@lru_cache(maxsize=1)
def defined_flags() -> frozenset:
    """Every flag a launcher defines: a real flag is never a misspelling."""
    return frozenset(flag for name, flags in table("launcher_defaults").items() if name != "sources" for flag in flags)


def meant(name: str, known: frozenset) -> Optional[str]:
    """The known name `name` is a misspelling of: the one nearest to it, within reach, if no other is as
    near (HCCL_DETERMINISITIC is one edit from HCCL_DETERMINISTIC and two from LCCL_DETERMINISTIC)."""
    if name in known or len(name) < _MIN_LENGTH:
        return None
    reach = 1 if len(name) < 12 else 2
    close = sorted((_distance(name.upper(), k.upper()), k) for k in known if abs(len(k) - len(name)) <= reach)
    close = [(d, k) for d, k in close if d <= reach]
    if not close or len(close) > 1 and close[1][0] == close[0][0]:
        return None
    return close[0][1]


class MisspelledSetting(Rule):
    code = "ACL212"
    name = "misspelled-setting"
    category = "determinism"
    severity = "warning"
    # Stable by declaration: a name nothing reads is a protocol error wherever it is written; over the whole
    # judged corpus (both splits) it reports nothing, so there is no finding to measure.
    maturity = "stable"
    summary = "An environment variable or launcher flag spelled one or two letters away from a known one"
    doc = RuleDoc(
        what="Reports an exported environment variable (launch script) or an `os.environ` write (Python) whose "
        "name is one or two edits (a letter added, dropped, changed or two swapped) from a variable acclint "
        "knows, such as `HCCL_DETERMINISTIC`, `CUBLAS_WORKSPACE_CONFIG` or `PYTHONHASHSEED`, and a launcher flag "
        "that close to a known one (`--npu-deterministic`, `--use-fused-rmsnorm`) that no launcher defines.",
        why="Nothing reads the misspelled name: `HCCL_DETERMINISITIC=true` leaves HCCL's reductions at their "
        "nondeterministic default (`false`) while the script reads as if determinism were on, and reviewers, "
        "acclint's other rules included, take the line as proof that it is set.",
        fix="Spell the name as the framework reads it (the message names it).",
        references=("Ascend HCCL environment variables: HCCL_DETERMINISTIC",
                    "MindSpeed arguments: --npu-deterministic"),
    )
    invalid = (
        Example({
            "run_npu.sh": """
                #!/bin/bash
                export HCCL_DETERMINISITIC=true  # expect: ACL212
                torchrun --nproc_per_node 8 pretrain_gpt.py --npu-deterministc  # expect: ACL212
            """,
        }),
        Example.script("""
            import os

            os.environ["CUBLAS_WORKSPACE_CONFG"] = ":4096:8"  # expect: ACL212
        """, "written from Python"),
    )
    valid = (
        Example({
            "run_npu.sh": """
                #!/bin/bash
                export HCCL_DETERMINISTIC=true
                export HCCL_CONNECT_TIMEOUT=1200
                torchrun --nproc_per_node 8 pretrain_gpt.py --npu-deterministic --use-flash-attn
            """,
        }),
    )

    def check_file(self, ctx: FileContext) -> None:
        for write in ctx.facts.env_writes:
            known = meant(write.name, known_variables())
            if known:
                ctx.report(self, write.node, self._message("environment variable", write.name, known), fix=known)

    def check_shell(self, ctx: ProgramContext, shell) -> None:
        for name, assignment in shell.script.final_env().items():
            if assignment.span.path != shell.abspath:
                continue  # a sourced file reports its own lines when it is scanned
            known = meant(name, known_variables())
            if known:
                ctx.report_shell(self, assignment.span, self._message("environment variable", name, known), fix=known)
        for flag, value in self._flags(shell):
            known = meant(flag, known_flags()) if flag not in defined_flags() else None
            if known:
                ctx.report_shell(self, value.span, self._message("flag", f"--{flag}", f"--{known}"), fix=f"--{known}")

    @staticmethod
    def _flags(shell) -> Iterator[tuple]:
        for launch in shell.script.launches:
            yield from launch.flags().items()

    @staticmethod
    def _message(kind: str, written: str, known: str) -> str:
        return (f"{kind} `{written}` is one or two letters away from `{known}`: nothing reads `{written}`, so "
                f"`{known}` stays at its default")


RULES = [MisspelledSetting()]
