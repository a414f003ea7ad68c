# A CPU-sized run: two layers, gradient accumulation over two micro-batches.
n_layer = 2
n_embd = 32
batch_size = 4
gradient_accumulation_steps = 2
max_iters = 5
eval_interval = 4
eval_iters = 2
