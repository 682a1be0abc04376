# An 8-GPU PCIe server: two sockets, two PCIe Gen4 switches per socket, two GPUs per switch, no
# NVLink (Ada-class GPUs, compute capability 8.9). NCCL finds 2 ring channels at 6 GB/s (cross-socket
# paths, SYS), so it runs 256-thread Simple rings with 2 MiB chunks and disables LL128.
# Truth side: P2P through the switches and the socket link saturates near 11 GB/s per GPU and
# buffers little, so NCCL's large chunks congest it (AutoCCL section 3: NCCL's default reaches
# about 81% of the best AllGather bandwidth on such a node); rings cross the socket link twice per
# channel, so a tree (chain) wins AllReduce over a range of sizes.
name = pcie-8gpu
description = 1 node x 8 GPUs on PCIe Gen4 switches, 2 sockets, no NVLink
nodes = 1
ranks_per_node = 8
compute_capability = 89
cpu = intel
channels = 2
nvls = 0
nvswitches = 0

graph.ring.channels = 2
graph.ring.bw_intra = 6
graph.ring.bw_inter = 6
graph.ring.type_intra = SYS
graph.ring.type_inter = PHB
graph.ring.same_channels = 0
graph.tree.channels = 2
graph.tree.bw_intra = 6
graph.tree.bw_inter = 6
graph.tree.type_intra = SYS
graph.tree.type_inter = PHB

truth.launch_us = 6
truth.intra.link_bw = 11
truth.intra.channel_bw.ll = 1.6
truth.intra.channel_bw.ll128 = 4
truth.intra.channel_bw.simple = 5.5
truth.intra.step_us.ll = 1.0
truth.intra.step_us.ll128 = 1.8
truth.intra.step_us.simple = 3.5
truth.intra.buffer = 1M
truth.intra.congestion = 0.042
truth.ring_bw = 0.8
truth.tree_bw = 0.85
truth.interference_sm = 0.4
truth.interference_mem = 0.15
noise.sigma = 0.03
