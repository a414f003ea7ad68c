"""One cause, one finding: findings that the same change fixes are shown once.

- **One run, one launch.** A launch script that starts one multi-card run in several lines (a line
  per rank, rank 0 in the foreground and the others in the background, the same script with the same
  flags under two branches) gets one finding per rule: the first line's, naming the others. Lines
  differing only in per-process values (a rank, a device id, anything read from a variable) launch the
  same run; a different script or another flag is another run.
- **One call, two causes.** Where a rule's fix also fixes another rule's finding at the same line
  (`Rule.also_fixes`: MindSpore's deterministic switch also sets HCCL_DETERMINISTIC), the two are one
  finding of the first rule, naming the second. The JSON shape stays one rule per finding.
"""

from __future__ import annotations

from dataclasses import replace

from acclint.findings import SEVERITY_RANK


def fold_one_run(findings: list, shells) -> list:
    """Shell findings of one rule at launch lines of one run (`run_key`) folded into the first."""
    launches = {}  # (display path, line) -> run key
    for shell in shells:
        for launch in shell.script.launches:
            launches.setdefault((shell.path, launch.span.line), run_key(launch))
    firsts: dict = {}  # (path, rule, run key) -> index in out
    others: dict = {}  # index -> lines of the same run
    out = []
    for finding in sorted(findings, key=lambda f: f.sort_key()):
        key = launches.get((finding.path, finding.line))
        if key is None:
            out.append(finding)
            continue
        place = (finding.path, finding.rule, key)
        if place in firsts:
            others.setdefault(firsts[place], []).append(finding.line)
            continue
        firsts[place] = len(out)
        out.append(finding)
    for index, lines in others.items():
        noun = "line" if len(lines) == 1 else "lines"
        out[index] = replace(out[index], message=f"{out[index].message.rstrip()} (and {noun} "
                                                 f"{', '.join(map(str, lines))}: the same run)")
    return out


def run_key(launch) -> tuple:
    """What makes a launch line the run it starts: launcher, script and flags, per-process values aside."""
    return (launch.launcher, launch.script, _flags(launch.launcher_flags()), _flags(launch.flags()))


def _flags(flags: dict) -> tuple:
    return tuple(sorted((name, _shared_value(flag)) for name, flag in flags.items()))


def _shared_value(flag):
    """The flag's value as every process of the run shares it; None for a per-process value (a rank or
    device id, or one read from a variable: `--device_id $i`)."""
    value = flag.value
    if value is None:
        return ""
    if not flag.known or "$" in value or value.isdigit():
        return None
    return value


def fold_shared_fixes(findings: list, rules: dict) -> list:
    """A finding whose rule's fix also fixes another rule's finding at the same line stands for both."""
    at: dict = {}  # (path, line) -> {rule: finding}
    for finding in findings:
        at.setdefault((finding.path, finding.line), {})[finding.rule] = finding
    folded, named = set(), {}
    for place, by_rule in at.items():
        for code, finding in by_rule.items():
            for other in getattr(rules.get(code), "also_fixes", ()):
                covered = by_rule.get(other)
                if covered is not None and id(covered) not in folded and id(finding) not in folded:
                    folded.add(id(covered))
                    named.setdefault(id(finding), []).append(covered)
    out = []
    for finding in findings:
        if id(finding) in folded:
            continue
        for covered in named.get(id(finding), ()):
            graver = min(finding.severity, covered.severity, key=lambda s: SEVERITY_RANK.get(s, len(SEVERITY_RANK)))
            finding = replace(finding, severity=graver, message=f"{finding.message.rstrip()} The same fix also "
                                                                f"settles {covered.rule} here: {covered.message.rstrip()}")
        out.append(finding)
    return out
