"""One rank of the 2-process gloo runs in test_runtime_sharded.py (not collected by pytest).

usage: python sharded_worker.py OUT_DIR SCENARIO...   (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set)

Each scenario captures one parallel layout of the models in sharded_models.py and writes the
fingerprint (rank 0 only, as fp.save does) plus report-<scenario>-<rank>.json with what the
rank saw (the error message of the bad-input scenarios). Scenarios run one after another in
the same process group, so one launch serves a whole test module.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).parent))

import sharded_models as models  # noqa: E402

from acclint.runtime import FingerprintError, Probe, capture  # noqa: E402

OUT = Path(sys.argv[1])
RANK = int(os.environ["RANK"])
TIMEOUT = 20.0  # seconds acclint waits for the other rank in the bad-input scenarios


def report(scenario: str, **values: object) -> None:
    (OUT / f"report-{scenario}-{RANK}.json").write_text(json.dumps(values))


def captured(scenario: str, model: torch.nn.Module, lr: float, batch: tuple, **options: object) -> None:
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    fingerprint = capture(model, optimizer, models.loss_fn, batch, **options)
    path = fingerprint.save(OUT / f"{scenario}.json")
    report(scenario, path=str(path), loss=fingerprint.step.loss, names=[p.name for p in fingerprint.params],
           numel=fingerprint.param_count()[0])


def ddp() -> None:
    from torch.nn.parallel import DistributedDataParallel

    model = DistributedDataParallel(models.mlp())
    captured("ddp", model, 1e-3, models.batch_shard(RANK, 2))


def dtensor_tp(lr: float, scenario: str) -> None:
    captured(scenario, models.dtensor_tp(), lr, models.batch())


def megatron() -> None:
    model = models.megatron_tp(RANK, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    probe = Probe(model, optimizer, tensor_parallel_group=dist.group.WORLD)
    models.probe_steps(probe, model, optimizer)
    path = probe.save(OUT / "megatron.json")
    report("megatron", path=str(path))


def pipeline() -> None:
    stage = models.pipeline_stage(RANK)
    optimizer = torch.optim.Adam(stage.parameters(), lr=1e-3)
    probe = Probe(stage, optimizer)
    for step, batch in enumerate((models.batch(), models.batch(seed=8))):
        loss = models.pipeline_step(stage, optimizer, batch, RANK)
        probe.record(step, loss, batch=batch if step == 0 else None)
        optimizer.zero_grad()
    path = probe.save(OUT / "pipeline.json")
    report("pipeline", path=str(path), has_loss=loss is not None)


def fsdp2() -> None:
    from torch.distributed.fsdp import fully_shard

    model = models.mlp()
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    captured("fsdp2", model, 1e-3, models.batch())


def expect_error(scenario: str, run: object) -> None:
    started = time.monotonic()
    try:
        run()
    except FingerprintError as error:
        report(scenario, error=str(error), seconds=time.monotonic() - started)
    else:
        report(scenario, error=None, seconds=time.monotonic() - started)


def disagree() -> None:
    model = models.mlp(extra=RANK == 1)  # rank 1 built another model
    expect_error("disagree", lambda: capture(model, torch.optim.SGD(model.parameters(), lr=0.1), models.loss_fn,
                                             models.batch(), timeout=TIMEOUT))


def fails_on_rank_1(scenario: str, model: torch.nn.Module, failure: object, timeout: float = TIMEOUT) -> None:
    """Capture where rank 1's loss_fn calls `failure` (raises, or ends the process) and rank 0's runs."""
    def loss_fn(model: torch.nn.Module, batch: tuple) -> torch.Tensor:
        if RANK == 1:
            failure()
        return models.loss_fn(model, batch)

    expect_error(scenario, lambda: capture(model, torch.optim.SGD(model.parameters(), lr=0.1), loss_fn, models.batch(),
                                           timeout=timeout))


def no_tensor_parallel_group() -> None:
    model = models.megatron_tp(RANK, 2)  # Megatron-style parameters, and no parallel_state to say the group
    expect_error("no-tp-group", lambda: Probe(model, torch.optim.Adam(model.parameters()), timeout=TIMEOUT))


def bad_labels() -> None:
    raise ValueError("labels out of range on this rank")


def ddp_rank_fails() -> None:
    from torch.nn.parallel import DistributedDataParallel

    # Rank 0 waits in DDP's gradient all-reduce (the model's own collective, not acclint's) until
    # rank 1 leaves the job; rank 1 waits for rank 0 at acclint's exchange until the timeout.
    fails_on_rank_1("ddp-fails", DistributedDataParallel(models.mlp()), bad_labels, timeout=5.0)
    if RANK == 1:
        os._exit(0)


SCENARIOS = {
    "ddp": ddp,
    "tp": lambda: dtensor_tp(1e-3, "tp"),
    "tp-lr": lambda: dtensor_tp(1e-2, "tp-lr"),
    "megatron": megatron,
    "pipeline": pipeline,
    "fsdp2": fsdp2,
    "disagree": disagree,
    "no-tp-group": no_tensor_parallel_group,
    "fails": lambda: fails_on_rank_1("fails", models.mlp(), bad_labels),
    "dies": lambda: fails_on_rank_1("dies", models.mlp(), lambda: os._exit(3)),  # gone: no message, no goodbye
    "ddp-fails": ddp_rank_fails,
}


def main() -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    for scenario in sys.argv[2:]:
        SCENARIOS[scenario]()
    if {"dies", "ddp-fails"} & set(sys.argv[2:]):
        os._exit(0)  # the other rank is gone: no collective can end this job cleanly
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    # Everything this rank reports is written and the process group is destroyed. gloo's threads can
    # still abort the interpreter's own teardown ("terminate called without an active exception", a
    # torch issue seen once in many runs on a loaded 2-core machine), which would fail the test for
    # nothing acclint did: leave without running that teardown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
