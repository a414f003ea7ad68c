import torch


class RunningMean:
    """Accumulates losses in float64 so that long runs do not lose small increments."""

    def __init__(self):
        self.total = torch.zeros(1, dtype=torch.float64, device="cuda")
        self.count = 0

    def update(self, value):
        self.total += value.detach().double()
        self.count += 1

    def mean(self):
        return (self.total / max(self.count, 1)).item()
