"""bench/gpu/graph_check.py: CUDA graphs on real NCCL beside DynamICCL: ranks as processes on the one
GPU with distinct NCCL_HOSTID (real NCCL over its socket transport on loopback), torchrun-style
rendezvous (MASTER_ADDR/MASTER_PORT). AllReduce at a few sizes runs eagerly (the plugin learning and
exploring), then the same calls are captured into one CUDA graph and replayed, then run eagerly again;
every result is checked. Prints `graph_check captured=<calls captured per rank> replays=<graph replays>
correct=<0|1>` and a CSV line. The caller sets the plugin up (NCCL_TUNER_PLUGIN, NCCL_PROFILER_PLUGIN,
NCCL_DEBUG=INFO): the plugin's finalize lines then tell what it saw, on each rank: 'N captured into CUDA
graphs (the exploited action)' and 'N CUDA-graph replays (not measured)' (docs/architecture.md, "CUDA
graphs": NCCL 2.28+ tells the profiler which calls are captured).

Usage: python3 bench/gpu/graph_check.py [--ranks 2] [--eager 100] [--replays 40] [--label run] [--watchdog S]
Each rank prints its progress on stderr ('graph_check rank R: <phase> (<seconds> s)'); with --watchdog, a
rank not done after S seconds prints every thread's Python stack and exits, so a hang says where it is.
"""
import argparse
import faulthandler
import sys
import time

import torch
import torch.distributed as dist

import spawn_ranks

SIZES = [1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22]  # bytes of float32


def worker(rank, args, results):
    started = time.monotonic()
    if args.watchdog > 0:  # a rank still running then prints where it is (every thread's stack) and exits
        faulthandler.dump_traceback_later(args.watchdog, exit=True)

    def reached(phase):
        print(f"graph_check rank {rank}: {phase} ({time.monotonic() - started:.1f} s)", file=sys.stderr, flush=True)

    spawn_ranks.join(rank, args.ranks, "graph-host")
    reached("joined")
    buffers = [torch.empty(size // 4, device="cuda") for size in SIZES]
    expected = float(args.ranks * (args.ranks + 1) // 2)

    def fill():
        for b in buffers:
            b.fill_(float(rank + 1))

    def all_reduce_each():
        for b in buffers:
            dist.all_reduce(b)

    def correct():
        torch.cuda.synchronize()
        return all(bool(torch.all(b == expected)) for b in buffers)

    ok = True
    for i in range(args.eager):  # eager: the communicator made, the plugin learning
        fill()
        all_reduce_each()
        if i % 25 == 0:
            ok &= correct()
    ok &= correct()
    reached(f"eager calls done, correct={int(ok)}")
    # PyTorch's recipe: warm up on a side stream, then capture on it.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fill()
        all_reduce_each()
    torch.cuda.current_stream().wait_stream(side)
    ok &= correct()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        all_reduce_each()
    reached("captured")
    for r in range(args.replays):
        fill()
        graph.replay()
        if r % 10 == 0 or r == args.replays - 1:
            ok &= correct()
    reached(f"replays done, correct={int(ok)}")
    for _ in range(args.eager):  # eager again: the join after the replays
        fill()
        all_reduce_each()
    ok &= correct()
    reached(f"eager calls after the replays done, correct={int(ok)}")
    results[rank] = ok
    # The graph holds NCCL's resources for its captured calls: destroying the process group while it
    # lives hangs (on the GPU machine, with or without DynamICCL: docs/results/gpu/11-graph-configs;
    # pytorch/pytorch#115388). Release it first.
    graph.reset()
    del graph
    torch.cuda.synchronize()
    dist.destroy_process_group()
    reached("process group destroyed")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--eager", type=int, default=100)
    parser.add_argument("--replays", type=int, default=40)
    parser.add_argument("--label", default="run")
    parser.add_argument("--watchdog", type=float, default=0,
                        help="seconds after which a rank still running prints its stacks and exits (0: never)")
    args = parser.parse_args()
    ok = all(spawn_ranks.run(worker, args, 29543))
    print(f"graph_check captured={len(SIZES)} replays={args.replays} correct={int(ok)}")
    print(f"graph,{args.label},{args.ranks},{len(SIZES)},{args.replays},{int(ok)}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
