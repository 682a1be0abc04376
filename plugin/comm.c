/* plugin/comm.c: creates, configures and destroys the per-communicator state. */
#include "comm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../abi/nccl_profiler_abi.h"
#include "../persist/table_text.h"

dccl_comm* dccl_comm_create(uint32_t slot, int comm_id_known, uint64_t comm_id, int n_ranks, int n_nodes,
                            ncclDebugLogger_t logger) {
  dccl_comm* comm = aligned_alloc(64, sizeof(dccl_comm));
  if (comm == NULL) return NULL;
  memset(comm, 0, sizeof(*comm));
  comm->slot = slot;
  comm->comm_id_known = comm_id_known;
  comm->comm_id = comm_id;
  comm->rank = -1;
  comm->n_ranks = n_ranks;
  comm->n_nodes = n_nodes;
  comm->logger.nccl_logger = logger;
  atomic_flag_clear(&comm->warned_bad_collective);
  atomic_flag_clear(&comm->warned_bad_table);
  atomic_flag_clear(&comm->warned_unusable_action);
  atomic_flag_clear(&comm->warned_no_valid_entry);
  atomic_flag_clear(&comm->warned_nan_entry);
  dccl_settings_load(&comm->settings, &comm->logger);
  dccl_table_store_init(&comm->tables, NULL, comm->settings.epoch_calls);
  return comm;
}

static void load_policy(dccl_comm* comm) {
  const dccl_settings* s = &comm->settings;
  if (s->mode == DCCL_MODE_FIXED) {
    if (s->table_file[0] == '\0') {
      DCCL_WARN(&comm->logger, "DYNAMICCL_MODE=fixed but DYNAMICCL_TABLE_FILE is not set; using NCCL's choices");
    } else {
      dccl_table* table = dccl_table_store_begin(&comm->tables);
      dccl_table_fill(table, DCCL_ACTION_NCCL);
      int rejected = dccl_table_text_load(s->table_file, comm->n_ranks, comm->n_nodes, table, &comm->logger);
      if (rejected < 0) {
        DCCL_WARN(&comm->logger, "fixed mode without a usable table; using NCCL's choices");
      } else {
        dccl_table_store_publish(&comm->tables, table, 0);
        comm->policy_active = 1;
        DCCL_INIT_INFO(&comm->logger, "fixed decision table %s loaded (%d line%s rejected)", s->table_file, rejected,
                       rejected == 1 ? "" : "s");
      }
    }
  }
  if (s->rules_file[0] != '\0') {
    dccl_rule_list* rules = malloc(sizeof(dccl_rule_list));
    if (rules == NULL) {
      DCCL_WARN(&comm->logger, "out of memory reading rules; running without pins");
      return;
    }
    int rejected = dccl_rules_load(s->rules_file, rules, &comm->logger);
    if (rejected >= 0) {
      if (dccl_pins_compile(&comm->pins, rules, comm->n_nodes, comm->n_ranks) != 0) {
        DCCL_WARN(&comm->logger, "out of memory compiling rules; running without pins");
      } else {
        DCCL_INIT_INFO(&comm->logger, "rules %s: %d of %d apply to %d ranks on %d nodes (%d line%s rejected)",
                       s->rules_file, comm->pins.count, rules->count, comm->n_ranks, comm->n_nodes, rejected,
                       rejected == 1 ? "" : "s");
        if (comm->pins.count > 0) comm->policy_active = 1;
      }
    }
    free(rules);
  }
}

void dccl_comm_attach_tuner(dccl_comm* comm, int abi_version) {
  comm->tuner_abi = abi_version;
  load_policy(comm);
  DCCL_INIT_INFO(&comm->logger, "tuner v%d attached: comm %016llx rank %d, %d ranks on %d nodes, mode %s", abi_version,
                 (unsigned long long)comm->comm_id, comm->rank, comm->n_ranks, comm->n_nodes,
                 dccl_mode_name(comm->settings.mode));
}

