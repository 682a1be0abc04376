/* plugin/registry.c: the process-wide table of communicator contexts, tuner/profiler pairing, and
 * the background thread that drains measurement queues. */
#include "registry.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define WORKER_PERIOD_NS 1000000L /* 1 ms between drains */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t registry_changed = PTHREAD_COND_INITIALIZER;
static dccl_comm* comms[DCCL_MAX_COMM_SLOTS];
static int halves[DCCL_MAX_COMM_SLOTS]; /* DCCL_HALF_* bits attached */
static uint32_t incarnations[DCCL_MAX_COMM_SLOTS];
static int ending[DCCL_MAX_COMM_SLOTS]; /* its communicator is being destroyed: the slot is not free yet */
static int live_count;

static pthread_t worker_thread;
static int worker_running, worker_stop, worker_joining, manual_worker;

/* The profiler context this thread initialised last and no tuner has claimed. */
static _Thread_local struct {
  int valid;
  uint32_t slot, incarnation;
} pending_profiler;

/* ---- background thread ---- */

static void* worker_main(void* unused) {
  (void)unused;
  dccl_comm* batch[64];
  pthread_mutex_lock(&registry_lock);
  while (!worker_stop) {
    int behind = 0; /* a communicator had more measurements than one pass takes: no pause */
    /* Snapshot under the lock, drain outside it, so init/finalize never wait on file writes. */
    for (int start = 0; start < DCCL_MAX_COMM_SLOTS;) {
      int n = 0;
      for (; start < DCCL_MAX_COMM_SLOTS && n < 64; start++)
        if (comms[start] != NULL && comms[start]->profiling) {
          comms[start]->worker_refs++;
          batch[n++] = comms[start];
        }
      if (n == 0) continue;
      pthread_mutex_unlock(&registry_lock);
      for (int i = 0; i < n; i++) behind |= dccl_comm_drain(batch[i], DCCL_DRAIN_WORKER) >= DCCL_DRAIN_WORKER;
      pthread_mutex_lock(&registry_lock);
      for (int i = 0; i < n; i++) batch[i]->worker_refs--;
      pthread_cond_broadcast(&registry_changed);
    }
    if (behind) continue;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += WORKER_PERIOD_NS;
    if (deadline.tv_nsec >= 1000000000L) {
      deadline.tv_sec++;
      deadline.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&registry_changed, &registry_lock, &deadline);
  }
  pthread_mutex_unlock(&registry_lock);
  return NULL;
}

/* Called with the lock held. */
static void worker_ensure_running(const dccl_logger* logger) {
  /* A worker being stopped still reads worker_stop: let it exit before starting the next one. */
  while (worker_joining) pthread_cond_wait(&registry_changed, &registry_lock);
  if (worker_running || manual_worker) return;
  worker_stop = 0;
  int rc = pthread_create(&worker_thread, NULL, worker_main, NULL);
  if (rc != 0) {
    DCCL_WARN(logger, "cannot start the background thread (%d); measurements are drained only at finalize", rc);
    return;
  }
  worker_running = 1;
}

/* Called with the lock held; releases it while joining. */
static void worker_stop_if_idle(void) {
  if (!worker_running || live_count > 0) return;
  worker_stop = 1;
  pthread_cond_broadcast(&registry_changed);
  pthread_t thread = worker_thread;
  worker_running = 0;
  worker_joining = 1;
  pthread_mutex_unlock(&registry_lock);
  pthread_join(thread, NULL);
  pthread_mutex_lock(&registry_lock);
  worker_joining = 0;
  pthread_cond_broadcast(&registry_changed);
}

/* ---- slots ---- */

static int free_slot(void) {
  for (int s = 0; s < DCCL_MAX_COMM_SLOTS; s++)
    if (comms[s] == NULL && !ending[s]) return s;
  return -1;
}

static dccl_comm* create_in_slot(int comm_id_known, uint64_t comm_id, int n_ranks, int n_nodes, ncclDebugLogger_t logger) {
  int slot = free_slot();
  dccl_logger log = {logger};
  if (slot < 0) {
    DCCL_WARN(&log, "more than %d communicators in this process; this one runs with NCCL's choices", DCCL_MAX_COMM_SLOTS);
    return NULL;
  }
  dccl_comm* comm = dccl_comm_create((uint32_t)slot, comm_id_known, comm_id, n_ranks, n_nodes, logger);
  if (comm == NULL) {
    DCCL_WARN(&log, "out of memory creating a communicator context; this one runs with NCCL's choices");
    return NULL;
  }
  comms[slot] = comm;
  halves[slot] = 0;
  incarnations[slot]++;
  live_count++;
  return comm;
}

dccl_comm* dccl_registry_attach_profiler(uint64_t comm_id, int rank, int n_ranks, int n_nodes, ncclDebugLogger_t logger,
                                         int abi_version, int* activation_mask) {
  pthread_mutex_lock(&registry_lock);
  dccl_comm* comm = create_in_slot(1, comm_id, n_ranks, n_nodes, logger);
  if (comm != NULL) {
    halves[comm->slot] |= DCCL_HALF_PROFILER;
    *activation_mask = dccl_comm_attach_profiler(comm, abi_version, rank);
    pending_profiler.valid = 1;
    pending_profiler.slot = comm->slot;
    pending_profiler.incarnation = incarnations[comm->slot];
    if (comm->profiling) worker_ensure_running(&comm->logger);
  } else {
    *activation_mask = 0;
  }
  pthread_mutex_unlock(&registry_lock);
  return comm;
}

