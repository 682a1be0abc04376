# Sixteen single-GPU nodes (H100 PCIe) on 200 Gb/s RoCE Ethernet, one NIC per GPU on its PCIe
# switch. With one rank per node NCCL enables PAT for AllGather/ReduceScatter and uses tree network
# latencies. Truth side: ~23 GB/s per NIC, slow Ethernet steps, little switch buffering, and a
# fabric sensitive to congestion from other jobs.
name = roce-16x1
description = 16 nodes x 1 H100 PCIe, 200 Gb/s RoCE
nodes = 16
ranks_per_node = 1
compute_capability = 90
cpu = amd
channels = 4
nvls = 0
nvswitches = 0

graph.ring.channels = 4
graph.ring.bw_intra = 24
graph.ring.bw_inter = 6
graph.ring.type_intra = LOC
graph.ring.type_inter = PIX
graph.tree.channels = 4
graph.tree.bw_intra = 24
graph.tree.bw_inter = 6
graph.tree.type_intra = LOC
graph.tree.type_inter = PIX
graph.pat.channels = 4
graph.pat.bw_intra = 24
graph.pat.bw_inter = 6
graph.pat.type_intra = LOC
graph.pat.type_inter = PIX

truth.launch_us = 6
truth.net.link_bw = 23
truth.net.channel_bw.ll = 1.0
truth.net.channel_bw.ll128 = 3.0
truth.net.channel_bw.simple = 6.5
truth.net.step_us.ll = 3
truth.net.step_us.ll128 = 4.5
truth.net.step_us.simple = 5.5
truth.net.buffer = 2M
truth.net.congestion = 0.12
truth.tree_bw = 1.0
truth.pat_bw = 0.85
truth.ll128_congestion = 2
truth.congestion_bw = 0.65
truth.congestion_latency = 4
noise.sigma = 0.04
