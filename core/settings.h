/* core/settings.h: DynamICCL's settings, read from DYNAMICCL_* environment variables when a
 * communicator is initialised. Invalid values are reported once and replaced by the default. */
#ifndef DYNAMICCL_CORE_SETTINGS_H
#define DYNAMICCL_CORE_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#include "log.h"

typedef enum {
  DCCL_MODE_DEFAULT = 0, /* NCCL's own choice, cost table untouched */
  DCCL_MODE_FIXED = 1,   /* decisions from DYNAMICCL_TABLE_FILE */
  DCCL_MODE_LEARN = 2,   /* the agents explore and learn online */
  DCCL_MODE_FROZEN = 3   /* a saved policy, exploited without exploration or learning */
} dccl_mode;

typedef enum { DCCL_TRIGGER_OFF = 0, DCCL_TRIGGER_CUSUM = 1, DCCL_TRIGGER_LSTM = 2 } dccl_trigger_setting;

/* What the learner charges a call (DYNAMICCL_COST; plugin/learner.c). */
typedef enum dccl_cost_mode {
  DCCL_COST_SPAN = 0,    /* its kernel span */
  DCCL_COST_STREAM = 1,  /* the time it kept the stream where the next call was waiting */
  DCCL_COST_LEFTOVER = 2 /* its span plus what its action leaves to the next call (agents/leftover.h) */
} dccl_cost_mode;

typedef enum { DCCL_PROFILE_AUTO = -1, DCCL_PROFILE_OFF = 0, DCCL_PROFILE_ON = 1 } dccl_profile_setting;

#define DCCL_PATH_MAX 1024

typedef struct dccl_settings {
  dccl_mode mode;
  char table_file[DCCL_PATH_MAX];
  char rules_file[DCCL_PATH_MAX];
  char trace_file[DCCL_PATH_MAX];
  dccl_profile_setting profile;
  unsigned queue_capacity; /* measurements buffered per communicator (power of two) */
  unsigned event_pool;     /* collectives tracked in flight per communicator (power of two) */
  uint64_t epoch_calls;    /* calls per decision-table epoch (power of two) */
  /* learning */
  char policy_dir[DCCL_PATH_MAX];
  char policy_file[DCCL_PATH_MAX];
  char coordination[16];   /* "auto", "off" or "solo" (DYNAMICCL_COORD) */
  char coord_registry[288]; /* "host:port" or "[IPv6]:port" of the registry for multi-node coordination, or "" */
  double coord_timeout_seconds;
  double coord_drop;        /* testing: connection drop probability */
  int coord_present_ranks;  /* testing: only ranks below this join rank 0 (the emulator's); 0: all */
  uint64_t coord_secret;
  double save_seconds;
  double guard_pct;
  double gamma;
  double epsilon, epsilon_min;
  double explore_budget_pct;
  double cusum_k, cusum_h;
  dccl_trigger_setting trigger;
  dccl_cost_mode cost; /* DYNAMICCL_COST */
  int learn_after_switch; /* DYNAMICCL_AFTER_SWITCH: 0 `skip`, 1 `learn` */
  int learn_first_calls;  /* DYNAMICCL_FIRST_CALLS: 0 `skip`, 1 `learn` */
  int max_channels;
  long long nccl_buffer_bytes[3]; /* NCCL's own NCCL_LL_BUFFSIZE, NCCL_LL128_BUFFSIZE, NCCL_BUFFSIZE
                                     (by protocol: LL, LL128, Simple); 0: not set, NCCL's default */
  /* NCCL's own NCCL_ALGO and NCCL_PROTO as NCCL 2.21 reads them, one bit per algorithm and protocol that
   * NCCL may run; LL128's bit only where NCCL_PROTO enables it outright (unset, NCCL gates it on the
   * hardware, which a plugin cannot see). Only tuner v2 needs them: it gets no cost table that says. */
  unsigned nccl_algos_enabled, nccl_protos_enabled;
  double model_intensity;  /* < 0: estimate */
  double batch_size;       /* 0: unknown */
  uint64_t learn_for;      /* > 0: learn this many measurements, then hold (the learn-once baseline) */
  uint64_t seed;           /* DYNAMICCL_SEED, when seed_given (0 included) */
  int seed_given;          /* 0: the agents' seed is derived from the communicator id and rank */
  int agent;               /* dccl_strategy: dqn, or a baseline's decision rule (DYNAMICCL_AGENT) */
} dccl_settings;

/* NCCL's parseList: a comma-separated list of names (any case) to enable, or with a leading '^' to
 * disable, of `names`; returns one bit per name enabled, from `defaults` where `text` is NULL or empty. */
unsigned dccl_nccl_enabled_list(const char* text, const char* const* names, int count, unsigned defaults);

/* Fills `settings` from the environment; reports invalid values through `logger`. */
void dccl_settings_load(dccl_settings* settings, const dccl_logger* logger);

const char* dccl_mode_name(dccl_mode mode);

/* The longest registry host: a DNS name's limit, and what the coordination wire format carries. */
#define DCCL_HOST_MAX 255

/* Parses a network address "host:port" (a name or an IPv4 address) or "[IPv6 address]:port"; an IPv6
 * address without brackets is refused (its last colon is ambiguous). The host is written without the
 * brackets. Returns 0, or -1 when malformed (a host holding '[' or ']' included), the port is not in 1..65535
 * or the host does not fit. */
int dccl_parse_host_port(const char* text, char* host, size_t host_size, uint16_t* port);
/* Writes a host and port as dccl_parse_host_port reads them back: "host:port", or "[host]:port" for a host
 * holding a colon (an IPv6 address). */
void dccl_format_host_port(char* out, size_t size, const char* host, uint16_t port);

/* One row of the documentation table (README "Settings"); the array ends with a NULL name. */
typedef struct dccl_setting_doc {
  const char* name;
  const char* default_value;
  const char* meaning;
} dccl_setting_doc;
extern const dccl_setting_doc dccl_setting_docs[];

#endif
