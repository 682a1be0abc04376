# The GPU test machine as measured (docs/results/gpu): one H100 shared by 2 ranks through MPS, each
# rank its own "node" through a distinct NCCL_HOSTID, talking over NCCL's socket transport on loopback.
# NCCL 2.28.9 sees 2 nodes of 1 rank: PAT is enabled, LL128 is not.
# NCCL's side is calibrated: with the graph bandwidth at 0.8 GB/s the simulated NCCL chooses what the
# real one chose at every measured size (ring/LL with 1 channel up to 4 KiB, 2 channels at 16 KiB,
# ring/Simple with 2 channels from 64 KiB). The truth side is the sockets model fitted by
# tools/calibrate_profile.py (median |log error| 0.23 -> 0.14); the `-replay` profile replaces it with
# the measurements themselves (bench/gpu/replay_profile.py).
name = h100-sockets-2ranks-replay
description = the measured latencies of docs/results/gpu/4-side-by-side-r10-warm replayed (base: h100-sockets-2ranks.profile)
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
noise.spike_probability = 0.002
# Replayed measurements: docs/results/gpu/4-side-by-side-r10-warm/compare.csv, median over repetitions (bench/gpu/replay_profile.py).
noise.sigma = 0.113
noise.drift_sigma = 0.061
noise.drift_calls = 1000
measured = allgather 1024 pat/simple/ch=1 40.42
measured = allgather 4096 pat/simple/ch=1 39.98
measured = allgather 16384 pat/simple/ch=1 43.59
measured = allgather 65536 pat/simple/ch=1 51.16
measured = allgather 262144 pat/simple/ch=1 119.20
measured = allgather 1048576 pat/simple/ch=1 438.31
measured = allgather 4194304 pat/simple/ch=1 1319.37
measured = allgather 16777216 pat/simple/ch=1 3953.90
measured = allgather 67108864 pat/simple/ch=1 15679.31
measured = allgather 1024 pat/simple/ch=4 41.30
measured = allgather 4096 pat/simple/ch=4 42.47
measured = allgather 16384 pat/simple/ch=4 40.70
measured = allgather 65536 pat/simple/ch=4 68.10
measured = allgather 262144 pat/simple/ch=4 113.90
measured = allgather 1048576 pat/simple/ch=4 370.87
measured = allgather 4194304 pat/simple/ch=4 1445.39
measured = allgather 16777216 pat/simple/ch=4 3897.90
measured = allgather 67108864 pat/simple/ch=4 13740.32
measured = allgather 1024 ring/ll/ch=1 35.33
measured = allgather 4096 ring/ll/ch=1 35.05
measured = allgather 16384 ring/ll/ch=1 36.15
measured = allgather 65536 ring/ll/ch=1 59.65
measured = allgather 262144 ring/ll/ch=1 196.74
measured = allgather 1048576 ring/ll/ch=1 751.02
measured = allgather 4194304 ring/ll/ch=1 3078.90
measured = allgather 16777216 ring/ll/ch=1 12185.83
measured = allgather 67108864 ring/ll/ch=1 50026.45
measured = allgather 1024 ring/ll/ch=2 28.84
measured = allgather 4096 ring/ll/ch=2 32.79
measured = allgather 16384 ring/ll/ch=2 49.50
measured = allgather 65536 ring/ll/ch=2 68.90
measured = allgather 262144 ring/ll/ch=2 196.11
measured = allgather 1048576 ring/ll/ch=2 723.42
measured = allgather 4194304 ring/ll/ch=2 2949.18
measured = allgather 16777216 ring/ll/ch=2 11670.60
measured = allgather 67108864 ring/ll/ch=2 47689.82
measured = allgather 1024 ring/ll/ch=8 28.65
measured = allgather 4096 ring/ll/ch=8 30.66
measured = allgather 16384 ring/ll/ch=8 50.30
measured = allgather 65536 ring/ll/ch=8 77.30
measured = allgather 262144 ring/ll/ch=8 195.98
measured = allgather 1048576 ring/ll/ch=8 753.10
measured = allgather 4194304 ring/ll/ch=8 2892.56
measured = allgather 16777216 ring/ll/ch=8 11567.22
measured = allgather 67108864 ring/ll/ch=8 46827.90
measured = allgather 1024 ring/simple/ch=1 56.68
measured = allgather 4096 ring/simple/ch=1 54.14
measured = allgather 16384 ring/simple/ch=1 53.34
measured = allgather 65536 ring/simple/ch=1 65.27
measured = allgather 262144 ring/simple/ch=1 114.95
measured = allgather 1048576 ring/simple/ch=1 270.01
measured = allgather 4194304 ring/simple/ch=1 908.34
measured = allgather 16777216 ring/simple/ch=1 3634.39
measured = allgather 67108864 ring/simple/ch=1 14795.25
measured = allgather 1024 ring/simple/ch=16 55.10
measured = allgather 4096 ring/simple/ch=16 54.54
measured = allgather 16384 ring/simple/ch=16 53.98
measured = allgather 65536 ring/simple/ch=16 93.87
measured = allgather 262144 ring/simple/ch=16 146.42
measured = allgather 1048576 ring/simple/ch=16 303.08
measured = allgather 4194304 ring/simple/ch=16 933.09
measured = allgather 16777216 ring/simple/ch=16 3373.20
measured = allgather 67108864 ring/simple/ch=16 12910.21
measured = allgather 1024 ring/simple/ch=2 53.62
measured = allgather 4096 ring/simple/ch=2 55.22
measured = allgather 16384 ring/simple/ch=2 58.54
measured = allgather 65536 ring/simple/ch=2 95.89
measured = allgather 262144 ring/simple/ch=2 147.38
measured = allgather 1048576 ring/simple/ch=2 305.66
measured = allgather 4194304 ring/simple/ch=2 903.33
measured = allgather 16777216 ring/simple/ch=2 3466.54
measured = allgather 67108864 ring/simple/ch=2 13530.99
measured = allgather 1024 ring/simple/ch=4 53.75
measured = allgather 4096 ring/simple/ch=4 52.94
measured = allgather 16384 ring/simple/ch=4 53.95
measured = allgather 65536 ring/simple/ch=4 97.20
measured = allgather 262144 ring/simple/ch=4 142.64
measured = allgather 1048576 ring/simple/ch=4 298.98
measured = allgather 4194304 ring/simple/ch=4 883.56
measured = allgather 16777216 ring/simple/ch=4 3282.70
measured = allgather 67108864 ring/simple/ch=4 13267.33
measured = allreduce 1024 ring/ll/ch=1 46.90
measured = allreduce 4096 ring/ll/ch=1 48.72
measured = allreduce 16384 ring/ll/ch=1 65.54
measured = allreduce 65536 ring/ll/ch=1 101.33
measured = allreduce 262144 ring/ll/ch=1 396.33
measured = allreduce 1048576 ring/ll/ch=1 1539.99
measured = allreduce 4194304 ring/ll/ch=1 6276.92
measured = allreduce 16777216 ring/ll/ch=1 24621.10
measured = allreduce 67108864 ring/ll/ch=1 99991.20
measured = allreduce 1024 ring/ll/ch=2 47.82
measured = allreduce 4096 ring/ll/ch=2 81.46
measured = allreduce 16384 ring/ll/ch=2 94.63
measured = allreduce 65536 ring/ll/ch=2 131.02
measured = allreduce 262144 ring/ll/ch=2 375.77
measured = allreduce 1048576 ring/ll/ch=2 1488.47
measured = allreduce 4194304 ring/ll/ch=2 6278.27
measured = allreduce 16777216 ring/ll/ch=2 23942.86
measured = allreduce 67108864 ring/ll/ch=2 91939.10
measured = allreduce 1024 ring/ll/ch=8 45.54
measured = allreduce 4096 ring/ll/ch=8 82.70
measured = allreduce 16384 ring/ll/ch=8 95.35
measured = allreduce 65536 ring/ll/ch=8 129.05
measured = allreduce 262144 ring/ll/ch=8 374.77
measured = allreduce 1048576 ring/ll/ch=8 1475.58
measured = allreduce 4194304 ring/ll/ch=8 5983.99
measured = allreduce 16777216 ring/ll/ch=8 23408.42
measured = allreduce 67108864 ring/ll/ch=8 94514.79
measured = allreduce 1024 ring/simple/ch=1 82.77
measured = allreduce 4096 ring/simple/ch=1 82.23
measured = allreduce 16384 ring/simple/ch=1 90.26
measured = allreduce 65536 ring/simple/ch=1 105.02
measured = allreduce 262144 ring/simple/ch=1 199.12
measured = allreduce 1048576 ring/simple/ch=1 480.87
measured = allreduce 4194304 ring/simple/ch=1 1715.88
measured = allreduce 16777216 ring/simple/ch=1 6459.89
measured = allreduce 67108864 ring/simple/ch=1 25981.63
measured = allreduce 1024 ring/simple/ch=16 86.38
measured = allreduce 4096 ring/simple/ch=16 93.22
measured = allreduce 16384 ring/simple/ch=16 150.36
measured = allreduce 65536 ring/simple/ch=16 160.02
measured = allreduce 262144 ring/simple/ch=16 247.00
measured = allreduce 1048576 ring/simple/ch=16 555.71
measured = allreduce 4194304 ring/simple/ch=16 1744.82
measured = allreduce 16777216 ring/simple/ch=16 6487.60
measured = allreduce 67108864 ring/simple/ch=16 25170.30
measured = allreduce 1024 ring/simple/ch=2 81.06
measured = allreduce 4096 ring/simple/ch=2 81.94
measured = allreduce 16384 ring/simple/ch=2 142.19
measured = allreduce 65536 ring/simple/ch=2 159.91
measured = allreduce 262144 ring/simple/ch=2 236.38
measured = allreduce 1048576 ring/simple/ch=2 555.28
measured = allreduce 4194304 ring/simple/ch=2 1623.98
measured = allreduce 16777216 ring/simple/ch=2 6366.20
measured = allreduce 67108864 ring/simple/ch=2 24685.97
measured = allreduce 1024 ring/simple/ch=4 84.57
measured = allreduce 4096 ring/simple/ch=4 87.97
measured = allreduce 16384 ring/simple/ch=4 147.71
measured = allreduce 65536 ring/simple/ch=4 163.93
measured = allreduce 262144 ring/simple/ch=4 244.90
measured = allreduce 1048576 ring/simple/ch=4 561.82
measured = allreduce 4194304 ring/simple/ch=4 1640.48
measured = allreduce 16777216 ring/simple/ch=4 6730.61
measured = allreduce 67108864 ring/simple/ch=4 24744.18
measured = allreduce 1024 tree/ll/ch=1 37.73
measured = allreduce 4096 tree/ll/ch=1 40.64
measured = allreduce 16384 tree/ll/ch=1 64.73
measured = allreduce 65536 tree/ll/ch=1 146.90
measured = allreduce 262144 tree/ll/ch=1 459.48
measured = allreduce 1048576 tree/ll/ch=1 1571.24
measured = allreduce 4194304 tree/ll/ch=1 5496.68
measured = allreduce 16777216 tree/ll/ch=1 21994.46
measured = allreduce 67108864 tree/ll/ch=1 89334.91
measured = allreduce 1024 tree/simple/ch=2 56.37
measured = allreduce 4096 tree/simple/ch=2 56.75
measured = allreduce 16384 tree/simple/ch=2 73.83
measured = allreduce 65536 tree/simple/ch=2 93.76
measured = allreduce 262144 tree/simple/ch=2 183.55
measured = allreduce 1048576 tree/simple/ch=2 541.16
measured = allreduce 4194304 tree/simple/ch=2 1706.58
measured = allreduce 16777216 tree/simple/ch=2 7118.82
measured = allreduce 67108864 tree/simple/ch=2 28322.38
measured = allreduce 1024 tree/simple/ch=8 55.13
measured = allreduce 4096 tree/simple/ch=8 55.38
measured = allreduce 16384 tree/simple/ch=8 70.10
measured = allreduce 65536 tree/simple/ch=8 89.46
measured = allreduce 262144 tree/simple/ch=8 189.40
measured = allreduce 1048576 tree/simple/ch=8 513.10
measured = allreduce 4194304 tree/simple/ch=8 1706.78
measured = allreduce 16777216 tree/simple/ch=8 6865.33
measured = allreduce 67108864 tree/simple/ch=8 27291.81
measured = reducescatter 1024 pat/simple/ch=1 39.70
measured = reducescatter 4096 pat/simple/ch=1 40.21
measured = reducescatter 16384 pat/simple/ch=1 41.79
measured = reducescatter 65536 pat/simple/ch=1 49.51
measured = reducescatter 262144 pat/simple/ch=1 113.58
measured = reducescatter 1048576 pat/simple/ch=1 432.25
measured = reducescatter 4194304 pat/simple/ch=1 1068.90
measured = reducescatter 16777216 pat/simple/ch=1 3731.56
measured = reducescatter 67108864 pat/simple/ch=1 15108.48
measured = reducescatter 1024 pat/simple/ch=4 39.67
measured = reducescatter 4096 pat/simple/ch=4 39.94
measured = reducescatter 16384 pat/simple/ch=4 40.26
measured = reducescatter 65536 pat/simple/ch=4 64.86
measured = reducescatter 262144 pat/simple/ch=4 110.87
measured = reducescatter 1048576 pat/simple/ch=4 384.20
measured = reducescatter 4194304 pat/simple/ch=4 1153.42
measured = reducescatter 16777216 pat/simple/ch=4 3421.09
measured = reducescatter 67108864 pat/simple/ch=4 13491.47
measured = reducescatter 1024 ring/ll/ch=1 31.58
measured = reducescatter 4096 ring/ll/ch=1 33.50
measured = reducescatter 16384 ring/ll/ch=1 31.43
measured = reducescatter 65536 ring/ll/ch=1 54.62
measured = reducescatter 262144 ring/ll/ch=1 194.52
measured = reducescatter 1048576 ring/ll/ch=1 794.48
measured = reducescatter 4194304 ring/ll/ch=1 3108.40
measured = reducescatter 16777216 ring/ll/ch=1 12398.23
measured = reducescatter 67108864 ring/ll/ch=1 49248.27
measured = reducescatter 1024 ring/ll/ch=2 29.31
measured = reducescatter 4096 ring/ll/ch=2 29.49
measured = reducescatter 16384 ring/ll/ch=2 49.81
measured = reducescatter 65536 ring/ll/ch=2 73.01
measured = reducescatter 262144 ring/ll/ch=2 195.52
measured = reducescatter 1048576 ring/ll/ch=2 757.18
measured = reducescatter 4194304 ring/ll/ch=2 2978.18
measured = reducescatter 16777216 ring/ll/ch=2 12275.76
measured = reducescatter 67108864 ring/ll/ch=2 49695.97
measured = reducescatter 1024 ring/ll/ch=8 35.94
measured = reducescatter 4096 ring/ll/ch=8 35.74
measured = reducescatter 16384 ring/ll/ch=8 49.56
measured = reducescatter 65536 ring/ll/ch=8 74.39
measured = reducescatter 262144 ring/ll/ch=8 203.31
measured = reducescatter 1048576 ring/ll/ch=8 744.02
measured = reducescatter 4194304 ring/ll/ch=8 2923.12
measured = reducescatter 16777216 ring/ll/ch=8 12135.18
measured = reducescatter 67108864 ring/ll/ch=8 48751.86
measured = reducescatter 1024 ring/simple/ch=1 52.26
measured = reducescatter 4096 ring/simple/ch=1 51.53
measured = reducescatter 16384 ring/simple/ch=1 56.50
measured = reducescatter 65536 ring/simple/ch=1 63.97
measured = reducescatter 262144 ring/simple/ch=1 114.46
measured = reducescatter 1048576 ring/simple/ch=1 264.98
measured = reducescatter 4194304 ring/simple/ch=1 940.30
measured = reducescatter 16777216 ring/simple/ch=1 3554.29
measured = reducescatter 67108864 ring/simple/ch=1 13856.77
measured = reducescatter 1024 ring/simple/ch=16 52.63
measured = reducescatter 4096 ring/simple/ch=16 53.90
measured = reducescatter 16384 ring/simple/ch=16 56.46
measured = reducescatter 65536 ring/simple/ch=16 93.54
measured = reducescatter 262144 ring/simple/ch=16 143.58
measured = reducescatter 1048576 ring/simple/ch=16 295.56
measured = reducescatter 4194304 ring/simple/ch=16 937.45
measured = reducescatter 16777216 ring/simple/ch=16 3450.11
measured = reducescatter 67108864 ring/simple/ch=16 12273.06
measured = reducescatter 1024 ring/simple/ch=2 51.93
measured = reducescatter 4096 ring/simple/ch=2 53.25
measured = reducescatter 16384 ring/simple/ch=2 58.35
measured = reducescatter 65536 ring/simple/ch=2 95.57
measured = reducescatter 262144 ring/simple/ch=2 140.82
measured = reducescatter 1048576 ring/simple/ch=2 294.75
measured = reducescatter 4194304 ring/simple/ch=2 947.53
measured = reducescatter 16777216 ring/simple/ch=2 3486.18
measured = reducescatter 67108864 ring/simple/ch=2 12334.75
measured = reducescatter 1024 ring/simple/ch=4 50.49
measured = reducescatter 4096 ring/simple/ch=4 52.49
measured = reducescatter 16384 ring/simple/ch=4 57.02
measured = reducescatter 65536 ring/simple/ch=4 95.60
measured = reducescatter 262144 ring/simple/ch=4 138.89
measured = reducescatter 1048576 ring/simple/ch=4 300.19
measured = reducescatter 4194304 ring/simple/ch=4 937.38
measured = reducescatter 16777216 ring/simple/ch=4 3495.54
measured = reducescatter 67108864 ring/simple/ch=4 12688.42
