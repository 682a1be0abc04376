/* core/action.h: an action is what DynamICCL tells NCCL for one collective call: algorithm,
 * protocol, number of channels and (tuner v6 only) chunk size, each optionally "NCCL's own".
 *
 * Actions are packed in 32 bits so a decision-table cell is one atomic word:
 *   bits 0-3   algorithm + 1   (0: the whole action is "NCCL's choice", DCCL_ACTION_NCCL)
 *   bits 4-5   protocol
 *   bits 6-13  channels        (0: NCCL's channel count)
 *   bits 14-18 log2 chunk size (0: NCCL's chunk size)
 * A zero-filled decision table therefore means "NCCL's default everywhere". */
#ifndef DYNAMICCL_CORE_ACTION_H
#define DYNAMICCL_CORE_ACTION_H

#include <stddef.h>
#include <stdint.h>

#include "types.h"

typedef uint32_t dccl_action;

#define DCCL_ACTION_NCCL ((dccl_action)0)
#define DCCL_MAX_CHANNELS 64   /* NCCL's MAXCHANNELS */
#define DCCL_CHUNK_LOG2_MIN 12 /* 4 KiB: below every protocol's useful chunk */
#define DCCL_CHUNK_LOG2_MAX 26 /* 64 MiB: above every protocol buffer (NCCL clamps) */

static inline dccl_action dccl_action_make(int algo, int proto, int channels, int chunk_log2) {
  return (dccl_action)((uint32_t)(algo + 1) & 0xFu) | (((uint32_t)proto & 0x3u) << 4) |
         (((uint32_t)channels & 0xFFu) << 6) | (((uint32_t)chunk_log2 & 0x1Fu) << 14);
}
static inline int dccl_action_is_nccl(dccl_action a) { return (a & 0xFu) == 0; }
static inline int dccl_action_algo(dccl_action a) { return (int)(a & 0xFu) - 1; }
static inline int dccl_action_proto(dccl_action a) { return (int)((a >> 4) & 0x3u); }
static inline int dccl_action_channels(dccl_action a) { return (int)((a >> 6) & 0xFFu); }
static inline int dccl_action_chunk_log2(dccl_action a) { return (int)((a >> 14) & 0x1Fu); }
/* Index of the action's (algorithm, protocol) in NCCL's cost table (algorithm x protocols + protocol). */
static inline int dccl_action_pair(dccl_action a) { return dccl_action_algo(a) * DCCL_NUM_PROTOS + dccl_action_proto(a); }
static inline size_t dccl_action_chunk_bytes(dccl_action a) {
  int k = dccl_action_chunk_log2(a);
  return k == 0 ? 0 : (size_t)1 << k;
}

/* Whether NCCL takes a tuner's channel count for the algorithm as a request, clamped to the channels it
 * has (ring, tree, PAT). CollNet Direct and Chain, NVLS and NVLS-tree run on resources of their own, and
 * NCCL schedules CollNet on as many channels as a tuner says, unclamped (enqueue.cc, the isCollnet
 * tasks): they take no channel count (nor chunk size) from DynamICCL. */
static inline int dccl_algo_takes_channels(int algo) {
  return algo == DCCL_ALGO_RING || algo == DCCL_ALGO_TREE || algo == DCCL_ALGO_PAT;
}

/* Whether an action NCCL may be given as it is: NCCL's choice, or its resources (channels, chunk) only
 * where the algorithm takes them. Checked where actions come in (decision-table files, rank 0's tables
 * over the network); the action space holds no other; so the hot path need not. */
static inline int dccl_action_resources_valid(dccl_action a) {
  return dccl_action_is_nccl(a) || dccl_algo_takes_channels(dccl_action_algo(a)) ||
         (dccl_action_channels(a) == 0 && dccl_action_chunk_log2(a) == 0);
}

/* True when the bits decode to a well-formed action (known algorithm and protocol, channels and
 * chunk in range). Tables loaded from files and received over the network are checked with it. */
int dccl_action_well_formed(dccl_action a);

