# The GPU test machine as measured (docs/results/gpu): one H100 shared by 2 ranks through MPS, each
# rank its own "node" through a distinct NCCL_HOSTID, talking over NCCL's socket transport on loopback.
# NCCL 2.28.9 sees 2 nodes of 1 rank: PAT is enabled, LL128 is not.
# NCCL's side is calibrated: with the graph bandwidth at 0.8 GB/s the simulated NCCL chooses what the
# real one chose at every measured size (ring/LL with 1 channel up to 4 KiB, 2 channels at 16 KiB,
# ring/Simple with 2 channels from 64 KiB). The truth side is the sockets model fitted by
# tools/calibrate_profile.py (median |log error| against the pooled measurements 0.35 -> 0.13); the `-replay` profile replaces it with
# the measurements themselves (bench/gpu/replay_profile.py).
name = h100-sockets-2ranks
description = H100, 2 ranks as 2 nodes over sockets on loopback (MPS), calibrated on docs/results/gpu
nodes = 2
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
# Work tree leaves behind its kernel over sockets (bench/gpu/summarize.py on docs/results/gpu/8-pairs-blocks-r8,
# runs in blocks): on 2 channels the rank-0 kernel span is 0.675 (Simple) and 0.697 (LL) of the call and the
# next kernel starts later; on 1 channel the next kernel runs longer, by 0.175 (Simple) and 0.064 (LL) of
# the call (0.199 and 0.096 in run 9).
# On 2 channels the share left varies from call to call (its span and what it leaves trade off): standard
# deviations 0.11 (Simple) and 0.25 (LL) of the stream time, medians over sizes in run 9's traces (summarize.py's
# `Work left behind, call to call` on docs/results/gpu/9-stream-time-learn-pairs-r6, where the mean shares are
# larger, 0.40-0.61 up to 16 MiB and 0.53-0.68): over the fractions above, spreads of 0.34 and 0.83.
leftover = tree/simple/ch=2 later 0.32 spread 0.34
leftover = tree/ll/ch=2 later 0.30 spread 0.83
leftover = tree/simple/ch=1 longer 0.18
leftover = tree/ll/ch=1 longer 0.08
