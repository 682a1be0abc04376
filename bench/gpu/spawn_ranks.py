"""bench/gpu/spawn_ranks.py: what the PyTorch checks (ddp_step.py, graph_check.py) share: ranks as
processes on the one GPU, each with its own NCCL_HOSTID, so that NCCL treats them as separate nodes and
talks over its socket transport on loopback; joined torchrun-style (MASTER_ADDR/MASTER_PORT)."""
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def join(rank, ranks, host_prefix):
    """In a rank's process: its host id, the loopback interface, the GPU, then the process group."""
    os.environ["NCCL_HOSTID"] = f"{host_prefix}-{rank}"
    os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=rank, world_size=ranks)


def run(worker, args, port):
    """Runs worker(rank, args, results) in args.ranks processes (rendezvous on `port` unless MASTER_PORT is
    set); returns what each rank put in results[rank], in rank order."""
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(port))
    manager = mp.Manager()  # kept alive until the results are read
    results = manager.dict()
    mp.spawn(worker, args=(args, results), nprocs=args.ranks, join=True)
    return [results[r] for r in range(args.ranks)]
