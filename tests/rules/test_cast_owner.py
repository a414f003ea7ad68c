"""ACL619's `value` premise: the optimizer steps the very model the program casts to half precision. A local
name that another function assigns is another variable, and a name assigned a loaded model is a model."""

from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from acclint.cli import main

PROGRAM = """
import torch
from diffusers import AutoencoderKL, UNet2DModel


def log_validation(unet, weight_dtype):
    unet = UNet2DModel.from_pretrained("out", torch_dtype=weight_dtype)
    return unet(torch.randn(1, 3, 8, 8), 0)


def main():
    weight_dtype = torch.bfloat16
    vae = AutoencoderKL.from_pretrained("vae")
    {cast_line}
    unet = UNet2DModel.from_pretrained("unet")
    optimizer = torch.optim.AdamW({stepped}.parameters(), lr=1e-4)
    for _ in range(2):
        loss = unet(vae.encode(torch.randn(1, 3, 8, 8)).latent_dist.sample(), 0).sample.pow(2).mean()
        loss.backward()
        optimizer.step()
    log_validation(unet, weight_dtype)


if __name__ == "__main__":
    main()
"""


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def acl619(tmp_path, cast_line: str, stepped: str) -> dict:
    (tmp_path / "train.py").write_text(textwrap.dedent(PROGRAM).format(cast_line=cast_line, stepped=stepped))
    result = CliRunner().invoke(main, ["scan", ".", "--format", "json", "--no-cache", "--exit-zero",
                                       "--select", "ACL619"])
    assert result.exit_code == 0, result.output
    (finding,) = json.loads(result.output)["findings"]
    return next(p for p in finding["premises"] if p["premise"] == "value")


def test_a_validation_helpers_local_copy_is_not_the_trained_model(here):
    value = acl619(here, "vae.requires_grad_(False)", "unet")
    assert value["proven"] is False
    assert "may not be the cast model" in value["evidence"]


def test_a_name_holding_a_loaded_model_is_a_model_when_it_is_cast(here):
    value = acl619(here, "vae.to('cuda', dtype=weight_dtype)", "vae")
    assert value["proven"] is True
    assert "train.py:14" in value["evidence"]
