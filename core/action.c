/* core/action.c: validity rules, enumeration, formatting and parsing of actions. */
#include "action.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int dccl_action_well_formed(dccl_action a) {
  if (dccl_action_is_nccl(a)) return a == DCCL_ACTION_NCCL;
  if ((a >> 19) != 0) return 0;
  int algo = dccl_action_algo(a), proto = dccl_action_proto(a), channels = dccl_action_channels(a);
  int chunk = dccl_action_chunk_log2(a);
  if (algo < 0 || algo >= DCCL_NUM_ALGOS || proto >= DCCL_NUM_PROTOS) return 0;
  if (channels > DCCL_MAX_CHANNELS) return 0;
  if (chunk != 0 && (chunk < DCCL_CHUNK_LOG2_MIN || chunk > DCCL_CHUNK_LOG2_MAX)) return 0;
  return 1;
}

int dccl_algo_proto_allowed(int coll, int algo, int proto, int n_ranks, int n_nodes) {
  if (coll < 0 || coll >= DCCL_NUM_COLLS || algo < 0 || algo >= DCCL_NUM_ALGOS || proto < 0 ||
      proto >= DCCL_NUM_PROTOS)
    return 0;
  int simple_only = algo == DCCL_ALGO_NVLS || algo == DCCL_ALGO_NVLS_TREE || algo == DCCL_ALGO_COLLNET_DIRECT ||
                    algo == DCCL_ALGO_COLLNET_CHAIN || algo == DCCL_ALGO_PAT;
  if (simple_only && proto != DCCL_PROTO_SIMPLE) return 0;
  switch (coll) {
  case DCCL_COLL_BROADCAST:
  case DCCL_COLL_REDUCE:
    return algo == DCCL_ALGO_RING;
  case DCCL_COLL_ALLGATHER:
  case DCCL_COLL_REDUCESCATTER:
    if (algo == DCCL_ALGO_PAT) return n_nodes > 1 && n_nodes == n_ranks;
    return algo == DCCL_ALGO_RING || algo == DCCL_ALGO_NVLS || algo == DCCL_ALGO_COLLNET_DIRECT;
  case DCCL_COLL_ALLREDUCE:
    if (algo == DCCL_ALGO_PAT) return 0;
    if (algo == DCCL_ALGO_NVLS_TREE) return n_nodes > 1;
    return 1;
  }
  return 0;
}

int dccl_algo_proto_possible(int coll, int algo, int proto, int n_ranks, int n_nodes) {
  /* dccl_algo_proto_allowed asks only whether there are several nodes and whether every node holds one
   * rank, so two values stand for each count left open: one node or several (as many as the ranks,
   * when those are given), and one rank per node or more. */
  int node_counts[2] = {1, n_ranks > 0 ? n_ranks : 2};
  for (int i = 0; i < 2; i++) {
    int nodes = n_nodes > 0 ? n_nodes : node_counts[i];
    int rank_counts[2] = {nodes, nodes < INT_MAX ? nodes + 1 : nodes};
    for (int j = 0; j < 2; j++) {
      int ranks = n_ranks > 0 ? n_ranks : rank_counts[j];
      if (ranks >= nodes && dccl_algo_proto_allowed(coll, algo, proto, ranks, nodes)) return 1;
    }
  }
  return 0;
}

static const int channel_options[] = {1, 2, 4, 8, 12, 16, 24, 32, 48, 64};
static const int chunk_log2_options[] = {15, 16, 17, 18, 19, 20, 21}; /* 32K .. 2M */

long long dccl_default_buffer_bytes(int proto) {
  /* LL: 8 lines per thread x 512 threads x 8 steps x 16-byte lines; LL128: 120 elements per thread x
   * 640 threads x 8 steps x 8 bytes; Simple: 4 MiB. */
  return proto == DCCL_PROTO_LL ? 8LL * 512 * DCCL_NCCL_STEPS * 16 : proto == DCCL_PROTO_LL128 ? 120LL * 640 * DCCL_NCCL_STEPS * 8 : 1LL << 22;
}