static int open_trace(dccl_comm* comm) {
  char path[DCCL_PATH_MAX + 64];
  size_t out = 0;
  for (const char* p = comm->settings.trace_file; *p != '\0' && out + 24 < sizeof(path); p++) {
    if (p[0] == '%' && p[1] == 'r') {
      out += (size_t)(comm->rank >= 0 ? snprintf(path + out, sizeof(path) - out, "%d", comm->rank)
                                      : snprintf(path + out, sizeof(path) - out, "x"));
      p++;
    } else if (p[0] == '%' && p[1] == 'p') {
      out += (size_t)snprintf(path + out, sizeof(path) - out, "%ld", (long)getpid());
      p++;
    } else {
      path[out++] = *p;
    }
  }
  path[out] = '\0';
  comm->trace = fopen(path, "w");
  if (comm->trace == NULL) {
    DCCL_WARN(&comm->logger, "cannot open trace file %s: %s; measurements are not written", path, strerror(errno));
    return -1;
  }
  fprintf(comm->trace, "rank,seq,collective,bytes,algorithm,protocol,channels,channels_measured,gpu_start_ns,duration_ns\n");
  return 0;
}

int dccl_comm_attach_profiler(dccl_comm* comm, int abi_version, int rank) {
  comm->profiler_abi = abi_version;
  comm->rank = rank;
  const dccl_settings* s = &comm->settings;
  int want = s->profile == DCCL_PROFILE_ON || (s->profile == DCCL_PROFILE_AUTO && s->trace_file[0] != '\0');
  if (want) {
    if (dccl_queue_init(&comm->queue, s->queue_capacity) != 0 ||
        dccl_event_pool_init(&comm->events, s->event_pool, comm->slot, comm->n_ranks, &comm->queue) != 0) {
      DCCL_WARN(&comm->logger, "out of memory for profiler buffers; running without measurements");
      dccl_queue_free(&comm->queue);
      dccl_event_pool_free(&comm->events);
    } else {
      comm->profiling = 1;
      dccl_event_pool_register(comm->slot, &comm->events);
      if (s->trace_file[0] != '\0') open_trace(comm);
    }
  }
  DCCL_INIT_INFO(&comm->logger, "profiler v%d attached: comm %016llx rank %d, measurements %s", abi_version,
                 (unsigned long long)comm->comm_id, rank, comm->profiling ? "on" : "off");
  return comm->profiling ? (ncclProfileColl | ncclProfileKernelCh) : 0;
}

void dccl_comm_drain(dccl_comm* comm) {
  if (!comm->profiling) return;
  dccl_measurement m;
  while (dccl_queue_pop(&comm->queue, &m)) {
    if (comm->trace != NULL) {
      fprintf(comm->trace, "%d,%llu,%s,%llu,%s,%s,%u,%u,%llu,%llu\n", comm->rank, (unsigned long long)m.seq,
              dccl_coll_name(m.coll), (unsigned long long)m.bytes, dccl_algo_name(m.algo), dccl_proto_name(m.proto),
              m.channels, m.channels_measured, (unsigned long long)m.gpu_start_ns, (unsigned long long)m.duration_ns);
      comm->traced++;
    }
  }
}

static unsigned long long load(_Atomic uint64_t* counter) {
  return (unsigned long long)atomic_load_explicit(counter, memory_order_relaxed);
}

void dccl_comm_destroy(dccl_comm* comm) {
  if (comm == NULL) return;
  if (comm->profiling) {
    dccl_event_pool_unregister(comm->slot);
    dccl_comm_drain(comm);
    dccl_event_counters* e = &comm->events.counters;
    DCCL_INFO(&comm->logger,
              "comm %016llx rank %d: %llu collectives profiled, %llu measured, %llu dropped (queue full), "
              "%llu untracked (pool busy), %llu abandoned, %llu unusable, %llu stale events",
              (unsigned long long)comm->comm_id, comm->rank, load(&e->collectives), load(&e->measured),
              load(&comm->queue.dropped), load(&e->pool_busy), load(&e->abandoned), load(&e->unusable),
              load(&e->stale_events));
    dccl_event_pool_free(&comm->events);
    dccl_queue_free(&comm->queue);
  }
  if (comm->trace != NULL) fclose(comm->trace);
  if (comm->tuner_abi != 0) {
    dccl_tuner_counters* c = &comm->counters;
    DCCL_INFO(&comm->logger,
              "comm %016llx rank %d: %llu calls, %llu policy actions applied, %llu pinned, %llu left to NCCL, "
              "%llu unusable actions, %llu bad inputs, %llu table switches",
              (unsigned long long)comm->comm_id, comm->rank, load(&comm->calls), load(&c->applied), load(&c->pinned),
              load(&c->nccl_kept), load(&c->unusable), load(&c->bad_input), load(&comm->tables.switches));
  }
  dccl_pins_free(&comm->pins);
  free(comm);
}
