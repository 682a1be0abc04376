# One DGX H100-class node: 8 H100 SXM GPUs on NVSwitch (NVLink 4, 18 links per GPU), NVLink SHARP.
# NCCL side: what NCCL 2.28-2.30's topology search reports on such a node (ring/tree graphs of 16
# channels at 20 GB/s, duplicated to 32 communicator channels; 16 NVLS channels).
# Truth side: ~370 GB/s effective NVLink bus bandwidth (the line rate less protocol overhead),
# NVLS AllReduce peaking near 480 GB/s bus bandwidth, LL128 within ~10% of Simple.
name = nvlink-h100x8
description = 1 node x 8 H100 SXM, NVSwitch, NVLink SHARP
nodes = 1
ranks_per_node = 8
compute_capability = 90
cpu = intel
channels = 32
nvls_channels = 16
nvls = 1
nvswitches = 4

graph.ring.channels = 16
graph.ring.bw_intra = 20
graph.ring.bw_inter = 20
graph.ring.type_intra = NVL
graph.ring.type_inter = PIX
graph.tree.channels = 16
graph.tree.bw_intra = 20
graph.tree.bw_inter = 20
graph.tree.type_intra = NVL
graph.tree.type_inter = PIX
graph.nvls.channels = 16
graph.nvls.bw_intra = 30
graph.nvls.bw_inter = 30
graph.nvls.type_intra = NVL
graph.nvls.type_inter = PIX

truth.launch_us = 4.5
truth.intra.link_bw = 370
truth.intra.channel_bw.ll = 7
truth.intra.channel_bw.ll128 = 19
truth.intra.channel_bw.simple = 22
truth.intra.step_us.ll = 0.45
truth.intra.step_us.ll128 = 0.8
truth.intra.step_us.simple = 2.0
truth.intra.buffer = 32M
truth.intra.congestion = 0.03
truth.tree_bw = 1.0
truth.nvls_bw = 470
truth.nvls_step_us = 10
truth.interference_sm = 0.55
truth.interference_mem = 0.12
truth.interference_channels = 0.01
noise.sigma = 0.02
