/* core/types.h: collectives, algorithms and protocols as DynamICCL numbers them (NCCL's numbering),
 * with their names and parsers. Shared by the plugin, the simulator and the tools. */
#ifndef DYNAMICCL_CORE_TYPES_H
#define DYNAMICCL_CORE_TYPES_H

#include <stddef.h>

/* Tuned collectives, numbered like ncclFunc_t. */
enum {
  DCCL_COLL_BROADCAST = 0,
  DCCL_COLL_REDUCE = 1,
  DCCL_COLL_ALLGATHER = 2,
  DCCL_COLL_REDUCESCATTER = 3,
  DCCL_COLL_ALLREDUCE = 4,
  DCCL_NUM_COLLS = 5
};

/* Algorithms, numbered like NCCL_ALGO_*. */
enum {
  DCCL_ALGO_TREE = 0,
  DCCL_ALGO_RING = 1,
  DCCL_ALGO_COLLNET_DIRECT = 2,
  DCCL_ALGO_COLLNET_CHAIN = 3,
  DCCL_ALGO_NVLS = 4,
  DCCL_ALGO_NVLS_TREE = 5,
  DCCL_ALGO_PAT = 6,
  DCCL_NUM_ALGOS = 7
};

/* Protocols, numbered like NCCL_PROTO_*. */
enum { DCCL_PROTO_LL = 0, DCCL_PROTO_LL128 = 1, DCCL_PROTO_SIMPLE = 2, DCCL_NUM_PROTOS = 3 };

/* Lower-case names as in NCCL's example tuner CSV ("allreduce", "ring", "ll128"). */
const char* dccl_coll_name(int coll);
const char* dccl_algo_name(int algo);
const char* dccl_proto_name(int proto);

/* Parsers accept those names and NCCL's own spellings ("AllReduce", "RING", "SIMPLE",
 * "COLLNET_DIRECT"), case-insensitively. They return -1 for anything else. */
int dccl_coll_parse(const char* name);
int dccl_algo_parse(const char* name);
int dccl_proto_parse(const char* name);

/* NCCL's datatypes as the profiler names them ("ncclFloat32", "ncclBfloat16", "ncclFloat8e4m3"...): an
 * index below DCCL_NUM_DATATYPES, each name its own (-1 when unknown), and the byte size (0 when unknown). */
#define DCCL_NUM_DATATYPES 20
int dccl_datatype_index(const char* name);
size_t dccl_datatype_size(const char* name);
/* The byte size of a datatype by its index (>= 0). */
static inline size_t dccl_datatype_bytes(int index) { return (size_t)1 << (index % 4); }

/* Bytes NCCL passes to getCollInfo for a collective: element size x count, times nRanks for
 * AllGather and ReduceScatter (whose count is per rank). */
size_t dccl_coll_bytes(int coll, size_t count, size_t element_size, int n_ranks);

#endif