static int shape_matches(const dccl_comm* comm, int comm_id_known, uint64_t comm_id, int n_ranks, int n_nodes) {
  return comm->n_ranks == n_ranks && comm->n_nodes == n_nodes && (!comm_id_known || comm->comm_id == comm_id);
}

dccl_comm* dccl_registry_attach_tuner(int comm_id_known, uint64_t comm_id, int n_ranks, int n_nodes,
                                      ncclDebugLogger_t logger, int abi_version) {
  pthread_mutex_lock(&registry_lock);
  dccl_comm* comm = NULL;
  const char* how = NULL;
  /* Rule 2: the profiler context this thread just initialised. */
  if (pending_profiler.valid && incarnations[pending_profiler.slot] == pending_profiler.incarnation) {
    dccl_comm* candidate = comms[pending_profiler.slot];
    if (candidate != NULL && !(halves[candidate->slot] & DCCL_HALF_TUNER) &&
        shape_matches(candidate, comm_id_known, comm_id, n_ranks, n_nodes)) {
      comm = candidate;
      how = "same init thread";
    }
  }
  pending_profiler.valid = 0;
  /* Rule 3: the unique unpaired profiler context with this commId. */
  if (comm == NULL && comm_id_known) {
    int matches = 0;
    dccl_comm* match = NULL;
    for (int s = 0; s < DCCL_MAX_COMM_SLOTS; s++)
      if (comms[s] != NULL && halves[s] == DCCL_HALF_PROFILER && shape_matches(comms[s], 1, comm_id, n_ranks, n_nodes)) {
        matches++;
        match = comms[s];
      }
    if (matches == 1) {
      comm = match;
      how = "commId";
    }
  }
  if (comm != NULL) {
    halves[comm->slot] |= DCCL_HALF_TUNER;
    if (comm->logger.nccl_logger == NULL) comm->logger.nccl_logger = logger;
    DCCL_INIT_INFO(&comm->logger, "tuner paired with profiler context of rank %d (%s)", comm->rank, how);
  } else {
    /* Rule 4: run without feedback. */
    comm = create_in_slot(comm_id_known, comm_id, n_ranks, n_nodes, logger);
    if (comm != NULL) {
      halves[comm->slot] |= DCCL_HALF_TUNER;
      DCCL_INIT_INFO(&comm->logger, "no profiler context to pair with; tuner runs without measurements");
    }
  }
  pthread_mutex_unlock(&registry_lock);
  /* Out of the lock: attaching reads policy, table and rule files and sets up coordination (a registry
   * name's lookup, a leader waiting for an ending one), which other communicators' init and finalize and
   * the background drain need not wait for. Paired and marked, the communicator is this init's: the
   * drain reads what the attach sets up only once it publishes `learning`. */
  if (comm != NULL) dccl_comm_attach_tuner(comm, abi_version);
  return comm;
}

void dccl_registry_detach(dccl_comm* comm, int half) {
  if (comm == NULL) return;
  pthread_mutex_lock(&registry_lock);
  uint32_t slot = comm->slot;
  if (slot >= DCCL_MAX_COMM_SLOTS || comms[slot] != comm || !(halves[slot] & half)) {
    pthread_mutex_unlock(&registry_lock);
    return;
  }
  halves[slot] &= ~half;
  if (half == DCCL_HALF_PROFILER && comm->profiling) dccl_event_pool_unregister(slot);
  if (halves[slot] == 0) {
    while (comm->worker_refs > 0) pthread_cond_wait(&registry_changed, &registry_lock);
    comms[slot] = NULL;
    incarnations[slot]++;
    live_count--;
    /* Out of the table, the communicator is this thread's alone. Its end may take seconds (a leader
     * waits for its workers, the policy is saved): other communicators' init and finalize, and the
     * background thread, do not wait for it. */
    ending[slot] = 1; /* its event-pool slot, among others, is still the ending communicator's */
    pthread_mutex_unlock(&registry_lock);
    dccl_comm_destroy(comm);
    pthread_mutex_lock(&registry_lock);
    ending[slot] = 0;
    worker_stop_if_idle();
  }
  pthread_mutex_unlock(&registry_lock);
}

int dccl_registry_count(void) {
  pthread_mutex_lock(&registry_lock);
  int n = live_count;
  pthread_mutex_unlock(&registry_lock);
  return n;
}

void dccl_registry_set_manual(int manual) {
  pthread_mutex_lock(&registry_lock);
  manual_worker = manual;
  pthread_mutex_unlock(&registry_lock);
}

void dccl_plugin_sync_step(void* tuner_context) {
  if (tuner_context != NULL) dccl_comm_drain(tuner_context, DCCL_DRAIN_STEP);
}
