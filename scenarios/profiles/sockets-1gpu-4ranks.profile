# The GPU test machine's topology: one GPU shared by 4 ranks, each rank its own "node" through a
# distinct NCCL_HOSTID, talking over NCCL's socket transport on loopback (NCCL_SOCKET_IFNAME=lo).
# NCCL sees 4 nodes of 1 rank: PAT is enabled, LL128 is not (the GPU-to-NIC path is SYS).
# Calibrated on the H100 test machine's 2-rank measurements (docs/results/gpu/4-side-by-side-r10-warm):
# NCCL's side with the graph bandwidth at 0.8 GB/s, so that the simulated NCCL chooses what the real
# NCCL 2.28.9 chose; the truth side by tools/calibrate_profile.py against the replayed measurements
# (median |log error| against the pooled measurements 0.35 -> 0.13; the model does not capture 2-node tree and PAT's full advantage at
# 16-256 KiB: h100-sockets-2ranks-replay replays the measurements themselves).
name = sockets-1gpu-4ranks
description = 1 GPU, 4 ranks as 4 nodes over sockets on loopback
nodes = 4
ranks_per_node = 1
compute_capability = 90
cpu = intel
channels = 2
nvls = 0
nvswitches = 0

graph.ring.channels = 2
graph.ring.bw_intra = 0.8
graph.ring.bw_inter = 0.8
graph.ring.type_intra = LOC
graph.ring.type_inter = SYS
graph.tree.channels = 2
graph.tree.bw_intra = 0.8
graph.tree.bw_inter = 0.8
graph.tree.type_intra = LOC
graph.tree.type_inter = SYS
graph.pat.channels = 2
graph.pat.bw_intra = 0.8
graph.pat.bw_inter = 0.8
graph.pat.type_intra = LOC
graph.pat.type_inter = SYS

truth.launch_us = 13.7
truth.channel_us = 9.1
truth.net.link_bw = 2.3
truth.net.channel_bw.ll = 1.6
truth.net.channel_bw.ll128 = 1
truth.net.channel_bw.simple = 6.4
truth.net.step_us.ll = 19.6
truth.net.step_us.ll128 = 22
truth.net.step_us.simple = 30.7
truth.net.buffer = 8M
truth.net.congestion = 0.05
truth.tree_bw = 1
truth.pat_bw = 0.45
noise.sigma = 0.08
noise.spike_probability = 0.002
