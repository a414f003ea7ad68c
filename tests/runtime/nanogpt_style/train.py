"""A training script in nanoGPT's style (written for this suite): globals as the config, a
configurator exec'd over them, gradient accumulation, a GradScaler that is off unless float16,
DDP under torchrun (gloo on CPU), an evaluation at iteration 0, random data of its own."""

import os
import time

import numpy as np
import torch
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP

from model import Config, TinyGPT

# ----------------------------------------------------------------------------- config
seed = 1337
n_layer = 2
n_head = 2
n_embd = 32
block_size = 16
vocab_size = 64
dropout = 0.0
bias = True
batch_size = 4
gradient_accumulation_steps = 2
learning_rate = 1e-3
weight_decay = 0.1
beta1 = 0.9
beta2 = 0.95
grad_clip = 1.0
max_iters = 5
eval_interval = 4
eval_iters = 2
dtype = "float32"
warmup_iters = 0  # > 0: a linear warmup to learning_rate over this many iterations (a LambdaLR)
compile = False  # torch.compile the model (nanoGPT's flag)
# "random": each rank draws its own windows (nanoGPT); "distributed": a DistributedSampler over fixed
# windows, so the ranks share out the samples one process would take (seeded, every rank alike)
sampler = "random"
out_file = ""
config_keys = [k for k, v in globals().items() if not k.startswith("_") and isinstance(v, (int, float, bool, str))]
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "configurator.py")).read())
# -----------------------------------------------------------------------------

ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    init_process_group(backend="gloo")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    assert gradient_accumulation_steps % world == 0
    gradient_accumulation_steps //= world
else:
    rank, world = 0, 1
torch.manual_seed(seed + rank)  # as nanoGPT: each rank draws its own batches
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]

data = np.random.default_rng(seed).integers(0, vocab_size, size=4096, dtype=np.int64)


def windows():
    """The training windows, one per block, and a sampler that shares them out over the ranks."""
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.distributed import DistributedSampler

    starts = range(0, 3584 - block_size - 1, block_size)
    x = torch.stack([torch.from_numpy(data[i : i + block_size]) for i in starts])
    y = torch.stack([torch.from_numpy(data[i + 1 : i + 1 + block_size]) for i in starts])
    dataset = TensorDataset(x, y)
    shares = DistributedSampler(dataset, num_replicas=world, rank=rank, seed=seed, drop_last=True)
    while True:
        yield from DataLoader(dataset, batch_size=batch_size, sampler=shares, drop_last=True)


shared = windows() if sampler == "distributed" else None


def get_batch(split):
    if split == "train" and shared is not None:
        return tuple(next(shared))
    source = data[:3584] if split == "train" else data[3584:]
    starts = torch.randint(len(source) - block_size - 1, (batch_size,))
    x = torch.stack([torch.from_numpy(source[i : i + block_size]) for i in starts])
    y = torch.stack([torch.from_numpy(source[i + 1 : i + 1 + block_size]) for i in starts])
    return x, y


torch.manual_seed(seed)  # the same initial weights on every rank
model = TinyGPT(Config(block_size, vocab_size, n_layer, n_head, n_embd, dropout, bias))
torch.manual_seed(seed + rank)
scaler = torch.amp.GradScaler("cpu", enabled=(dtype == "float16"))
optimizer = model.optimizer(weight_decay, learning_rate, (beta1, beta2))
scheduler = None
if warmup_iters:
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda it: min(1.0, it / warmup_iters))
raw_model = model
if compile:
    model = torch.compile(model)
if ddp:
    model = DDP(model)


@torch.no_grad()
def estimate_loss():
    model.eval()
    losses = torch.zeros(eval_iters)
    for k in range(eval_iters):
        _, loss = model(*get_batch("val"))
        losses[k] = loss.item()
    model.train()
    return losses.mean().item()


X, Y = get_batch("train")
iter_num = 0
started = time.time()
while True:
    if iter_num % eval_interval == 0 and rank == 0:
        print(f"step {iter_num}: val loss {estimate_loss():.4f}", flush=True)
    for micro_step in range(gradient_accumulation_steps):
        if ddp:
            model.require_backward_grad_sync = micro_step == gradient_accumulation_steps - 1
        with torch.autocast("cpu", dtype=ptdtype, enabled=dtype != "float32"):
            _, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps
        X, Y = get_batch("train")
        scaler.scale(loss).backward()
    if grad_clip != 0.0:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    scaler.step(optimizer)
    scaler.update()
    if scheduler is not None:
        scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    if rank == 0:
        print(f"iter {iter_num}: loss {loss.item() * gradient_accumulation_steps:.4f}", flush=True)
    iter_num += 1
    if iter_num >= max_iters:
        break
if out_file and rank == 0:
    with open(out_file, "w") as handle:
        handle.write(f"finished {iter_num} iterations in {time.time() - started:.2f}s\n")
if ddp:
    destroy_process_group()
