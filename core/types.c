/* core/types.c: names and parsers for collectives, algorithms, protocols and datatypes. */
#include "types.h"

#include <string.h>
#include <strings.h>

static const char* const coll_names[DCCL_NUM_COLLS] = {"broadcast", "reduce", "allgather", "reducescatter",
                                                       "allreduce"};
static const char* const algo_names[DCCL_NUM_ALGOS] = {"tree", "ring",      "collnet_direct", "collnet_chain",
                                                       "nvls", "nvls_tree", "pat"};
static const char* const proto_names[DCCL_NUM_PROTOS] = {"ll", "ll128", "simple"};

const char* dccl_coll_name(int coll) { return coll >= 0 && coll < DCCL_NUM_COLLS ? coll_names[coll] : "unknown"; }
const char* dccl_algo_name(int algo) { return algo >= 0 && algo < DCCL_NUM_ALGOS ? algo_names[algo] : "unknown"; }
const char* dccl_proto_name(int proto) {
  return proto >= 0 && proto < DCCL_NUM_PROTOS ? proto_names[proto] : "unknown";
}

static int find_name(const char* name, const char* const* names, int count) {
  if (name == NULL) return -1;
  for (int i = 0; i < count; i++)
    if (strcasecmp(name, names[i]) == 0) return i;
  return -1;
}

int dccl_coll_parse(const char* name) { return find_name(name, coll_names, DCCL_NUM_COLLS); }
int dccl_proto_parse(const char* name) { return find_name(name, proto_names, DCCL_NUM_PROTOS); }

int dccl_algo_parse(const char* name) {
  int algo = find_name(name, algo_names, DCCL_NUM_ALGOS);
  if (algo >= 0) return algo;
  /* NCCL's environment spellings without underscores. */
  static const char* const compact[DCCL_NUM_ALGOS] = {"tree", "ring", "collnetdirect", "collnetchain",
                                                      "nvls", "nvlstree", "pat"};
  return find_name(name, compact, DCCL_NUM_ALGOS);
}

int dccl_datatype_index(const char* name) {
  /* NCCL's names are ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64, ncclFloat16,
   * ncclFloat32, ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2: the first number is the
   * width in bits. The index is the kind (Int, Uint, Float, Bfloat, Float8e5m2) times 4 plus log2 of
   * the width in bytes. This runs on the profiler's hot path, hence no table scan. */
  if (name == NULL) return -1;
  int kind = strncmp(name, "ncclFloat", 9) == 0    ? 2 /* the likeliest first */
             : strncmp(name, "ncclBfloat", 10) == 0 ? 3
             : strncmp(name, "ncclInt", 7) == 0     ? 0
             : strncmp(name, "ncclUint", 8) == 0    ? 1
                                                    : -1;
  if (kind < 0) return -1;
  const char* digits = name + 4;
  while (*digits != '\0' && (*digits < '0' || *digits > '9')) digits++;
  int bits = 0;
  while (*digits >= '0' && *digits <= '9' && bits < 1000) bits = bits * 10 + (*digits++ - '0');
  int fp8 = bits == 8 && kind == 2;
  if (fp8 && strcmp(digits, "e4m3") != 0 && strcmp(digits, "e5m2") != 0) return -1;
  if (!fp8 && *digits != '\0') return -1;
  if (kind == 3 && bits != 16) return -1;
  if (fp8 && strcmp(digits, "e5m2") == 0) kind = 4;
  switch (bits) {
  case 8: return kind * 4;
  case 16: return kind * 4 + 1;
  case 32: return kind * 4 + 2;
  case 64: return kind * 4 + 3;
  default: return -1;
  }
}

size_t dccl_datatype_size(const char* name) {
  int index = dccl_datatype_index(name);
  return index < 0 ? 0 : dccl_datatype_bytes(index);
}

size_t dccl_coll_bytes(int coll, size_t count, size_t element_size, int n_ranks) {
  size_t bytes = count * element_size;
  if (coll == DCCL_COLL_ALLGATHER || coll == DCCL_COLL_REDUCESCATTER) bytes *= (size_t)(n_ranks > 0 ? n_ranks : 1);
  return bytes;
}
