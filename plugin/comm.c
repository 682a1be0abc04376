/* plugin/comm.c: creates, configures and destroys the per-communicator state. */
#include "comm.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../abi/nccl_profiler_abi.h"
#include "../coord/coordinator.h"
#include "../core/clock.h"
#include "../persist/atomic_file.h"
#include "../persist/policy_file.h"
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
  atomic_flag_clear(&comm->warned_ambiguous_chunk);
  atomic_flag_clear(&comm->warned_unknown_events);
  dccl_settings_load(&comm->settings, &comm->logger);
  dccl_table_store_init(&comm->tables, comm->settings.epoch_calls);
  return comm;
}

static void load_policy(dccl_comm* comm) {
  const dccl_settings* s = &comm->settings;
  if (s->mode == DCCL_MODE_FIXED) {
    if (s->table_file[0] == '\0') {
      DCCL_WARN(&comm->logger, "DYNAMICCL_MODE=fixed but DYNAMICCL_TABLE_FILE is not set; using NCCL's choices");
    } else {
      dccl_table* table = dccl_table_store_initial(&comm->tables);
      int rejected = dccl_table_text_load(s->table_file, comm->n_ranks, comm->n_nodes, table, &comm->logger);
      if (rejected < 0) {
        dccl_table_fill(table, DCCL_ACTION_NCCL);
        DCCL_WARN(&comm->logger, "fixed mode without a usable table; using NCCL's choices");
      } else {
        comm->policy_active = 1;
        comm->policy_loaded = 1;
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

static void learner_inputs(dccl_comm* comm, dccl_learner_inputs* in) {
  in->calls = comm->call_log;
  in->costs = comm->costs;
  in->measurements = comm->profiling ? &comm->queue : NULL;
  in->tables = &comm->tables;
  in->call_counter = &comm->calls;
  in->calls_started = comm->profiling ? &comm->events.calls_started : NULL;
  in->logger = &comm->logger;
  in->commit = comm->coord != NULL ? dccl_coord_commit : NULL;
  in->commit_context = comm->coord;
}

static void free_learning(dccl_comm* comm) {
  if (comm->learner != NULL) {
    dccl_learner_free(comm->learner);
    free(comm->learner);
  }
  free(comm->call_log);
  free(comm->costs);
  comm->learner = NULL;
  comm->call_log = NULL;
  comm->costs = NULL;
  atomic_store_explicit(&comm->learning, 0, memory_order_relaxed);
}

static void reject_saved_policy(dccl_comm* comm, int will_save, const char* reason);

/* Saves the learned policy (learn mode, something learned, a path configured). */
static void save_policy(dccl_comm* comm, int at_exit) {
  if (!atomic_load_explicit(&comm->learning, memory_order_acquire) || comm->policy_path[0] == '\0' ||
      comm->policy_save_disabled || comm->learner->agent.stats.observations == 0)
    return;
  dccl_policy_meta meta = {DCCL_POLICY_VERSION, comm->fingerprint, comm->learner->agent.stats.observations,
                           (uint32_t)comm->n_ranks, (uint32_t)comm->n_nodes,
                           (uint32_t)comm->learner->options.agent.space.max_channels,
                           (uint32_t)comm->learner->options.agent.space.tune_chunk, 0};
  char error[512];
  /* Since this communicator started, another (of another shape, sharing DYNAMICCL_POLICY_FILE) may have
   * saved its policy there: it is kept (the first saved wins), and this one stops saving. */
  dccl_policy_save_plan plan = dccl_policy_plan_save(comm->policy_path, comm->fingerprint, error, sizeof(error));
  if (plan == DCCL_SAVE_AFTER_SET_ASIDE) reject_saved_policy(comm, 1, error);
  if (plan == DCCL_SAVE_NOT) {
    comm->policy_save_disabled = 1;
    DCCL_WARN(&comm->logger, "not saving the policy: %s; it is kept (DYNAMICCL_POLICY_DIR keeps one file per topology)",
              error);
  }
  if (comm->policy_save_disabled) return;
  if (!comm->stale_temporaries_removed) {
    /* A job killed mid-save (a scheduler's time limit) leaves its temporary file: megabytes, job after job. */
    comm->stale_temporaries_removed = 1;
    int removed = dccl_remove_stale_temporaries(comm->policy_path, DCCL_STALE_TEMPORARY_SECONDS, error, sizeof(error));
    if (removed > 0)
      DCCL_INFO(&comm->logger, "removed %d temporary file%s that interrupted saves left beside %s (over %d s old)",
                removed, removed == 1 ? "" : "s", comm->policy_path, DCCL_STALE_TEMPORARY_SECONDS);
  }
  if (dccl_policy_save(comm->policy_path, &meta, &comm->learner->agent,
                       comm->learner->trigger_ready ? &comm->learner->trigger : NULL, comm->learner->leftovers, error,
                       sizeof(error)) != 0)
    DCCL_WARN(&comm->logger, "cannot save the policy: %s", error);
  else if (at_exit)
    DCCL_INFO(&comm->logger, "policy saved to %s (%llu measurements learned from)", comm->policy_path,
              (unsigned long long)meta.observations);
  comm->last_save_seconds = dccl_monotonic_seconds();
}

static void coord_options(dccl_comm* comm, dccl_coord_options* o) {
  memset(o, 0, sizeof(*o));
  o->comm_id = comm->comm_id;
  o->rank = comm->rank;
  o->n_ranks = comm->n_ranks;
  o->epoch_calls = 1ULL << comm->tables.epoch_shift;
  o->store = &comm->tables;
  o->logger = &comm->logger;
  if (comm->n_nodes > 1) snprintf(o->registry, sizeof(o->registry), "%s", comm->settings.coord_registry);
  o->secret = comm->settings.coord_secret;
  o->drop_probability = comm->settings.coord_drop;
  o->pins = &comm->pins; /* sent by the leader; a worker's are rank 0's */
  o->n_nodes = comm->n_nodes;
  o->absent_warning_seconds = comm->settings.coord_timeout_seconds;
  o->present_ranks = comm->settings.coord_present_ranks;
}

/* A worker of a coordinated communicator: no agents and none of its own files, only the leader's tables
 * and rule pins. */
static void setup_worker(dccl_comm* comm) {
  dccl_coord_options o;
  coord_options(comm, &o);
  char error[512];
  comm->coord = dccl_coord_follow(&o, error, sizeof(error));
  if (comm->coord == NULL) {
    /* Without the leader's tables this rank cannot know what the others run: it must not guess. */
    DCCL_WARN(&comm->logger, "cannot follow the leader of comm %016llx: %s; this rank keeps NCCL's choices, which may "
              "differ from the other ranks' and hang NCCL: fix the cause or set DYNAMICCL_COORD=off",
              (unsigned long long)comm->comm_id, error);
    return;
  }
  comm->policy_active = 1;
  DCCL_INIT_INFO(&comm->logger, "coordination: rank %d follows %s", comm->rank, dccl_coord_leader_name(comm->coord));
}

/* A saved policy this job cannot use: learning, it is set aside as <path>.rejected before anything is
 * saved over it; if that fails, nothing is saved. Frozen, nothing is saved anyway: it stays. */
static void reject_saved_policy(dccl_comm* comm, int will_save, const char* reason) {
  if (!will_save) {
    DCCL_WARN(&comm->logger, "ignoring the saved policy: %s", reason);
    return;
  }
  char aside[sizeof(comm->policy_path) + 16], error[512];
  if (dccl_policy_set_aside(comm->policy_path, aside, sizeof(aside), error, sizeof(error)) == 0) {
    DCCL_WARN(&comm->logger, "ignoring the saved policy: %s; it is kept as %s, and this job's policy is saved in "
              "its place", reason, aside);
  } else {
    comm->policy_save_disabled = 1;
    DCCL_WARN(&comm->logger, "ignoring the saved policy: %s; it cannot be set aside (%s), so this job's policy will "
              "not be saved", reason, error);
  }
}

/* Loads the saved policy at comm->policy_path into the learner; returns 1 if it did. Decides whether
 * the learned policy may later be saved there (`will_save`: learn mode): freely when there was none;
 * after setting aside one that is no usable policy; never over one that could not be read. */
static int warm_start(dccl_comm* comm, int will_save) {
  char error[512];
  dccl_policy_meta meta;
  dccl_policy_status status =
    dccl_policy_load(comm->policy_path, comm->fingerprint, &meta, &comm->learner->agent,
                     comm->learner->trigger_ready ? &comm->learner->trigger : NULL, comm->learner->leftovers, error,
                     sizeof(error));
  switch (status) {
  case DCCL_POLICY_LOADED:
    DCCL_INIT_INFO(&comm->logger, "warm start from %s (%llu measurements)", comm->policy_path,
                   (unsigned long long)meta.observations);
    return 1;
  case DCCL_POLICY_MISSING:
    DCCL_INIT_INFO(&comm->logger, "no saved policy at %s yet: learning from scratch", comm->policy_path);
    return 0;
  case DCCL_POLICY_REJECTED:
    reject_saved_policy(comm, will_save, error);
    return 0;
  case DCCL_POLICY_FOREIGN:
    /* A sound policy of another communicator's shape (DYNAMICCL_POLICY_FILE shared by several), or of a
     * newer DynamICCL: it stays, and this communicator's is not saved over it. */
    comm->policy_save_disabled = 1;
    DCCL_WARN(&comm->logger, "ignoring the saved policy: %s%s", error,
              will_save ? "; it is left as it is, and this communicator's policy will not be saved there "
                          "(DYNAMICCL_POLICY_DIR keeps one file per topology)"
                        : "");
    return 0;
  case DCCL_POLICY_UNREADABLE:
    comm->policy_save_disabled = 1;
    DCCL_WARN(&comm->logger, "ignoring the saved policy: %s%s", error,
              will_save ? "; it is left as it is, and this job's policy will not be saved" : "");
    return 0;
  }
  return 0;
}

/* Rank 0 of a coordinated communicator serves its tables to the other ranks, which wait for them: the
 * learner's (`learning`), or else the table in force now, which never changes (a frozen policy, or
 * NCCL's choices when there is none). Returns 0 when it leads. */
static int lead(dccl_comm* comm, int learning) {
  dccl_coord_options o;
  coord_options(comm, &o);
  o.frozen = !learning;
  char error[512];
  comm->coord = dccl_coord_lead(&o, error, sizeof(error));
  if (comm->coord == NULL) {
    /* The workers will wait for a leader that never comes; say so loudly. */
    DCCL_WARN(&comm->logger, "cannot lead the coordination of comm %016llx: %s; the other ranks will wait for it",
              (unsigned long long)comm->comm_id, error);
    return -1;
  }
  const char* table = learning                                ? "learning"
                      : !comm->policy_loaded                   ? "NCCL's choices, frozen"
                      : comm->settings.mode == DCCL_MODE_FIXED ? "its fixed table, frozen"
                                                               : "its saved policy, frozen";
  DCCL_INIT_INFO(&comm->logger, "coordination: rank 0 leads comm %016llx (%d ranks, %s, %s, %d rule pin%s)",
                 (unsigned long long)comm->comm_id, comm->n_ranks,
                 o.registry[0] != '\0' ? "tcp through the registry" : "unix sockets", table, comm->pins.count,
                 comm->pins.count == 1 ? "" : "s");
  return 0;
}

/* How the ranks of a multi-rank communicator agree, decided from configuration alone so that every rank
 * reaches the same answer. Every policy other than NCCL's own choices is rank 0's, which the other ranks
 * follow: learning, a saved policy, a fixed table, rule pins. Where the ranks cannot follow rank 0, a
 * fixed table and rule pins are read by each rank from its own files, as NCCL's example tuner does, while
 * learning and a saved policy give way to NCCL's choices. */
typedef enum { RUN_ALONE, RUN_LEADER, RUN_WORKER, RUN_NCCL } coordination_role;

static coordination_role coordination_role_of(dccl_comm* comm, dccl_mode* mode, int* downgraded) {
  const dccl_settings* s = &comm->settings;
  if (comm->n_ranks <= 1 || strcmp(s->coordination, "solo") == 0) return RUN_ALONE;
  int agents = *mode == DCCL_MODE_LEARN || *mode == DCCL_MODE_FROZEN;
  const char* own_files = *mode == DCCL_MODE_FIXED ? "decision table and rules" : "rules"; /* without agents */
  if (comm->rank < 0) { /* no profiler half told the rank; learning is refused later for the same reason */
    if (!agents)
      DCCL_INFO(&comm->logger, "without the profiler half this rank does not know its rank: each rank reads its own "
                "%s (every rank must read the same)", own_files);
    else if (*mode == DCCL_MODE_FROZEN)
      DCCL_WARN(&comm->logger, "without the profiler half (NCCL_PROFILER_PLUGIN=dynamiccl) this rank does not know "
                "its rank and cannot follow rank 0: each rank of the %d-rank communicator runs its own saved policy "
                "(every rank must read the same file)", comm->n_ranks);
    return RUN_ALONE;
  }
  if (strcmp(s->coordination, "off") == 0) {
    if (*mode == DCCL_MODE_LEARN) {
      DCCL_WARN(&comm->logger, "DYNAMICCL_COORD=off: the %d-rank communicator runs frozen, each rank from its own "
                "saved policy (every rank must read the same file)", comm->n_ranks);
      *mode = DCCL_MODE_FROZEN;
      *downgraded = 1;
    }
    return RUN_ALONE;
  }
  if (comm->n_nodes > 1 && s->coord_registry[0] == '\0') {
    if (!agents) {
      DCCL_INFO(&comm->logger, "no coordinator across %d nodes (DYNAMICCL_COORD or torchrun's MASTER_ADDR): each rank "
                "reads its own %s (every rank must read the same)", comm->n_nodes, own_files);
      return RUN_ALONE;
    }
    DCCL_WARN(&comm->logger,
              "%s across %d nodes needs a coordinator so that every rank decides alike: set DYNAMICCL_COORD=host:port "
              "(a port any rank's host can bind, reachable from all nodes), or run under torchrun "
              "(MASTER_ADDR/MASTER_PORT), or set DYNAMICCL_COORD=off if every rank reads the same policy file; using "
              "NCCL's choices meanwhile",
              *mode == DCCL_MODE_LEARN ? "learning" : "running a saved policy", comm->n_nodes);
    return RUN_NCCL;
  }
  return comm->rank > 0 ? RUN_WORKER : RUN_LEADER;
}

/* Sets up the agents: learning (returns 1, the learner ready but not yet learning), or a frozen policy
 * published (or NCCL's choices when there is none or the agents cannot be set up; returns 0). */
static int start_agents(dccl_comm* comm, dccl_mode mode, int downgraded) {
  const dccl_settings* s = &comm->settings;
  dccl_learner_options o;
  memset(&o, 0, sizeof(o));
  o.trigger = s->agent == DCCL_STRATEGY_AUTOCCL ? DCCL_TRIGGER_OFF : (int)s->trigger; /* AutoCCL holds: no trigger */
  o.cost = s->cost;
  o.learn_after_switch = s->learn_after_switch;
  o.learn_first_calls = s->learn_first_calls;
  dccl_agent_default_options(&o.agent);
  o.agent.learning = mode == DCCL_MODE_LEARN;
  o.agent.epsilon_start = s->epsilon;
  o.agent.epsilon_restart = s->epsilon / 2;
  o.agent.epsilon_min = s->epsilon_min;
  o.agent.explore_budget = s->explore_budget_pct / 100.0;
  o.agent.guard = s->guard_pct / 100.0;
  o.agent.hold_after = s->learn_for;
  o.agent.q.gamma = s->gamma;
  o.agent.space.max_channels = s->max_channels;
  o.agent.space.tune_chunk = comm->tuner_abi >= 6;
  _Static_assert(sizeof(o.agent.space.buffer_bytes) == sizeof(s->nccl_buffer_bytes), "one buffer size per protocol");
  memcpy(o.agent.space.buffer_bytes, s->nccl_buffer_bytes, sizeof(o.agent.space.buffer_bytes));
  o.agent.n_ranks = comm->n_ranks;
  o.agent.n_nodes = comm->n_nodes;
  o.agent.batch_size = s->batch_size;
  o.agent.model_intensity = s->model_intensity;
  uint64_t seed = s->seed_given ? s->seed : dccl_mix64(comm->comm_id ^ ((uint64_t)(uint32_t)comm->rank << 32));
  o.agent.seed = seed;
  o.agent.strategy = (dccl_strategy)s->agent;
  dccl_trigger_default_options(&o.trigger_options);
  o.trigger_options.k = s->cusum_k;
  o.trigger_options.h = s->cusum_h;
  o.trigger_options.seed = seed;
  comm->learner = malloc(sizeof(dccl_learner));
  if (comm->learner == NULL || dccl_learner_init(comm->learner, &o) != 0) {
    free(comm->learner);
    comm->learner = NULL;
    DCCL_WARN(&comm->logger, "out of memory for the agents; using NCCL's choices");
    return 0;
  }
  int loaded = comm->policy_path[0] != '\0' && warm_start(comm, mode == DCCL_MODE_LEARN);
  if (mode == DCCL_MODE_FROZEN) {
    if (loaded) {
      dccl_learner_publish_initial(comm->learner, &comm->tables);
      comm->policy_active = 1;
      comm->policy_loaded = 1;
      DCCL_INIT_INFO(&comm->logger, "frozen policy in force");
    } else if (downgraded) {
      DCCL_INIT_INFO(&comm->logger, "no saved policy to run frozen; using NCCL's choices");
    } else {
      DCCL_WARN(&comm->logger, "frozen mode without a usable saved policy; using NCCL's choices");
    }
    free_learning(comm);
    return 0;
  }
  comm->call_log = calloc(1, sizeof(dccl_call_log));
  comm->costs = calloc(1, sizeof(dccl_cost_snapshots));
  if (comm->call_log == NULL || comm->costs == NULL) {
    free_learning(comm);
    DCCL_WARN(&comm->logger, "out of memory for the agents; using NCCL's choices");
    return 0;
  }
  if (loaded) dccl_learner_publish_initial(comm->learner, &comm->tables);
  return 1;
}

/* Learn and frozen modes on rank 0 or a rank alone (`downgraded`: learn turned frozen, already warned). */
static void setup_learning(dccl_comm* comm, coordination_role role, dccl_mode mode, int downgraded) {
  const dccl_settings* s = &comm->settings;
  comm->fingerprint = dccl_policy_fingerprint(comm->n_ranks, comm->n_nodes, s->max_channels, comm->tuner_abi >= 6);
  if (s->policy_file[0] != '\0') {
    snprintf(comm->policy_path, sizeof(comm->policy_path), "%s", s->policy_file);
  } else if (s->policy_dir[0] != '\0') {
    char error[512];
    if (mode == DCCL_MODE_LEARN && dccl_ensure_directory(s->policy_dir, error, sizeof(error)) != 0)
      DCCL_WARN(&comm->logger, "DYNAMICCL_POLICY_DIR: %s; this job's policy cannot be saved there", error);
    snprintf(comm->policy_path, sizeof(comm->policy_path), "%s/policy-%016llx.bin", s->policy_dir,
             (unsigned long long)comm->fingerprint);
  }
  if (mode == DCCL_MODE_LEARN && !comm->profiling) {
    DCCL_WARN(&comm->logger,
              "learning needs GPU-timed measurements, but no profiler half is paired with this communicator (needs "
              "NCCL >= 2.27 and NCCL_PROFILER_PLUGIN=dynamiccl); running frozen%s",
              role == RUN_LEADER ? ", the other ranks following this rank's saved policy" : "");
    mode = DCCL_MODE_FROZEN;
    downgraded = 1;
  }
  /* Rank 0 leads whatever start_agents made of it: the workers wait for its table. */
  int learning = start_agents(comm, mode, downgraded);
  if (role == RUN_LEADER && lead(comm, learning) != 0) {
    if (learning) free_learning(comm);
    return;
  }
  if (!learning) return;
  comm->policy_active = 1;
  comm->last_save_seconds = dccl_monotonic_seconds();
  atomic_store_explicit(&comm->learning, 1, memory_order_release);
  DCCL_INIT_INFO(&comm->logger, "learning: %d actions, trigger %s, %.1f MiB for the agents",
                 comm->learner->agent.n_actions[DCCL_COLL_ALLREDUCE],
                 s->trigger == DCCL_TRIGGER_LSTM ? "lstm+cusum" : s->trigger == DCCL_TRIGGER_CUSUM ? "cusum" : "off",
                 dccl_learning_memory_bytes(comm->learner) / 1048576.0);
}

/* Puts the policy in force: NCCL's choices (default mode without rules), this rank's own, or rank 0's. */
static void setup_policy(dccl_comm* comm) {
  const dccl_settings* s = &comm->settings;
  if (s->mode == DCCL_MODE_DEFAULT && s->rules_file[0] == '\0') return;
  dccl_mode mode = s->mode;
  int downgraded = 0;
  coordination_role role = coordination_role_of(comm, &mode, &downgraded);
  if (role == RUN_WORKER) { /* its own files could differ from rank 0's */
    setup_worker(comm);
    return;
  }
  load_policy(comm);
  if (role == RUN_NCCL) return;
  if (mode == DCCL_MODE_LEARN || mode == DCCL_MODE_FROZEN) setup_learning(comm, role, mode, downgraded);
  else if (role == RUN_LEADER) lead(comm, 0);
}

void dccl_comm_attach_tuner(dccl_comm* comm, int abi_version) {
  comm->tuner_abi = abi_version;
  setup_policy(comm);
  DCCL_INIT_INFO(&comm->logger, "tuner v%d attached: comm %016llx rank %d, %d ranks on %d nodes, mode %s", abi_version,
                 (unsigned long long)comm->comm_id, comm->rank, comm->n_ranks, comm->n_nodes,
                 dccl_mode_name(comm->settings.mode));
}

/* The communicators of this process that write a trace file: two whose names come out alike (the same
 * rank of two communicators, no %c in the name) would truncate and interleave one file. Init and destroy
 * only. */
#define OPEN_TRACES 256
static pthread_mutex_t open_traces_lock = PTHREAD_MUTEX_INITIALIZER;
static const dccl_comm* open_traces[OPEN_TRACES];

/* Whether another communicator of the process writes `path` (lock held). */
static int trace_path_taken(const char* path) {
  for (int i = 0; i < OPEN_TRACES; i++)
    if (open_traces[i] != NULL && strcmp(open_traces[i]->trace_path, path) == 0) return 1;
  return 0;
}

/* Claims `path` as comm->trace_path, with ".<communicator id>" appended where another communicator of
 * the process writes it already, and ".<communicator id>.<n>" where that is taken too (the ranks of one
 * communicator that a process drives, with no %r in the name); returns 1 when the name was changed. */
static int claim_trace_path(dccl_comm* comm, const char* path) {
  char* name = comm->trace_path;
  size_t size = sizeof(comm->trace_path), length = (size_t)snprintf(name, size, "%s", path);
  int changed = 0;
  pthread_mutex_lock(&open_traces_lock);
  for (int n = 1; trace_path_taken(name) && n <= OPEN_TRACES && length < size; n++, changed = 1) {
    if (n == 1) snprintf(name + length, size - length, ".%016llx", (unsigned long long)comm->comm_id);
    else snprintf(name + length, size - length, ".%016llx.%d", (unsigned long long)comm->comm_id, n);
  }
  for (int i = 0; i < OPEN_TRACES; i++)
    if (open_traces[i] == NULL) {
      open_traces[i] = comm;
      break;
    }
  pthread_mutex_unlock(&open_traces_lock);
  return changed;
}

static void release_trace_path(const dccl_comm* comm) {
  pthread_mutex_lock(&open_traces_lock);
  for (int i = 0; i < OPEN_TRACES; i++)
    if (open_traces[i] == comm) open_traces[i] = NULL;
  pthread_mutex_unlock(&open_traces_lock);
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
    } else if (p[0] == '%' && p[1] == 'c') {
      out += (size_t)snprintf(path + out, sizeof(path) - out, "%016llx", (unsigned long long)comm->comm_id);
      p++;
    } else {
      path[out++] = *p;
    }
  }
  path[out] = '\0';
  if (claim_trace_path(comm, path))
    DCCL_INFO(&comm->logger, "another communicator of this process writes the trace file of this one's name; this one "
              "writes %s (%%c in DYNAMICCL_TRACE_FILE names each communicator's)", comm->trace_path);
  comm->trace = fopen(comm->trace_path, "w");
  if (comm->trace == NULL) {
    DCCL_WARN(&comm->logger, "cannot open trace file %s: %s; measurements are not written", comm->trace_path,
              strerror(errno));
    return -1;
  }
  fprintf(comm->trace, "rank,seq,collective,bytes,algorithm,protocol,channels,channels_measured,gpu_start_ns,duration_ns,"
                       "call_order,host_launch_ns,host_done_ns\n");
  return 0;
}

int dccl_comm_attach_profiler(dccl_comm* comm, int abi_version, int rank) {
  comm->profiler_abi = abi_version;
  comm->rank = rank;
  const dccl_settings* s = &comm->settings;
  int want = s->profile == DCCL_PROFILE_ON ||
             (s->profile == DCCL_PROFILE_AUTO && (s->trace_file[0] != '\0' || s->mode == DCCL_MODE_LEARN));
  if (want) {
    if (dccl_queue_init(&comm->queue, s->queue_capacity) != 0 ||
        dccl_event_pool_init(&comm->events, s->event_pool, comm->slot, comm->n_ranks, &comm->queue,
                             s->cost != DCCL_COST_SPAN || s->trace_file[0] != '\0') != 0) {
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
  if (!comm->profiling) return 0;
  /* P2p only to count point-to-point calls between collectives (their kernels hold the stream too).
   * CollApi (v5+) to know the calls captured into CUDA graphs: NCCL 2.28-2.30 start it under Coll or
   * KernelCh already, asked for in case a later one does not. */
  return ncclProfileColl | ncclProfileKernelCh | (comm->events.stamps != NULL ? ncclProfileP2p : 0) |
         (abi_version >= 5 ? ncclProfileCollApi : 0);
}

#define BEHIND_BACKLOG 256 /* measurements waiting at the start of a pass: the learner is behind the job */
#define PAYBACK_STEPS 8    /* owed DQN training steps paid back per pass once caught up (~1 ms) */

int dccl_comm_drain(dccl_comm* comm, int max_measurements) {
  if (!comm->profiling) return 0;
  if (atomic_load_explicit(&comm->events.unknown_ready, memory_order_acquire))
    DCCL_WARN_ONCE(&comm->logger, &comm->warned_unknown_events,
                   "NCCL profiler events DynamICCL cannot interpret (the first: %s); those collectives are not measured "
                   "(reported once per communicator)",
                   comm->events.unknown_description);
  /* The inputs are read only after the acquire sees learning: a tuner attaching meanwhile (outside the
   * registry's lock) writes them, then publishes them with learning. */
  int learning = atomic_load_explicit(&comm->learning, memory_order_acquire);
  dccl_learner_inputs in;
  memset(&in, 0, sizeof(in));
  if (learning) {
    learner_inputs(comm, &in);
    dccl_learner_defer_training(comm->learner, dccl_queue_backlog(&comm->queue) >= BEHIND_BACKLOG);
    dccl_learner_begin(comm->learner, &in);
  }
  /* A bounded pass: the learner publishes at the end of each, so a learner slower than the job
   * still publishes regularly (the measurements left wait for the next pass). */
  dccl_measurement m;
  int taken = 0;
  for (; taken < max_measurements && dccl_queue_pop(&comm->queue, &m); taken++) {
    if (learning) dccl_learner_take(comm->learner, &in, &m);
    if (comm->trace != NULL) {
      fprintf(comm->trace, "%d,%llu,%s,%llu,%s,%s,%u,%u,%llu,%llu,%llu,%llu,%llu\n", comm->rank, (unsigned long long)m.seq,
              dccl_coll_name(m.coll), (unsigned long long)m.bytes, dccl_algo_name(m.algo), dccl_proto_name(m.proto),
              m.channels, m.channels_measured, (unsigned long long)m.gpu_start_ns, (unsigned long long)m.duration_ns,
              (unsigned long long)m.call_order, (unsigned long long)m.host_launch_ns, (unsigned long long)m.host_done_ns);
      comm->traced++;
    }
  }
  if (learning) {
    dccl_learner_end(comm->learner, &in);
    if (dccl_queue_backlog(&comm->queue) < BEHIND_BACKLOG / 4) dccl_learner_pay_training(comm->learner, PAYBACK_STEPS);
    if (comm->settings.save_seconds > 0 && dccl_monotonic_seconds() - comm->last_save_seconds >= comm->settings.save_seconds)
      save_policy(comm, 0);
  }
  return taken;
}

const dccl_table* dccl_comm_wait_for_table(dccl_comm* comm, uint64_t call) {
  uint64_t started = dccl_monotonic_ns();
  uint64_t patience = (uint64_t)(comm->settings.coord_timeout_seconds * 1e9);
  uint64_t report_at = started + patience;
  for (unsigned spin = 0;; spin++) {
    const dccl_table* table = dccl_table_store_for_call(&comm->tables, call);
    if (table != NULL) {
      dccl_bump(&comm->counters.waits);
      atomic_store_explicit(&comm->counters.wait_ns,
                            atomic_load_explicit(&comm->counters.wait_ns, memory_order_relaxed) +
                              (dccl_monotonic_ns() - started),
                            memory_order_relaxed);
      return table;
    }
    if (spin < 64) continue;
    struct timespec pause = {0, spin < 1024 ? 2000 : 20000};
    nanosleep(&pause, NULL);
    uint64_t now = dccl_monotonic_ns();
    if (now >= report_at) {
      /* Waiting is correct (running without the leader's table could make ranks disagree); make it
       * visible. */
      uint64_t epoch = call >> comm->tables.epoch_shift;
      DCCL_WARN(&comm->logger, "rank %d has waited %.1f s for %s to decide epoch %llu (call %llu)%s", comm->rank,
                1e-9 * (double)(now - started),
                comm->coord != NULL ? dccl_coord_leader_name(comm->coord) : "the leader", (unsigned long long)epoch,
                (unsigned long long)call,
                epoch == 0 ? ": rank 0 may run no policy (every rank needs the same DYNAMICCL_MODE and "
                             "DYNAMICCL_RULES_FILE setting), or not be reachable (DYNAMICCL_COORD; "
                             "DYNAMICCL_COORD=off makes each rank read its own files)"
                           : "");
      report_at = now + patience;
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
    while (dccl_comm_drain(comm, DCCL_DRAIN_STEP) == DCCL_DRAIN_STEP) {
    }
    if (comm->learner != NULL && atomic_load_explicit(&comm->learning, memory_order_acquire)) {
      /* The call after the last measured one may have given no measurement (point to point, the pool
       * or queue full): the measurement held for its stream cost is learned before the policy is saved. */
      dccl_learner_inputs in;
      memset(&in, 0, sizeof(in));
      learner_inputs(comm, &in);
      dccl_learner_flush(comm->learner, &in);
    }
    dccl_event_counters* e = &comm->events.counters;
    DCCL_INFO(&comm->logger,
              "comm %016llx rank %d: %llu collectives profiled, %llu measured, %llu dropped (queue full), "
              "%llu untracked (pool busy), %llu abandoned, %llu unusable, %llu stale events, %llu not interpreted, "
              "%llu CUDA-graph replays (not measured)",
              (unsigned long long)comm->comm_id, comm->rank, load(&e->collectives), load(&e->measured),
              load(&comm->queue.dropped), load(&e->pool_busy), load(&e->abandoned), load(&e->unusable),
              load(&e->stale_events), load(&e->unknown_events), load(&e->graph_replays));
    dccl_event_pool_free(&comm->events);
    dccl_queue_free(&comm->queue);
  }
  if (comm->trace != NULL) fclose(comm->trace);
  release_trace_path(comm);
  if (comm->tuner_abi != 0) {
    dccl_tuner_counters* c = &comm->counters;
    DCCL_INFO(&comm->logger,
              "comm %016llx rank %d: %llu calls, %llu policy actions applied, %llu pinned, %llu left to NCCL, "
              "%llu unusable actions, %llu bad inputs, %llu table switches, %llu chunk sizes set (%llu left to NCCL: "
              "a group's decisions disagreed), %llu captured into CUDA graphs (the exploited action)",
              (unsigned long long)comm->comm_id, comm->rank, load(&comm->calls), load(&c->applied), load(&c->pinned),
              load(&c->nccl_kept), load(&c->unusable), load(&c->bad_input), load(&comm->tables.switches),
              load(&c->chunk_set), load(&c->chunk_ambiguous), load(&c->captured));
  }
  if (comm->coord != NULL) {
    dccl_coord_stats c;
    dccl_coord_leave(comm->coord, &c);
    comm->coord = NULL;
    DCCL_INFO(&comm->logger,
              "coordination: comm %016llx rank %d: %llu epochs, %llu table changes, %llu messages (%llu bytes) sent, "
              "%llu (%llu bytes) received, %llu rejected, %llu connections; waited %llu times, %.3f ms in all",
              (unsigned long long)comm->comm_id, comm->rank, (unsigned long long)c.epochs, (unsigned long long)c.changes,
              (unsigned long long)c.messages_sent, (unsigned long long)c.bytes_sent,
              (unsigned long long)c.messages_received, (unsigned long long)c.bytes_received,
              (unsigned long long)c.rejected, (unsigned long long)c.connections, load(&comm->counters.waits),
              1e-6 * (double)load(&comm->counters.wait_ns));
  }
  if (comm->learner != NULL) {
    dccl_learner* l = comm->learner;
    dccl_agent_stats* a = &l->agent.stats;
    int leveled;
    double largest_level;
    dccl_agent_levels(&l->agent, &leveled, &largest_level);
    DCCL_INFO(&comm->logger,
              "learner: %llu measurements (%llu unmatched, %llu of them of calls it lost; %llu whose next call was waiting, %llu charged a leftover; %llu right after a switch of action, %llu first of a run of their cell, %llu launched after a host pause and %llu first of their collective, datatype, algorithm and protocol, not learned), %llu tables published, %llu congestion onsets, %llu "
              "recoveries, %llu readings left out as bursts of slow calls, %llu guard trips, %llu loaded cells this job contradicted, %d took this job's level (the farthest %+.1f%%), %.1f us of background CPU per 1000 measurements, %llu DQN training steps put off "
              "while behind (%llu dropped, %u still owed), %.1f MiB",
              (unsigned long long)l->counters.measurements, (unsigned long long)l->counters.unjoined,
              (unsigned long long)l->counters.lost_calls, (unsigned long long)l->counters.stream_timed,
              (unsigned long long)l->counters.leftover_charged, (unsigned long long)l->counters.after_switch,
              (unsigned long long)l->counters.run_starts, (unsigned long long)l->counters.after_pause,
              (unsigned long long)l->counters.first_calls,
              (unsigned long long)l->counters.publications, (unsigned long long)l->counters.onsets,
              (unsigned long long)l->counters.recoveries, (unsigned long long)a->burst_readings,
              (unsigned long long)a->guard_trips,
              (unsigned long long)a->loaded_restarts, leveled, 100.0 * (exp(largest_level) - 1),
              /* ns per measurement = us per 1000 measurements */
              l->counters.measurements ? (double)l->counters.cpu_ns / (double)l->counters.measurements : 0.0,
              (unsigned long long)a->training_deferred, (unsigned long long)a->training_dropped, l->agent.training_owed,
              dccl_learning_memory_bytes(comm->learner) / 1048576.0);
    save_policy(comm, 1);
  }
  free_learning(comm);
  dccl_pins_free(&comm->pins);
  free(comm);
}
