# The GPU test machine's topology: one GPU shared by 4 ranks, each rank its own "node" through a
# distinct NCCL_HOSTID, talking over NCCL's socket transport on loopback (NCCL_SOCKET_IFNAME=lo).
# NCCL sees 4 nodes of 1 rank: PAT is enabled, LL128 is not (the GPU-to-NIC path is SYS).
# Truth side (to be calibrated against real measurements): TCP on loopback through host memory,
# tens of microseconds per step, kernels of the four ranks time-sharing one GPU.
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
graph.ring.bw_intra = 12
graph.ring.bw_inter = 1.2
graph.ring.type_intra = LOC
graph.ring.type_inter = SYS
graph.tree.channels = 2
graph.tree.bw_intra = 12
graph.tree.bw_inter = 1.2
graph.tree.type_intra = LOC
graph.tree.type_inter = SYS
graph.pat.channels = 2
graph.pat.bw_intra = 12
graph.pat.bw_inter = 1.2
graph.pat.type_intra = LOC
graph.pat.type_inter = SYS

truth.launch_us = 12
truth.net.link_bw = 3
truth.net.channel_bw.ll = 0.4
truth.net.channel_bw.ll128 = 1
truth.net.channel_bw.simple = 1.6
truth.net.step_us.ll = 18
truth.net.step_us.ll128 = 22
truth.net.step_us.simple = 30
truth.net.buffer = 8M
truth.net.congestion = 0.05
truth.tree_bw = 1.0
truth.pat_bw = 0.9
noise.sigma = 0.08
noise.spike_probability = 0.002
