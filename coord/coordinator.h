/* coord/coordinator.h: the same decision table on every rank of a communicator.
 *
 * The leader of a communicator (rank 0) learns, or runs the saved policy it loaded (frozen); the other
 * ranks (workers) run the tables it decides.
 * All ranks make the same getCollInfo calls in the same order and group them into epochs of
 * DYNAMICCL_EPOCH_CALLS calls. The leader decides the table of each epoch (see decision_table.h:
 * committed by its learner one epoch ahead, or "unchanged" by its hot path) and records the changes;
 * a per-process service thread sends every worker the decided epochs and the tables that changed. A
 * worker's hot path runs an epoch only once the leader's decision for it has arrived, and waits at
 * the boundary otherwise, so no two ranks ever run different tables in one epoch.
 *
 * Transports: Unix domain sockets in the abstract namespace, named from the communicator's token,
 * on one node; TCP across nodes, the leader being found through a small registry at `registry`
 * (hosted by whichever process can bind that address). One connection per pair of processes serves
 * all their communicators. Messages: coord/wire.h. */
#ifndef DYNAMICCL_COORD_COORDINATOR_H
#define DYNAMICCL_COORD_COORDINATOR_H

#include <stddef.h>
#include <stdint.h>

#include "../core/decision_table.h"
#include "../core/log.h"
#include "../core/rules.h"

typedef struct dccl_coord_options {
  uint64_t comm_id;
  int rank, n_ranks;
  uint64_t epoch_calls;
  dccl_table_store* store;
  const dccl_logger* logger;
  char registry[288];      /* "host:port" or "[IPv6 address]:port": TCP through this registry; "": Unix sockets here */
  uint64_t secret;         /* mixed into the token (DYNAMICCL_COORD_SECRET); 0: none */
  double drop_probability; /* testing: a worker drops its connection after a message with this chance */
  /* Leader of a frozen policy: the table of epoch 0 never changes. Once a worker has it, the worker is
   * told so (BYE) and runs it on without waiting at epoch boundaries. */
  int frozen;
  /* Rule pins (core/rules.h), which every rank must run alike: the leader sends its own to each worker
   * before the first table; a worker's are put in place from them (compiled for n_nodes and n_ranks)
   * before it may run any table, and must be empty until then. NULL: none (a worker's are then dropped). */
  dccl_pin_set* pins;
  int n_nodes;
  /* Leader: workers that have not joined this many seconds after it started are named in a warning
   * (once; an INFO line follows when the last one joins). A rank that does not follow rank 0 (another
   * DYNAMICCL_MODE, no rules file, no profiler plugin, DYNAMICCL_COORD=off) runs choices of its own,
   * and ranks that disagree hang NCCL. 0: no warning. */
  double absent_warning_seconds;
  /* Testing (the NCCL emulator, which runs ranks 0..present_ranks-1 only): the leader expects no other
   * rank, neither waiting for one when it leaves nor naming it as absent. 0: every rank. */
  int present_ranks;
} dccl_coord_options;

typedef struct dccl_coord_session dccl_coord_session;

/* Leader: starts serving `store`, whose table of epoch 0 must be in place. NULL with a reason. */
dccl_coord_session* dccl_coord_lead(const dccl_coord_options* options, char* error, size_t error_size);
/* Worker: puts `store` in follow mode (before the first call) and starts receiving. */
dccl_coord_session* dccl_coord_follow(const dccl_coord_options* options, char* error, size_t error_size);
/* The leader's publisher: dccl_table_store_commit plus the record the workers are sent. The context
 * is the leader's session. */
int dccl_coord_commit(void* session, dccl_table_store* store, dccl_table* table);
/* Who a worker waits for, for its log lines. */
const char* dccl_coord_leader_name(const dccl_coord_session* session);
typedef struct dccl_coord_stats {
  uint64_t messages_sent, bytes_sent, messages_received, bytes_received;
  uint64_t rejected;      /* messages refused (malformed, wrong token, version, shape) */
  uint64_t connections;   /* connections this session used (reconnects included) */
  uint64_t changes;       /* tables that changed (leader: recorded; worker: applied) */
  uint64_t epochs;        /* leader: epochs decided; worker: epochs received */
} dccl_coord_stats;
/* Ends the session and frees it, leaving its final statistics in `stats` (may be NULL). A leader
 * first sends every worker what it decided, then says goodbye, waiting at most two seconds for that
 * (and for workers that have not joined yet); a worker that was told goodbye runs its last table on. */
void dccl_coord_leave(dccl_coord_session* session, dccl_coord_stats* stats);

void dccl_coord_get_stats(dccl_coord_session* session, dccl_coord_stats* stats);
size_t dccl_coord_memory_bytes(dccl_coord_session* session);

/* Tests: connections (all sessions) the service has accepted or made, and rejected messages. */
void dccl_coord_service_counters(uint64_t* connections, uint64_t* rejected);
/* Tests: rounds of the service thread's loop so far: every 200 us while a session is busy (a leader
 * registering, leaving or serving its frozen table, a worker finding its leader) or the store of a
 * learning leader or of a worker moved (an epoch entered or decided) within the last 20 ms; otherwise
 * when a connection has an event (a message, room to write), a store moves (its bell), or after the
 * idle period (20 ms) at the latest. */
uint64_t dccl_coord_service_rounds(void);
/* Tests: connections the service holds open now. */
int dccl_coord_service_open_connections(void);
/* Tests: bytes of the input and output buffers of the connections the service holds open now (each
 * starts at 4 KiB and grows with the messages in flight, up to 256 KiB in and 1 MiB out), and in
 * `largest_output` (may be NULL) the largest output buffer any connection has had since the service
 * started. */
size_t dccl_coord_service_buffer_bytes(size_t* largest_output);
/* Tests: the idle period, the longest the service waits with nothing to do (default 20 ms; 0: the
 * default). Only its timers wait for it: retries, hello deadlines, the absent-workers warning, the
 * registry connection's release, the end of a pause in accepting (out of file descriptors), a message
 * that could not be written for want of memory. */
void dccl_coord_service_set_idle_period(double seconds);
/* Tests: how long a peer may stay silent on a new connection before its hello (default 5 s; 0: the
 * default). */
void dccl_coord_service_set_hello_timeout(double seconds);

#endif
