"""ACL603's `material` premise: an autocast region changes the trained weights only when what it computes
reaches a backward (rules.grad_reach). Validation images generated under `autocast("cuda")` are advice; a
loss computed under it, or anything a later gradient may read, stays proven."""

from __future__ import annotations

import json
import textwrap

from click.testing import CliRunner

from acclint.cli import main

TRAIN = """
import contextlib

import torch
import torch_npu


def log_validation(pipeline, prompts):
    images = []
    for prompt in prompts:
        with torch.autocast("cuda"):
            image = pipeline(prompt)
        images.append(image)
    return images


def save_card(images):
    print(len(images))


def main():
    model = torch.nn.Linear(8, 8).npu()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in [torch.randn(4, 8).npu()]:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(x)
            loss = out.pow(2).mean()
        total = loss * 2
        total.backward()
        optimizer.step()
    images = log_validation(model, [torch.randn(4, 8).npu()])
    save_card(images)
    with torch.autocast("cuda"):
        out = model(torch.randn(4, 8).npu())  # the name the training loop used: read only from here on
    print(out)



def accumulate(model, optimizer, batches, final):
    losses = []
    for x in batches:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            losses.append(model(x).pow(2).mean())
    sum(losses).backward()
    optimizer.step()
    context = contextlib.nullcontext() if final else torch.autocast("cuda")
    with context:
        preview = model(batches[0])
    return None


if __name__ == "__main__":
    main()
    model = torch.nn.Linear(8, 8).npu()
    accumulate(model, torch.optim.SGD(model.parameters(), lr=0.1), [torch.randn(4, 8).npu()], False)
"""


def scan(tmp_path, monkeypatch, *extra: str) -> dict:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(textwrap.dedent(TRAIN).lstrip("\n"))
    result = CliRunner().invoke(main, ["scan", ".", "--format", "json", "--no-cache", "--exit-zero",
                                       "--select", "ACL603", *extra])
    assert result.exit_code == 0, result.output
    return {f["line"]: f for f in json.loads(result.output)["findings"]}


def material(finding: dict) -> dict:
    return next(p for p in finding["premises"] if p["premise"] == "material")


def line_of(text: str, nth: int = 1) -> int:
    lines = TRAIN.lstrip("\n").splitlines()
    return [i for i, line in enumerate(lines) if line == text][nth - 1] + 1


def test_a_loss_computed_under_autocast_stays_proven(tmp_path, monkeypatch):
    found = scan(tmp_path, monkeypatch)
    finding = found[line_of('        with torch.autocast("cuda", dtype=torch.bfloat16):')]
    assert finding["proven"] and finding["severity"] == "warning"
    assert "material" not in {p["premise"] for p in finding["premises"]}  # it may reach total.backward()


def test_validation_images_generated_under_autocast_are_advice(tmp_path, monkeypatch):
    found = scan(tmp_path, monkeypatch)
    finding = found[line_of('        with torch.autocast("cuda"):')]
    assert not finding["proven"] and finding["severity"] == "info"
    assert not material(finding)["proven"]
    assert "log_validation returns it only to callers" in material(finding)["evidence"]
    final = found[line_of('    with torch.autocast("cuda"):')]
    assert not material(final)["proven"] and "(out) reaches no backward in main" in material(final)["evidence"]


def test_preview_keeps_the_unproven_finding_a_warning_that_says_why(tmp_path, monkeypatch):
    found = scan(tmp_path, monkeypatch, "--preview")
    finding = found[line_of('        with torch.autocast("cuda"):')]
    assert finding["severity"] == "warning" and "only evaluates" in finding["message"]


def test_a_loss_appended_under_autocast_and_summed_for_backward_stays_proven(tmp_path, monkeypatch):
    found = scan(tmp_path, monkeypatch)
    finding = found[line_of('        with torch.autocast("cuda", dtype=torch.bfloat16):', 2)]
    assert finding["proven"] and "material" not in {p["premise"] for p in finding["premises"]}


def test_an_autocast_bound_to_a_name_is_judged_by_the_with_that_enters_it(tmp_path, monkeypatch):
    found = scan(tmp_path, monkeypatch)
    finding = found[line_of('    context = contextlib.nullcontext() if final else torch.autocast("cuda")')]
    assert not material(finding)["proven"] and "(preview)" in material(finding)["evidence"]


ACCUMULATE = """
import torch
import torch_npu


def main():
    model = torch.nn.Linear(8, 8).npu()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    total = 0
    for x in [torch.randn(4, 8).npu()]:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).pow(2).mean()
        total += loss
    total.backward()
    optimizer.step()


if __name__ == "__main__":
    main()
"""


def test_a_loss_added_up_in_place_is_not_taken_for_evaluation(tmp_path, monkeypatch):
    """`total += loss` leaves no fact to follow: a backward after the region keeps the finding proven."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(ACCUMULATE.lstrip("\n"))
    result = CliRunner().invoke(main, ["scan", ".", "--format", "json", "--no-cache", "--exit-zero",
                                       "--select", "ACL603"])
    (finding,) = json.loads(result.output)["findings"]
    assert finding["proven"] and finding["severity"] == "warning"
