# Four DGX H100-class nodes (8 H100 SXM each, NVSwitch) joined by InfiniBand NDR: one 400 Gb/s NIC per
# GPU on the GPU's PCIe switch (PIX), GPUDirect RDMA. NCCL runs 16 channels; beyond two nodes its model
# uses the inter-node graph bandwidth (24 GB/s per channel). NVLS needs CollNet across nodes, so only NVLS-tree is offered.
# Truth side: ~48 GB/s per NIC; network steps cost several microseconds (Simple's fences and the
# proxy's RDMA round trips more than LL's flag polling), which puts the LL/LL128-to-Simple crossover
# near 64 KiB (Demystifying NCCL, inter-node AllReduce). Four nodes give the tree a
# log-depth latency advantage over the ring's 2(nodes-1) network steps.
name = h100-4x8-ib
description = 4 nodes x 8 H100 SXM, NVSwitch, 8 x 400 Gb/s InfiniBand per node
nodes = 4
ranks_per_node = 8
compute_capability = 90
cpu = intel
channels = 16
nvls_channels = 16
nvls = 1
nvswitches = 4

graph.ring.channels = 16
graph.ring.bw_intra = 20
graph.ring.bw_inter = 24
graph.ring.type_intra = NVL
graph.ring.type_inter = PIX
graph.tree.channels = 16
graph.tree.bw_intra = 20
graph.tree.bw_inter = 24
graph.tree.type_intra = NVL
graph.tree.type_inter = PIX
graph.nvls_tree.channels = 16
graph.nvls_tree.bw_intra = 30
graph.nvls_tree.bw_inter = 24
graph.nvls_tree.type_intra = NVL
graph.nvls_tree.type_inter = PIX

truth.launch_us = 5
truth.intra.link_bw = 370
truth.intra.channel_bw.ll = 7
truth.intra.channel_bw.ll128 = 19
truth.intra.channel_bw.simple = 22
truth.intra.step_us.ll = 0.45
truth.intra.step_us.ll128 = 0.8
truth.intra.step_us.simple = 2.0
truth.intra.buffer = 32M
truth.intra.congestion = 0.03
truth.net.link_bw = 48
truth.net.channel_bw.ll = 2.2
truth.net.channel_bw.ll128 = 7
truth.net.channel_bw.simple = 9
truth.net.step_us.ll = 2.5
truth.net.step_us.ll128 = 3.5
truth.net.step_us.simple = 7
truth.net.buffer = 4M
truth.net.congestion = 0.08
truth.tree_bw = 1.0
truth.nvls_bw = 470
truth.nvls_step_us = 10
truth.ll128_congestion = 1.5
truth.congestion_bw = 0.6
truth.congestion_latency = 3
noise.sigma = 0.03