long long dccl_chunk_ceiling(int coll, int algo, int proto, const long long* buffer_bytes) {
  long long buffer = buffer_bytes != NULL && buffer_bytes[proto] > 0 ? buffer_bytes[proto] : dccl_default_buffer_bytes(proto);
  long long chunk = buffer / DCCL_NCCL_STEPS;
  if (proto == DCCL_PROTO_SIMPLE && algo == DCCL_ALGO_RING && coll != DCCL_COLL_BROADCAST && coll != DCCL_COLL_REDUCE)
    chunk *= DCCL_NCCL_STEPS / 2;
  if (proto == DCCL_PROTO_LL) chunk /= 2;
  if (proto == DCCL_PROTO_LL128) chunk = chunk / 16 * 15;
  return chunk;
}

int dccl_action_space_build(int coll, int n_ranks, int n_nodes, const dccl_action_space_options* options,
                            dccl_action* out, int capacity) {
  int count = 0;
  int max_channels = options->max_channels > 0 ? options->max_channels : DCCL_MAX_CHANNELS;
#define EMIT(action)                              \
  do {                                            \
    if (count < capacity) out[count] = (action); \
    count++;                                      \
  } while (0)
  for (int algo = 0; algo < DCCL_NUM_ALGOS; algo++) {
    for (int proto = 0; proto < DCCL_NUM_PROTOS; proto++) {
      if (!dccl_algo_proto_allowed(coll, algo, proto, n_ranks, n_nodes)) continue;
      int fixed_resources = !dccl_algo_takes_channels(algo);
      int n_channel_options = fixed_resources ? 0 : (int)(sizeof(channel_options) / sizeof(channel_options[0]));
      int n_chunk_options = fixed_resources || !options->tune_chunk
                              ? 0
                              : (int)(sizeof(chunk_log2_options) / sizeof(chunk_log2_options[0]));
      /* Chunk sizes NCCL would clamp to its own are left out: they would only run NCCL's chunk again. */
      long long ceiling = dccl_chunk_ceiling(coll, algo, proto, options->buffer_bytes);
      int own_chunk_may_be_smaller = algo == DCCL_ALGO_PAT || (algo == DCCL_ALGO_TREE && proto == DCCL_PROTO_LL128);
      int n_chunks = 0;
      for (; n_chunks < n_chunk_options && (1LL << chunk_log2_options[n_chunks]) < ceiling; n_chunks++) {}
      if (own_chunk_may_be_smaller && n_chunks < n_chunk_options) n_chunks++;
      for (int c = -1; c < n_channel_options; c++) {
        int channels = c < 0 ? 0 : channel_options[c];
        if (channels > max_channels) continue;
        for (int k = -1; k < n_chunks; k++) EMIT(dccl_action_make(algo, proto, channels, k < 0 ? 0 : chunk_log2_options[k]));
      }
    }
  }
#undef EMIT
  return count;
}

/* Position on a ladder (1-based); 0 for NCCL's own value, which borders every step; -1 when off it. */
static int ladder_position(const int* ladder, int length, int value) {
  if (value == 0) return 0;
  for (int i = 0; i < length; i++)
    if (ladder[i] == value) return i + 1;
  return -1;
}

static int ladder_adjacent(const int* ladder, int length, int a, int b) {
  int x = ladder_position(ladder, length, a), y = ladder_position(ladder, length, b);
  if (x < 0 || y < 0 || x == y) return 0;
  return x == 0 || y == 0 || x - y == 1 || y - x == 1;
}

int dccl_action_neighbours(dccl_action a, dccl_action b) {
  if (dccl_action_is_nccl(a) || dccl_action_is_nccl(b)) return 0;
  int same_pair = dccl_action_algo(a) == dccl_action_algo(b) && dccl_action_proto(a) == dccl_action_proto(b);
  int same_channels = dccl_action_channels(a) == dccl_action_channels(b);
  int same_chunk = dccl_action_chunk_log2(a) == dccl_action_chunk_log2(b);
  if (!same_pair) return same_channels && same_chunk;
  const int n_channels = (int)(sizeof(channel_options) / sizeof(channel_options[0]));
  const int n_chunks = (int)(sizeof(chunk_log2_options) / sizeof(chunk_log2_options[0]));
  return (same_chunk && ladder_adjacent(channel_options, n_channels, dccl_action_channels(a), dccl_action_channels(b))) ||
         (same_channels &&
          ladder_adjacent(chunk_log2_options, n_chunks, dccl_action_chunk_log2(a), dccl_action_chunk_log2(b)));
}

