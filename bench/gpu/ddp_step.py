"""bench/gpu/ddp_step.py: a small PyTorch DDP training loop, ranks as processes on the one GPU with
distinct NCCL_HOSTID (real NCCL over its socket transport on loopback), torchrun-style rendezvous
(MASTER_ADDR/MASTER_PORT). Prints the median step time over the timed steps as
`ddp_step_ms=<value>` plus a CSV line; the caller sets or unsets NCCL_TUNER_PLUGIN to compare.

Usage: python3 bench/gpu/ddp_step.py [--ranks 2] [--steps 60] [--warmup 15] [--width 4096]
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist

import spawn_ranks


def worker(rank, args, results):
    spawn_ranks.join(rank, args.ranks, "ddp-host")
    torch.manual_seed(1)
    layers = []
    for _ in range(args.depth):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers).cuda()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0], bucket_cap_mb=25)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    data = torch.randn(args.batch, args.width, device="cuda")
    times = []
    for step in range(args.warmup + args.steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = ddp(data).square().mean()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        if step >= args.warmup:
            times.append(1000.0 * (time.perf_counter() - start))
    # Every rank must have the same parameters: DDP's AllReduce results, checked.
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    reference = flat.clone()
    dist.broadcast(reference, src=0)
    same = bool(torch.equal(flat, reference))
    results[rank] = (statistics.median(times), same)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=15)
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--label", default="run")
    args = parser.parse_args()
    results = spawn_ranks.run(worker, args, 29533)
    step = max(r[0] for r in results)
    same = all(r[1] for r in results)
    print(f"ddp_step_ms={step:.3f} parameters_identical={int(same)}")
    print(f"ddp,{args.label},{args.ranks},{args.width},{args.depth},{step:.3f},{int(same)}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
