/* bench/gpu/mock/mock_group.c: the shared-memory meeting place of a mock communicator's rank processes. */
#include "mock_group.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define HEADER_BYTES 4096

struct mock_group_header {
  _Atomic int arrived;
  _Atomic int generation;
  _Atomic int failed; /* a barrier timed out: the group is broken */
  uint64_t host_hash[MOCK_MAX_RANKS];
};
_Static_assert(sizeof(mock_group_header) <= HEADER_BYTES, "the header fits its page");

static double seconds_now(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

int mock_group_join(mock_group* group, const char* name, int n_ranks, int rank, uint64_t host_hash, double timeout_s,
                    char* error, size_t error_size) {
  memset(group, 0, sizeof(*group));
  group->rank = rank;
  group->n_ranks = n_ranks;
  group->timeout_s = timeout_s;
  group->mapped_bytes = HEADER_BYTES + (size_t)n_ranks * MOCK_SLOT_BYTES;
  int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
  if (fd < 0) {
    snprintf(error, error_size, "shm_open %s: %s", name, strerror(errno));
    return -1;
  }
  /* Every rank sizes it alike: a second ftruncate to the same size keeps what the first rank wrote. */
  void* mapped = MAP_FAILED;
  if (ftruncate(fd, (off_t)group->mapped_bytes) == 0)
    mapped = mmap(NULL, group->mapped_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int saved_errno = errno;
  close(fd);
  if (mapped == MAP_FAILED) {
    snprintf(error, error_size, "mapping %zu bytes of %s: %s", group->mapped_bytes, name, strerror(saved_errno));
    shm_unlink(name);
    return -1;
  }
  group->header = mapped;
  group->header->host_hash[rank] = host_hash;
  if (mock_group_barrier(group) != 0) {
    snprintf(error, error_size, "not every one of the %d ranks joined within %.0f s", n_ranks, timeout_s);
    shm_unlink(name);
    mock_group_leave(group);
    return -1;
  }
  /* Every rank has it mapped: the name is no longer needed, and nothing is left behind if a rank dies. */
  if (rank == 0) shm_unlink(name);
  return 0;
}

/* A central barrier: the last rank to arrive resets the count and starts the next generation. */
int mock_group_barrier(mock_group* group) {
  mock_group_header* h = group->header;
  int generation = atomic_load(&h->generation);
  if (atomic_load(&h->failed)) return -1;
  if (atomic_fetch_add(&h->arrived, 1) == group->n_ranks - 1) {
    atomic_store(&h->arrived, 0);
    atomic_fetch_add(&h->generation, 1);
    return 0;
  }
  double deadline = seconds_now() + group->timeout_s;
  for (unsigned spins = 0; atomic_load(&h->generation) == generation; spins++) {
    if (atomic_load(&h->failed)) return -1;
    if (spins < 256) {
      sched_yield();
      continue;
    }
    struct timespec pause = {0, 20000};
    nanosleep(&pause, NULL);
    if (spins % 64 == 0 && seconds_now() > deadline) {
      atomic_store(&h->failed, 1);
      return -1;
    }
  }
  return 0;
}

void* mock_group_slot(const mock_group* group, int r) {
  return (char*)group->header + HEADER_BYTES + (size_t)r * MOCK_SLOT_BYTES;
}

int mock_group_hosts(const mock_group* group) {
  int hosts = 0;
  for (int r = 0; r < group->n_ranks; r++) {
    int seen = 0;
    for (int q = 0; q < r && !seen; q++) seen = group->header->host_hash[q] == group->header->host_hash[r];
    hosts += !seen;
  }
  return hosts;
}

void mock_group_leave(mock_group* group) {
  if (group->header != NULL) munmap(group->header, group->mapped_bytes);
  group->header = NULL;
}
