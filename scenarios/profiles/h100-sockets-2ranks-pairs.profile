# The GPU test machine as measured (docs/results/gpu): one H100 shared by 2 ranks through MPS, each
# rank its own "node" through a distinct NCCL_HOSTID, talking over NCCL's socket transport on loopback.
# NCCL 2.28.9 sees 2 nodes of 1 rank: PAT is enabled, LL128 is not.
# NCCL's side is calibrated: with the graph bandwidth at 0.8 GB/s the simulated NCCL chooses what the
# real one chose at every measured size (ring/LL with 1 channel up to 4 KiB, 2 channels at 16 KiB,
# ring/Simple with 2 channels from 64 KiB). The truth side is the sockets model fitted by
# tools/calibrate_profile.py (median |log error| against the pooled measurements 0.35 -> 0.13); the `-replay` profile replaces it with
# the measurements themselves (bench/gpu/replay_profile.py).
name = h100-sockets-2ranks-pairs
description = the measured latencies of docs/results/gpu/4-side-by-side-r10-warm, with the ratios between actions of 9 pairs runs, replayed (base: h100-sockets-2ranks.profile)
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
# Single slow calls, from run 10's traces (`python3 bench/gpu/summarize.py
# docs/results/gpu/10-leftover-learn-pairs-r6`, section "Single slow calls": 2.23% of calls over twice their
# group's median, 0.72% over 3x): a spike multiplies a call by 1 to 3.5 (uniform) with probability 0.037,
# which gives 2.2% over 2x and 0.74% over 3x. The GPU's are heavier at 1 KiB (7.5% over 2x) and lighter at
# 64 KiB-16 MiB (0.5-2.1%); the simulator's spikes do not depend on size. (Run 10's 1 KiB calls over 10x,
# 1.9%, were each process's first call of a collective, which the learner skips; summarize.py leaves them
# out since: 2.2% and 0.65% over 2x and 3x, 0.02% over 10x.)
noise.spike_probability = 0.037
noise.spike_scale = 3.5
# Bursts of slow calls, from the learning traces of runs 14-16 (`python3 bench/gpu/summarize.py
# docs/results/gpu/<run>`, section "Bursts of slow calls": runs of 3 calls or more of one cell, each 2.5x its
# group's median or more): 0, 42 and 9 bursts in 20,790, 38,280 and 20,460 calls, one in 1,560 pooled
# (0.00064); 3 to 12 calls long, mean 6.0 (3 + floor(10 u^2) has mean 5.9); each call 2.6-10.3x (deciles;
# mean 6.0), which burst_scale / 4 to burst_scale, uniform, plays with a mean of 6.25. Every action and rank
# alike: a learner can book one as an action's readings, and Agent-1 raises an onset a few calls into it.
noise.burst_probability = 0.00064
noise.burst_calls = 12
noise.burst_scale = 10
# A call launched while a larger one still runs waits in its kernel for that call's tail: in run 14's
# learning trace (`python3 bench/gpu/summarize.py docs/results/gpu/14-warm-learn-trace-pairs-r6`, "Calls
# right after another cell's") a 1 KiB call right after a 64 MiB one spans 8-42x its usual, by 2.2-4.4% of
# the 64 MiB call's span (median over about 60 calls each of AllReduce, AllGather and ReduceScatter). A
# first call of a run after a smaller call waits 0.4-1.3 of that call's span there, which one share does not
# fit; this one is the larger call's.
noise.tail_share = 0.03
# After a pause the ranks resume apart, and the next call waits in its kernel for the peer: in run 20's
# learning trace (`python3 bench/gpu/summarize.py docs/results/gpu/20-h200-cold-learn-trace`, "Calls after a
# host pause") the call after collbench's check of a size's first result spans 1.09-1.28x the same action's
# back-to-back calls at 256 KiB-64 MiB (median 1.14) and 1.22-2.30x at 1-4 KiB (run 15: 1.06-1.24x and
# 1.29-2.48x). The pause's 3% tail above, 8 us and 0.10 of the call give 1.13x at 4 MiB and up, 1.2x at
# 256 KiB and 1.5-1.6x at 1-4 KiB (more than the GPU's 1.02-1.25x at 16-64 KiB); every action alike.
noise.pause_skew_us = 8
noise.pause_share = 0.10
# Work each action leaves behind its kernel over sockets, measured in one run: the `leftover` lines of
# `python3 bench/gpu/summarize.py docs/results/gpu/9-stream-time-learn-pairs-r6` (section "A replay profile's
# leftover lines"), pasted. `later`: the share of a call's stream time (its kernel start to the next's, the
# next call waiting) beyond its kernel's span, mean and coefficient of variation over a block's steady calls,
# per collective and size (interpolated in log2 size between them). Every action leaves a kernel-to-kernel
# gap at small sizes (0.05-0.30 up to 64 KiB, ring/LL's the largest); tree on 2 channels leaves 0.40-0.68
# up to 16 MiB (LL: up to 256 KiB) and its next kernel starts that much later. `longer`: after tree on
# 1 channel, NCCL's next kernel runs longer by that share of tree's call (median over 64 KiB-64 MiB).
leftover = pat/simple/ch=1 later 0.19 spread 0.39 at allgather 1024
leftover = pat/simple/ch=1 later 0.16 spread 0.35 at allgather 4096
leftover = pat/simple/ch=1 later 0.17 spread 0.36 at allgather 16384
leftover = pat/simple/ch=1 later 0.10 spread 0.25 at allgather 65536
leftover = pat/simple/ch=1 later 0.05 spread 0.37 at allgather 262144
leftover = pat/simple/ch=1 later 0.02 spread 0.39 at allgather 1048576
leftover = pat/simple/ch=1 later 0.00 at allgather 4194304
leftover = pat/simple/ch=1 later 0.13 spread 0.36 at reducescatter 1024
leftover = pat/simple/ch=1 later 0.15 spread 0.42 at reducescatter 4096
leftover = pat/simple/ch=1 later 0.15 spread 0.44 at reducescatter 16384
leftover = pat/simple/ch=1 later 0.11 spread 0.48 at reducescatter 65536
leftover = pat/simple/ch=1 later 0.04 spread 0.19 at reducescatter 262144
leftover = pat/simple/ch=1 later 0.01 spread 0.23 at reducescatter 1048576
leftover = pat/simple/ch=1 later 0.01 spread 0.69 at reducescatter 4194304
leftover = pat/simple/ch=1 later 0.00 at reducescatter 16777216
leftover = pat/simple/ch=2 later 0.10 spread 0.67 at allgather 65536
leftover = pat/simple/ch=2 later 0.06 spread 0.40 at allgather 262144
leftover = pat/simple/ch=2 later 0.02 spread 0.42 at allgather 1048576
leftover = pat/simple/ch=2 later 0.00 at allgather 4194304
leftover = pat/simple/ch=2 later 0.11 spread 0.48 at reducescatter 65536
leftover = pat/simple/ch=2 later 0.06 spread 0.32 at reducescatter 262144
leftover = pat/simple/ch=2 later 0.02 spread 0.33 at reducescatter 1048576
leftover = pat/simple/ch=2 later 0.01 spread 0.29 at reducescatter 4194304
leftover = pat/simple/ch=2 later 0.00 at reducescatter 16777216
leftover = ring/ll/ch=1 later 0.24 spread 0.49 at allgather 1024
leftover = ring/ll/ch=1 later 0.30 spread 0.58 at allgather 4096
leftover = ring/ll/ch=1 later 0.30 spread 0.47 at allgather 16384
leftover = ring/ll/ch=1 later 0.11 spread 0.50 at allgather 65536
leftover = ring/ll/ch=1 later 0.03 spread 0.25 at allgather 262144
leftover = ring/ll/ch=1 later 0.01 spread 0.20 at allgather 1048576
leftover = ring/ll/ch=1 later 0.00 at allgather 4194304
leftover = ring/ll/ch=1 later 0.13 spread 0.27 at allreduce 1024
leftover = ring/ll/ch=1 later 0.12 spread 0.22 at allreduce 4096
leftover = ring/ll/ch=1 later 0.10 spread 0.25 at allreduce 16384
leftover = ring/ll/ch=1 later 0.05 spread 0.25 at allreduce 65536
leftover = ring/ll/ch=1 later 0.02 spread 0.18 at allreduce 262144
leftover = ring/ll/ch=1 later 0.00 at allreduce 1048576
leftover = ring/ll/ch=1 later 0.22 spread 0.51 at reducescatter 1024
leftover = ring/ll/ch=1 later 0.23 spread 0.47 at reducescatter 4096
leftover = ring/ll/ch=1 later 0.23 spread 0.60 at reducescatter 16384
leftover = ring/ll/ch=1 later 0.10 spread 0.21 at reducescatter 65536
leftover = ring/ll/ch=1 later 0.03 spread 0.20 at reducescatter 262144
leftover = ring/ll/ch=1 later 0.01 spread 0.17 at reducescatter 1048576
leftover = ring/ll/ch=1 later 0.00 at reducescatter 4194304
leftover = ring/ll/ch=2 later 0.14 spread 0.40 at allgather 16384
leftover = ring/ll/ch=2 later 0.12 spread 0.71 at allgather 65536
leftover = ring/ll/ch=2 later 0.03 spread 0.29 at allgather 262144
leftover = ring/ll/ch=2 later 0.01 spread 0.18 at allgather 1048576
leftover = ring/ll/ch=2 later 0.00 at allgather 4194304
leftover = ring/ll/ch=2 later 0.06 spread 0.25 at allreduce 4096
leftover = ring/ll/ch=2 later 0.07 spread 0.23 at allreduce 16384
leftover = ring/ll/ch=2 later 0.05 spread 0.37 at allreduce 65536
leftover = ring/ll/ch=2 later 0.01 spread 0.20 at allreduce 262144
leftover = ring/ll/ch=2 later 0.00 at allreduce 1048576
leftover = ring/ll/ch=2 later 0.13 spread 0.40 at reducescatter 16384
leftover = ring/ll/ch=2 later 0.09 spread 0.29 at reducescatter 65536
leftover = ring/ll/ch=2 later 0.03 spread 0.23 at reducescatter 262144
leftover = ring/ll/ch=2 later 0.01 spread 0.30 at reducescatter 1048576
leftover = ring/ll/ch=2 later 0.00 at reducescatter 4194304
leftover = ring/simple/ch=1 later 0.09 spread 0.28 at allgather 1024
leftover = ring/simple/ch=1 later 0.11 spread 0.40 at allgather 4096
leftover = ring/simple/ch=1 later 0.09 spread 0.23 at allgather 16384
leftover = ring/simple/ch=1 later 0.09 spread 0.39 at allgather 65536
leftover = ring/simple/ch=1 later 0.05 spread 0.31 at allgather 262144
leftover = ring/simple/ch=1 later 0.02 spread 0.55 at allgather 1048576
leftover = ring/simple/ch=1 later 0.01 spread 0.46 at allgather 4194304
leftover = ring/simple/ch=1 later 0.00 at allgather 16777216
leftover = ring/simple/ch=1 later 0.05 spread 0.19 at allreduce 1024
leftover = ring/simple/ch=1 later 0.05 spread 0.21 at allreduce 4096
leftover = ring/simple/ch=1 later 0.05 spread 0.21 at allreduce 16384
leftover = ring/simple/ch=1 later 0.03 spread 0.22 at allreduce 65536
leftover = ring/simple/ch=1 later 0.02 spread 0.17 at allreduce 262144
leftover = ring/simple/ch=1 later 0.01 spread 0.30 at allreduce 1048576
leftover = ring/simple/ch=1 later 0.00 at allreduce 4194304
leftover = ring/simple/ch=1 later 0.09 spread 0.23 at reducescatter 1024
leftover = ring/simple/ch=1 later 0.10 spread 0.35 at reducescatter 4096
leftover = ring/simple/ch=1 later 0.10 spread 0.46 at reducescatter 16384
leftover = ring/simple/ch=1 later 0.08 spread 0.24 at reducescatter 65536
leftover = ring/simple/ch=1 later 0.05 spread 0.30 at reducescatter 262144
leftover = ring/simple/ch=1 later 0.02 spread 0.32 at reducescatter 1048576
leftover = ring/simple/ch=1 later 0.01 spread 0.36 at reducescatter 4194304
leftover = ring/simple/ch=1 later 0.00 at reducescatter 16777216
leftover = ring/simple/ch=2 later 0.06 spread 0.22 at allgather 65536
leftover = ring/simple/ch=2 later 0.04 spread 0.20 at allgather 262144
leftover = ring/simple/ch=2 later 0.02 spread 0.30 at allgather 1048576
leftover = ring/simple/ch=2 later 0.01 spread 0.44 at allgather 4194304
leftover = ring/simple/ch=2 later 0.00 at allgather 16777216
leftover = ring/simple/ch=2 later 0.03 spread 0.19 at allreduce 16384
leftover = ring/simple/ch=2 later 0.03 spread 0.16 at allreduce 65536
leftover = ring/simple/ch=2 later 0.02 spread 0.21 at allreduce 262144
leftover = ring/simple/ch=2 later 0.01 spread 0.38 at allreduce 1048576
leftover = ring/simple/ch=2 later 0.00 at allreduce 4194304
leftover = ring/simple/ch=2 later 0.06 spread 0.27 at reducescatter 65536
leftover = ring/simple/ch=2 later 0.04 spread 0.31 at reducescatter 262144
leftover = ring/simple/ch=2 later 0.02 spread 0.25 at reducescatter 1048576
leftover = ring/simple/ch=2 later 0.01 spread 0.22 at reducescatter 4194304
leftover = ring/simple/ch=2 later 0.00 at reducescatter 16777216
leftover = tree/ll/ch=1 later 0.15 spread 0.26 at allreduce 1024
leftover = tree/ll/ch=1 later 0.14 spread 0.16 at allreduce 4096
leftover = tree/ll/ch=1 later 0.10 spread 0.19 at allreduce 16384
leftover = tree/ll/ch=1 later 0.04 spread 0.13 at allreduce 65536
leftover = tree/ll/ch=1 later 0.02 spread 0.22 at allreduce 262144
leftover = tree/ll/ch=1 later 0.00 at allreduce 1048576
leftover = tree/ll/ch=2 later 0.53 spread 0.43 at allreduce 4096
leftover = tree/ll/ch=2 later 0.58 spread 0.45 at allreduce 16384
leftover = tree/ll/ch=2 later 0.68 spread 0.40 at allreduce 65536
leftover = tree/ll/ch=2 later 0.59 spread 0.37 at allreduce 262144
leftover = tree/ll/ch=2 later 0.04 spread 0.78 at allreduce 1048576
leftover = tree/ll/ch=2 later 0.03 spread 0.63 at allreduce 4194304
leftover = tree/ll/ch=2 later 0.01 spread 1.06 at allreduce 16777216
leftover = tree/ll/ch=2 later 0.01 spread 0.82 at allreduce 67108864
leftover = tree/simple/ch=1 later 0.08 spread 0.26 at allreduce 1024
leftover = tree/simple/ch=1 later 0.09 spread 0.19 at allreduce 4096
leftover = tree/simple/ch=1 later 0.08 spread 0.15 at allreduce 16384
leftover = tree/simple/ch=1 later 0.05 spread 0.15 at allreduce 65536
leftover = tree/simple/ch=1 later 0.03 spread 0.33 at allreduce 262144
leftover = tree/simple/ch=1 later 0.01 spread 0.31 at allreduce 1048576
leftover = tree/simple/ch=1 later 0.00 at allreduce 4194304
leftover = tree/simple/ch=2 later 0.46 spread 0.23 at allreduce 16384
leftover = tree/simple/ch=2 later 0.61 spread 0.24 at allreduce 65536
leftover = tree/simple/ch=2 later 0.52 spread 0.25 at allreduce 262144
leftover = tree/simple/ch=2 later 0.52 spread 0.15 at allreduce 1048576
leftover = tree/simple/ch=2 later 0.40 spread 0.25 at allreduce 4194304
leftover = tree/simple/ch=2 later 0.42 spread 0.28 at allreduce 16777216
leftover = tree/simple/ch=2 later 0.06 spread 0.24 at allreduce 67108864
leftover = tree/ll/ch=1 longer 0.10
leftover = tree/simple/ch=1 longer 0.20
# Replayed measurements: docs/results/gpu/4-side-by-side-r10-warm/compare.csv, median over repetitions (bench/gpu/replay_profile.py).
# Ratios between actions at a size: the pairs of docs/results/gpu/8-pairs-blocks-r8, docs/results/gpu/10-leftover-learn-pairs-r6, docs/results/gpu/13-first-calls-learn-pairs-r6, docs/results/gpu/14-warm-learn-trace-pairs-r6, docs/results/gpu/15-cold-learn-trace-pairs-r6, docs/results/gpu/16-warm-learn-trace-pairs-r6, docs/results/gpu/17-pairs-again-r4, docs/results/gpu/18-cold-learn-trace-pairs-r6, docs/results/gpu/19-warm-learn-trace-pairs-r8 (153 points), scaled by NCCL's own choice in compare.csv.
noise.sigma = 0.113
# Per-call noise, runs' levels and alternation by collective and size: docs/results/gpu/15-cold-learn-trace-pairs-r6/learn-trace/trace-0.csv.gz (rank 0; bench/gpu/replay_profile.py).
noise.sigma_at = allgather 1024 0.165
noise.sigma_at = allgather 4096 0.134
noise.sigma_at = allgather 16384 0.095
noise.sigma_at = allgather 65536 0.073
noise.sigma_at = allgather 262144 0.094
noise.sigma_at = allgather 1048576 0.079
noise.sigma_at = allgather 4194304 0.060
noise.sigma_at = allgather 16777216 0.060
noise.sigma_at = allreduce 1024 0.120
noise.sigma_at = allreduce 4096 0.058
noise.sigma_at = allreduce 16384 0.057
noise.sigma_at = allreduce 65536 0.089
noise.sigma_at = allreduce 262144 0.098
noise.sigma_at = allreduce 1048576 0.064
noise.sigma_at = allreduce 4194304 0.060
noise.sigma_at = allreduce 16777216 0.046
noise.sigma_at = reducescatter 1024 0.195
noise.sigma_at = reducescatter 4096 0.133
noise.sigma_at = reducescatter 16384 0.104
noise.sigma_at = reducescatter 65536 0.139
noise.sigma_at = reducescatter 262144 0.102
noise.sigma_at = reducescatter 1048576 0.076
noise.sigma_at = reducescatter 4194304 0.062
noise.sigma_at = reducescatter 16777216 0.062
noise.level_at = allgather 1024 0.228
noise.level_at = allgather 4096 0.165
noise.level_at = allgather 16384 0.233
noise.level_at = allgather 65536 0.126
noise.level_at = allgather 262144 0.082
noise.level_at = allgather 1048576 0.085
noise.level_at = allgather 4194304 0.086
noise.level_at = allgather 16777216 0.122
noise.level_at = allreduce 1024 0.106
noise.level_at = allreduce 4096 0.094
noise.level_at = allreduce 16384 0.076
noise.level_at = allreduce 65536 0.409
noise.level_at = allreduce 262144 0.090
noise.level_at = allreduce 1048576 0.085
noise.level_at = allreduce 4194304 0.093
noise.level_at = allreduce 16777216 0.088
noise.level_at = reducescatter 1024 0.163
noise.level_at = reducescatter 4096 0.223
noise.level_at = reducescatter 16384 0.164
noise.level_at = reducescatter 65536 0.121
noise.level_at = reducescatter 262144 0.091
noise.level_at = reducescatter 1048576 0.084
noise.level_at = reducescatter 4194304 0.095
noise.level_at = reducescatter 16777216 0.112
noise.alternation_at = allgather 1024 pat/simple 0.310
noise.alternation_at = allgather 4096 pat/simple 0.332
noise.alternation_at = allgather 16384 pat/simple 0.243
noise.alternation_at = allgather 65536 pat/simple 0.270
noise.alternation_at = allgather 262144 pat/simple 0.019
noise.alternation_at = allgather 1048576 pat/simple 0.000
noise.alternation_at = allgather 4194304 pat/simple 0.000
noise.alternation_at = allgather 16777216 pat/simple 0.000
noise.alternation_at = allgather 67108864 pat/simple 0.000
noise.alternation_at = allgather 1024 ring/ll 0.648
noise.alternation_at = allgather 4096 ring/ll 0.707
noise.alternation_at = allgather 16384 ring/ll 0.446
noise.alternation_at = allgather 65536 ring/ll 0.271
noise.alternation_at = allgather 262144 ring/ll 0.014
noise.alternation_at = allgather 1048576 ring/ll 0.000
noise.alternation_at = allgather 4194304 ring/ll 0.000
noise.alternation_at = allgather 16777216 ring/ll 0.000
noise.alternation_at = allgather 67108864 ring/ll 0.000
noise.alternation_at = allgather 1024 ring/simple 0.233
noise.alternation_at = allgather 4096 ring/simple 0.090
noise.alternation_at = allgather 16384 ring/simple 0.135
noise.alternation_at = allgather 65536 ring/simple 0.029
noise.alternation_at = allgather 262144 ring/simple 0.069
noise.alternation_at = allgather 1048576 ring/simple 0.029
noise.alternation_at = allgather 4194304 ring/simple 0.015
noise.alternation_at = allgather 16777216 ring/simple 0.000
noise.alternation_at = allgather 67108864 ring/simple 0.000
noise.alternation_at = allreduce 1024 ring/ll 0.025
noise.alternation_at = allreduce 4096 ring/ll 0.000
noise.alternation_at = allreduce 16384 ring/ll 0.020
noise.alternation_at = allreduce 65536 ring/ll 0.000
noise.alternation_at = allreduce 262144 ring/ll 0.000
noise.alternation_at = allreduce 1048576 ring/ll 0.000
noise.alternation_at = allreduce 4194304 ring/ll 0.000
noise.alternation_at = allreduce 16777216 ring/ll 0.000
noise.alternation_at = allreduce 67108864 ring/ll 0.000
noise.alternation_at = allreduce 1024 ring/simple 0.000
noise.alternation_at = allreduce 4096 ring/simple 0.000
noise.alternation_at = allreduce 16384 ring/simple 0.000
noise.alternation_at = allreduce 65536 ring/simple 0.000
noise.alternation_at = allreduce 262144 ring/simple 0.000
noise.alternation_at = allreduce 1048576 ring/simple 0.022
noise.alternation_at = allreduce 4194304 ring/simple 0.017
noise.alternation_at = allreduce 16777216 ring/simple 0.000
noise.alternation_at = allreduce 67108864 ring/simple 0.000
noise.alternation_at = allreduce 1024 tree/ll 0.115
noise.alternation_at = allreduce 4096 tree/ll 0.021
noise.alternation_at = allreduce 16384 tree/ll 0.000
noise.alternation_at = allreduce 65536 tree/ll 0.000
noise.alternation_at = allreduce 262144 tree/ll 0.000
noise.alternation_at = allreduce 1048576 tree/ll 0.000
noise.alternation_at = allreduce 4194304 tree/ll 0.000
noise.alternation_at = allreduce 16777216 tree/ll 0.000
noise.alternation_at = allreduce 67108864 tree/ll 0.038
noise.alternation_at = allreduce 1024 tree/simple 0.092
noise.alternation_at = allreduce 4096 tree/simple 0.000
noise.alternation_at = allreduce 16384 tree/simple 0.000
noise.alternation_at = allreduce 65536 tree/simple 0.000
noise.alternation_at = allreduce 262144 tree/simple 0.000
noise.alternation_at = allreduce 1048576 tree/simple 0.000
noise.alternation_at = allreduce 4194304 tree/simple 0.000
noise.alternation_at = allreduce 16777216 tree/simple 0.000
noise.alternation_at = allreduce 67108864 tree/simple 0.000
noise.alternation_at = reducescatter 1024 pat/simple 0.323
noise.alternation_at = reducescatter 4096 pat/simple 0.356
noise.alternation_at = reducescatter 16384 pat/simple 0.375
noise.alternation_at = reducescatter 65536 pat/simple 0.201
noise.alternation_at = reducescatter 262144 pat/simple 0.000
noise.alternation_at = reducescatter 1048576 pat/simple 0.000
noise.alternation_at = reducescatter 4194304 pat/simple 0.000
noise.alternation_at = reducescatter 16777216 pat/simple 0.000
noise.alternation_at = reducescatter 67108864 pat/simple 0.000
noise.alternation_at = reducescatter 1024 ring/ll 0.611
noise.alternation_at = reducescatter 4096 ring/ll 0.693
noise.alternation_at = reducescatter 16384 ring/ll 0.422
noise.alternation_at = reducescatter 65536 ring/ll 0.344
noise.alternation_at = reducescatter 262144 ring/ll 0.000
noise.alternation_at = reducescatter 1048576 ring/ll 0.000
noise.alternation_at = reducescatter 4194304 ring/ll 0.000
noise.alternation_at = reducescatter 16777216 ring/ll 0.000
noise.alternation_at = reducescatter 67108864 ring/ll 0.000
noise.alternation_at = reducescatter 1024 ring/simple 0.272
noise.alternation_at = reducescatter 4096 ring/simple 0.127
noise.alternation_at = reducescatter 16384 ring/simple 0.174
noise.alternation_at = reducescatter 65536 ring/simple 0.059
noise.alternation_at = reducescatter 262144 ring/simple 0.079
noise.alternation_at = reducescatter 1048576 ring/simple 0.027
noise.alternation_at = reducescatter 4194304 ring/simple 0.000
noise.alternation_at = reducescatter 16777216 ring/simple 0.012
noise.alternation_at = reducescatter 67108864 ring/simple 0.000
noise.drift_sigma = 0.060
noise.drift_calls = 1000
measured = allgather 1024 pat/simple/ch=1 40.38
measured = allgather 4096 pat/simple/ch=1 42.95
measured = allgather 16384 pat/simple/ch=1 42.17
measured = allgather 65536 pat/simple/ch=1 54.13
measured = allgather 262144 pat/simple/ch=1 126.28
measured = allgather 1048576 pat/simple/ch=1 442.51
measured = allgather 4194304 pat/simple/ch=1 1352.62
measured = allgather 16777216 pat/simple/ch=1 4153.81
measured = allgather 67108864 pat/simple/ch=1 17482.88
measured = allgather 1024 pat/simple/ch=2 41.02
measured = allgather 4096 pat/simple/ch=2 43.33
measured = allgather 16384 pat/simple/ch=2 43.01
measured = allgather 65536 pat/simple/ch=2 70.97
measured = allgather 262144 pat/simple/ch=2 117.95
measured = allgather 1048576 pat/simple/ch=2 380.32
measured = allgather 4194304 pat/simple/ch=2 1485.62
measured = allgather 16777216 pat/simple/ch=2 4114.31
measured = allgather 67108864 pat/simple/ch=2 15448.04
measured = allgather 1024 ring/ll/ch=1 29.86
measured = allgather 4096 ring/ll/ch=1 33.43
measured = allgather 16384 ring/ll/ch=1 35.31
measured = allgather 65536 ring/ll/ch=1 57.85
measured = allgather 262144 ring/ll/ch=1 206.12
measured = allgather 1048576 ring/ll/ch=1 772.69
measured = allgather 4194304 ring/ll/ch=1 3076.86
measured = allgather 16777216 ring/ll/ch=1 12344.59
measured = allgather 67108864 ring/ll/ch=1 53873.06
measured = allgather 1024 ring/ll/ch=2 28.95
measured = allgather 4096 ring/ll/ch=2 33.49
measured = allgather 16384 ring/ll/ch=2 49.50
measured = allgather 65536 ring/ll/ch=2 67.41
measured = allgather 262144 ring/ll/ch=2 196.25
measured = allgather 1048576 ring/ll/ch=2 722.30
measured = allgather 4194304 ring/ll/ch=2 2863.84
measured = allgather 16777216 ring/ll/ch=2 11452.76
measured = allgather 67108864 ring/ll/ch=2 49360.98
measured = allgather 1024 ring/simple/ch=1 54.69
measured = allgather 4096 ring/simple/ch=1 63.84
measured = allgather 16384 ring/simple/ch=1 59.90
measured = allgather 65536 ring/simple/ch=1 70.69
measured = allgather 262144 ring/simple/ch=1 119.13
measured = allgather 1048576 ring/simple/ch=1 268.94
measured = allgather 4194304 ring/simple/ch=1 955.80
measured = allgather 16777216 ring/simple/ch=1 3527.89
measured = allgather 67108864 ring/simple/ch=1 14627.74
measured = allgather 1024 ring/simple/ch=2 55.00
measured = allgather 4096 ring/simple/ch=2 59.75
measured = allgather 16384 ring/simple/ch=2 57.92
measured = allgather 65536 ring/simple/ch=2 95.03
measured = allgather 262144 ring/simple/ch=2 145.50
measured = allgather 1048576 ring/simple/ch=2 300.96
measured = allgather 4194304 ring/simple/ch=2 914.53
measured = allgather 16777216 ring/simple/ch=2 3372.82
measured = allgather 67108864 ring/simple/ch=2 13267.34
measured = allreduce 1024 ring/ll/ch=1 45.91
measured = allreduce 4096 ring/ll/ch=1 48.72
measured = allreduce 16384 ring/ll/ch=1 67.08
measured = allreduce 65536 ring/ll/ch=1 104.44
measured = allreduce 262144 ring/ll/ch=1 399.47
measured = allreduce 1048576 ring/ll/ch=1 1650.28
measured = allreduce 4194304 ring/ll/ch=1 6147.77
measured = allreduce 16777216 ring/ll/ch=1 26301.93
measured = allreduce 67108864 ring/ll/ch=1 104983.11
measured = allreduce 1024 ring/ll/ch=2 45.62
measured = allreduce 4096 ring/ll/ch=2 71.39
measured = allreduce 16384 ring/ll/ch=2 95.35
measured = allreduce 65536 ring/ll/ch=2 133.74
measured = allreduce 262144 ring/ll/ch=2 379.84
measured = allreduce 1048576 ring/ll/ch=2 1529.53
measured = allreduce 4194304 ring/ll/ch=2 5655.63
measured = allreduce 16777216 ring/ll/ch=2 24403.62
measured = allreduce 67108864 ring/ll/ch=2 96809.23
measured = allreduce 1024 ring/simple/ch=1 85.47
measured = allreduce 4096 ring/simple/ch=1 84.51
measured = allreduce 16384 ring/simple/ch=1 100.06
measured = allreduce 65536 ring/simple/ch=1 115.28
measured = allreduce 262144 ring/simple/ch=1 205.23
measured = allreduce 1048576 ring/simple/ch=1 503.86
measured = allreduce 4194304 ring/simple/ch=1 1699.17
measured = allreduce 16777216 ring/simple/ch=1 6758.18
measured = allreduce 67108864 ring/simple/ch=1 26809.35
measured = allreduce 1024 ring/simple/ch=2 85.12
measured = allreduce 4096 ring/simple/ch=2 83.48
measured = allreduce 16384 ring/simple/ch=2 149.70
measured = allreduce 65536 ring/simple/ch=2 161.00
measured = allreduce 262144 ring/simple/ch=2 240.49
measured = allreduce 1048576 ring/simple/ch=2 555.71
measured = allreduce 4194304 ring/simple/ch=2 1629.19
measured = allreduce 16777216 ring/simple/ch=2 6434.58
measured = allreduce 67108864 ring/simple/ch=2 24897.15
measured = allreduce 1024 tree/ll/ch=1 36.01
measured = allreduce 4096 tree/ll/ch=1 42.60
measured = allreduce 16384 tree/ll/ch=1 69.52
measured = allreduce 65536 tree/ll/ch=1 151.96
measured = allreduce 262144 tree/ll/ch=1 471.22
measured = allreduce 1048576 tree/ll/ch=1 1645.36
measured = allreduce 4194304 tree/ll/ch=1 5697.68
measured = allreduce 16777216 tree/ll/ch=1 22872.62
measured = allreduce 67108864 tree/ll/ch=1 91460.93
measured = allreduce 1024 tree/ll/ch=2 36.49
measured = allreduce 4096 tree/ll/ch=2 48.99
measured = allreduce 16384 tree/ll/ch=2 69.45
measured = allreduce 65536 tree/ll/ch=2 125.49
measured = allreduce 262144 tree/ll/ch=2 384.27
measured = allreduce 1048576 tree/ll/ch=2 1519.48
measured = allreduce 4194304 tree/ll/ch=2 5480.40
measured = allreduce 16777216 tree/ll/ch=2 23040.84
measured = allreduce 67108864 tree/ll/ch=2 91106.44
measured = allreduce 1024 tree/simple/ch=1 57.51
measured = allreduce 4096 tree/simple/ch=1 57.50
measured = allreduce 16384 tree/simple/ch=1 71.53
measured = allreduce 65536 tree/simple/ch=1 106.65
measured = allreduce 262144 tree/simple/ch=1 217.86
measured = allreduce 1048576 tree/simple/ch=1 584.48
measured = allreduce 4194304 tree/simple/ch=1 1795.64
measured = allreduce 16777216 tree/simple/ch=1 7351.00
measured = allreduce 67108864 tree/simple/ch=1 27773.87
measured = allreduce 1024 tree/simple/ch=2 57.36
measured = allreduce 4096 tree/simple/ch=2 55.74
measured = allreduce 16384 tree/simple/ch=2 76.68
measured = allreduce 65536 tree/simple/ch=2 94.27
measured = allreduce 262144 tree/simple/ch=2 187.88
measured = allreduce 1048576 tree/simple/ch=2 551.03
measured = allreduce 4194304 tree/simple/ch=2 1718.60
measured = allreduce 16777216 tree/simple/ch=2 7173.09
measured = allreduce 67108864 tree/simple/ch=2 27783.31
measured = reducescatter 1024 pat/simple/ch=1 45.19
measured = reducescatter 4096 pat/simple/ch=1 43.17
measured = reducescatter 16384 pat/simple/ch=1 44.23
measured = reducescatter 65536 pat/simple/ch=1 54.66
measured = reducescatter 262144 pat/simple/ch=1 122.91
measured = reducescatter 1048576 pat/simple/ch=1 441.84
measured = reducescatter 4194304 pat/simple/ch=1 1135.97
measured = reducescatter 16777216 pat/simple/ch=1 4174.67
measured = reducescatter 67108864 pat/simple/ch=1 16278.14
measured = reducescatter 1024 pat/simple/ch=2 45.40
measured = reducescatter 4096 pat/simple/ch=2 46.12
measured = reducescatter 16384 pat/simple/ch=2 46.10
measured = reducescatter 65536 pat/simple/ch=2 69.40
measured = reducescatter 262144 pat/simple/ch=2 117.52
measured = reducescatter 1048576 pat/simple/ch=2 385.84
measured = reducescatter 4194304 pat/simple/ch=2 1187.28
measured = reducescatter 16777216 pat/simple/ch=2 3841.10
measured = reducescatter 67108864 pat/simple/ch=2 14980.40
measured = reducescatter 1024 ring/ll/ch=1 32.81
measured = reducescatter 4096 ring/ll/ch=1 33.48
measured = reducescatter 16384 ring/ll/ch=1 37.70
measured = reducescatter 65536 ring/ll/ch=1 56.96
measured = reducescatter 262144 ring/ll/ch=1 205.89
measured = reducescatter 1048576 ring/ll/ch=1 795.24
measured = reducescatter 4194304 ring/ll/ch=1 3141.94
measured = reducescatter 16777216 ring/ll/ch=1 12505.28
measured = reducescatter 67108864 ring/ll/ch=1 51022.93
measured = reducescatter 1024 ring/ll/ch=2 32.53
measured = reducescatter 4096 ring/ll/ch=2 33.14
measured = reducescatter 16384 ring/ll/ch=2 49.81
measured = reducescatter 65536 ring/ll/ch=2 68.10
measured = reducescatter 262144 ring/ll/ch=2 196.43
measured = reducescatter 1048576 ring/ll/ch=2 723.95
measured = reducescatter 4194304 ring/ll/ch=2 2902.20
measured = reducescatter 16777216 ring/ll/ch=2 11653.77
measured = reducescatter 67108864 ring/ll/ch=2 46677.62
measured = reducescatter 1024 ring/simple/ch=1 61.72
measured = reducescatter 4096 ring/simple/ch=1 61.26
measured = reducescatter 16384 ring/simple/ch=1 60.17
measured = reducescatter 65536 ring/simple/ch=1 69.84
measured = reducescatter 262144 ring/simple/ch=1 120.88
measured = reducescatter 1048576 ring/simple/ch=1 273.49
measured = reducescatter 4194304 ring/simple/ch=1 1002.90
measured = reducescatter 16777216 ring/simple/ch=1 3642.25
measured = reducescatter 67108864 ring/simple/ch=1 13967.30
measured = reducescatter 1024 ring/simple/ch=2 64.98
measured = reducescatter 4096 ring/simple/ch=2 62.39
measured = reducescatter 16384 ring/simple/ch=2 59.74
measured = reducescatter 65536 ring/simple/ch=2 94.62
measured = reducescatter 262144 ring/simple/ch=2 141.22
measured = reducescatter 1048576 ring/simple/ch=2 296.91
measured = reducescatter 4194304 ring/simple/ch=2 942.39
measured = reducescatter 16777216 ring/simple/ch=2 3492.60
measured = reducescatter 67108864 ring/simple/ch=2 12371.70
