import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, Subset, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def evaluate(model, dataset):
    # Every sample on exactly one rank, none repeated to even the shards out.
    shard = Subset(dataset, range(dist.get_rank(), len(dataset), dist.get_world_size()))
    correct = torch.zeros(2)
    for x, y in DataLoader(shard, batch_size=50):
        correct += torch.tensor([(model(x).argmax(1) == y).sum().item(), len(y)])
    dist.all_reduce(correct)
    return (correct[0] / correct[1]).item()


def main():
    dist.init_process_group("nccl")
    torch.manual_seed(0)
    train = TensorDataset(torch.randn(800, 8), torch.randint(0, 3, (800,)))
    val = TensorDataset(torch.randn(1001, 8), torch.randint(0, 3, (1001,)))
    model = nn.parallel.DistributedDataParallel(nn.Linear(8, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    sampler = DistributedSampler(train)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in DataLoader(train, batch_size=32, sampler=sampler):
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(epoch, evaluate(model, val))


if __name__ == "__main__":
    main()