int dccl_format_bytes(unsigned long long bytes, char* buffer, size_t size) {
  static const char suffixes[] = {'K', 'M', 'G', 'T'};
  if (bytes != 0) {
    for (int i = 3; i >= 0; i--) {
      unsigned long long unit = 1ULL << (10 * (i + 1));
      if (bytes % unit == 0) return snprintf(buffer, size, "%llu%c", bytes / unit, suffixes[i]);
    }
  }
  return snprintf(buffer, size, "%llu", bytes);
}

int dccl_parse_bytes(const char* text, unsigned long long* out) {
  if (text == NULL) return -1;
  while (isspace((unsigned char)*text)) text++;
  if (!isdigit((unsigned char)*text)) return -1;
  errno = 0;
  char* end = NULL;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0) return -1;
  int shift = 0;
  switch (toupper((unsigned char)*end)) {
  case 'K': shift = 10; break;
  case 'M': shift = 20; break;
  case 'G': shift = 30; break;
  case 'T': shift = 40; break;
  default: break;
  }
  if (shift) {
    end++;
    if (toupper((unsigned char)*end) == 'I') end++; /* KiB */
    if (toupper((unsigned char)*end) == 'B') end++;
    if (value > (~0ULL >> shift)) return -1;
    value <<= shift;
  }
  while (isspace((unsigned char)*end)) end++;
  if (*end != '\0') return -1;
  *out = value;
  return 0;
}

int dccl_action_format(dccl_action a, char* buffer, size_t size) {
  if (dccl_action_is_nccl(a)) return snprintf(buffer, size, "nccl");
  int n = snprintf(buffer, size, "%s/%s", dccl_algo_name(dccl_action_algo(a)), dccl_proto_name(dccl_action_proto(a)));
  if (dccl_action_channels(a) != 0 && n >= 0 && (size_t)n < size)
    n += snprintf(buffer + n, size - (size_t)n, "/ch=%d", dccl_action_channels(a));
  if (dccl_action_chunk_log2(a) != 0 && n >= 0 && (size_t)n < size) {
    char chunk[32];
    dccl_format_bytes(dccl_action_chunk_bytes(a), chunk, sizeof(chunk));
    n += snprintf(buffer + n, size - (size_t)n, "/chunk=%s", chunk);
  }
  return n;
}

/* Splits off the next '/'-separated part of *cursor; NULL at the end. An empty part is returned as "". */
static char* next_part(char** cursor) {
  char* part = *cursor;
  if (part == NULL) return NULL;
  char* slash = strchr(part, '/');
  if (slash != NULL) *slash = '\0';
  *cursor = slash != NULL ? slash + 1 : NULL;
  return part;
}

int dccl_action_parse(const char* text, dccl_action* out) {
  char copy[128];
  if (text == NULL || strlen(text) >= sizeof(copy)) return -1;
  strcpy(copy, text);
  if (strcasecmp(copy, "nccl") == 0 || strcasecmp(copy, "default") == 0) {
    *out = DCCL_ACTION_NCCL;
    return 0;
  }
  char* cursor = copy;
  int algo = dccl_algo_parse(next_part(&cursor));
  int proto = dccl_proto_parse(next_part(&cursor));
  if (algo < 0 || proto < 0) return -1;
  int channels = 0, chunk_log2 = 0;
  /* Each field at most once, in plain decimal or byte counts: "ch=4/ch=8", "ch=+5", "ring//ll" and a
   * trailing '/' are refused rather than read one way. */
  for (char* field = next_part(&cursor); field != NULL; field = next_part(&cursor)) {
    if (strncmp(field, "ch=", 3) == 0 && channels == 0) {
      char* end = NULL;
      if (!isdigit((unsigned char)field[3])) return -1;
      long value = strtol(field + 3, &end, 10);
      if (*end != '\0' || value < 1 || value > DCCL_MAX_CHANNELS) return -1;
      channels = (int)value;
    } else if (strncmp(field, "chunk=", 6) == 0 && chunk_log2 == 0) {
      unsigned long long bytes = 0;
      if (!isdigit((unsigned char)field[6]) || dccl_parse_bytes(field + 6, &bytes) != 0 || bytes == 0 ||
          (bytes & (bytes - 1)) != 0)
        return -1;
      int log2 = 0;
      while ((1ULL << log2) < bytes) log2++;
      if (log2 < DCCL_CHUNK_LOG2_MIN || log2 > DCCL_CHUNK_LOG2_MAX) return -1;
      chunk_log2 = log2;
    } else {
      return -1;
    }
  }
  *out = dccl_action_make(algo, proto, channels, chunk_log2);
  return 0;
}
