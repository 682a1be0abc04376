/* bench/gpu/mock/mock_group.h: the rank processes of one mock communicator meet in a POSIX shared-memory
 * segment named from the unique id: a barrier, each rank's host name, and one staging slot per rank
 * through which the collectives move data (in pieces of a slot's size). */
#ifndef DYNAMICCL_MOCK_GROUP_H
#define DYNAMICCL_MOCK_GROUP_H

#include <stddef.h>
#include <stdint.h>

#define MOCK_MAX_RANKS 64
#define MOCK_SLOT_BYTES ((size_t)1 << 20)

typedef struct mock_group_header mock_group_header;

typedef struct mock_group {
  mock_group_header* header;
  size_t mapped_bytes;
  int rank, n_ranks;
  double timeout_s; /* a barrier that waits longer fails (a rank died or never came) */
} mock_group;

/* Maps the segment `name` (created by whichever rank comes first), records this rank's host and waits
 * for every rank. Returns 0, or -1 with a reason. */
int mock_group_join(mock_group* group, const char* name, int n_ranks, int rank, uint64_t host_hash, double timeout_s,
                    char* error, size_t error_size);
/* Waits until every rank has arrived. Returns 0, or -1 when a rank did not come in time (every later
 * barrier of the group then fails at once). */
int mock_group_barrier(mock_group* group);
/* Rank r's staging slot (MOCK_SLOT_BYTES). */
void* mock_group_slot(const mock_group* group, int r);
/* Distinct hosts among the ranks (NCCL's node count). */
int mock_group_hosts(const mock_group* group);
void mock_group_leave(mock_group* group);

#endif