/* NCCL's structural rules (Demystifying NCCL Table III plus NCCL's own restrictions): which
 * (algorithm, protocol) pairs a collective can run at all, for a communicator of n_ranks ranks on
 * n_nodes nodes. Tree only for AllReduce; Broadcast/Reduce ring only; PAT only for AllGather and
 * ReduceScatter with one rank per node; NVLS, NVLS-tree and CollNet Simple only; NVLS-tree never on
 * one node. The cost table NCCL passes at each call (-1 = ignored) has the final word. */
int dccl_algo_proto_allowed(int coll, int algo, int proto, int n_ranks, int n_nodes);
/* Can the pair run the collective on some communicator of n_ranks ranks on n_nodes nodes, where -1
 * leaves a count open (a rule file names both, either or neither)? Never with fewer ranks than nodes. */
int dccl_algo_proto_possible(int coll, int algo, int proto, int n_ranks, int n_nodes);

/* Which actions a learner or the oracle may choose among. */
typedef struct dccl_action_space_options {
  int max_channels; /* upper bound of explicit channel counts (NCCL clamps to its own count) */
  int tune_chunk;   /* 1 when the tuner ABI has getChunkSize (v6) */
  long long buffer_bytes[DCCL_NUM_PROTOS]; /* NCCL's buffer per protocol (NCCL_LL_BUFFSIZE,
                                              NCCL_LL128_BUFFSIZE, NCCL_BUFFSIZE); 0: NCCL's default */
} dccl_action_space_options;

/* Steps per protocol buffer (NCCL_STEPS): a step is the unit a channel sends and waits on. */
#define DCCL_NCCL_STEPS 8

/* NCCL's buffer per protocol when not set: LL 512 KiB, LL128 4,915,200 bytes, Simple 4 MiB. */
long long dccl_default_buffer_bytes(int proto);

/* The largest chunk NCCL takes from a tuner's getChunkSize for this collective, algorithm and protocol
 * (larger values are clamped to it): one step of the protocol's buffer (DCCL_NCCL_STEPS per buffer),
 * times the chunk steps of ring/Simple (4 for AllReduce, AllGather and ReduceScatter), halved for LL,
 * 15/16 of it for LL128. `buffer_bytes` as in dccl_action_space_options (NULL: NCCL's defaults). It is
 * also NCCL's own chunk, except where NCCL shrinks that for small messages (tree/LL128, PAT, NVLS and
 * CollNet). */
long long dccl_chunk_ceiling(int coll, int algo, int proto, const long long* buffer_bytes);

/* Enumerates the actions of a collective: every allowed (algorithm, protocol) with NCCL's channel
 * count and each explicit count in {1,2,4,8,12,16,24,32,48,64} <= max_channels, and, when
 * tune_chunk, each chunk in {NCCL's, 32K .. 2M} that NCCL would not clamp to its own: the sizes below
 * the ceiling (dccl_chunk_ceiling), and where NCCL's own chunk may be smaller than the ceiling (tree/LL128
 * and PAT) also the smallest size at or above it, which runs as the ceiling (so LL, whose ceiling is
 * 32 KiB, has none). NVLS and CollNet keep NCCL's channels and chunk.
 * Writes at most `capacity` actions, returns how many exist (may exceed capacity). */
int dccl_action_space_build(int coll, int n_ranks, int n_nodes, const dccl_action_space_options* options,
                            dccl_action* out, int capacity);

/* Coordinate-descent neighbours in that space: the same algorithm/protocol one step away on the
 * channel ladder or on the chunk-size ladder (NCCL's own value borders every step), or another
 * algorithm/protocol pair with the same channels and chunk size. */
int dccl_action_neighbours(dccl_action a, dccl_action b);

/* "ring/ll128/ch=8/chunk=256K", "ring/simple" (NCCL's channels and chunk), or "nccl". */
int dccl_action_format(dccl_action a, char* buffer, size_t size);
/* Parses what dccl_action_format writes; returns 0 on success, -1 on malformed text. */
int dccl_action_parse(const char* text, dccl_action* out);

/* Parses a byte count with an optional binary suffix: "4096", "64K", "1M", "2G". -1 on error. */
int dccl_parse_bytes(const char* text, unsigned long long* out);
/* Writes a byte count compactly ("64K", "1M", "1536"). */
int dccl_format_bytes(unsigned long long bytes, char* buffer, size_t size);

#endif
