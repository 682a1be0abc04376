/* core/settings.c: parses DYNAMICCL_* environment variables into dccl_settings. */
#include "settings.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rng.h"
#include "types.h"

const dccl_setting_doc dccl_setting_docs[] = {
  {"DYNAMICCL_MODE", "default", "`default`: NCCL's own choice, cost table untouched; `fixed`: decisions from DYNAMICCL_TABLE_FILE; `learn`: the agents explore and learn online; `frozen`: exploit the saved policy only (same decisions on every rank, no feedback)"},
  {"DYNAMICCL_TABLE_FILE", "(none)", "decision table for `fixed` mode (format: docs/formats.md); rank 0's is run by every rank (see `DYNAMICCL_COORD`)"},
  {"DYNAMICCL_RULES_FILE", "(none)", "NCCL example-tuner CSV rules, applied as hard pins over any policy; rank 0's are run by every rank (see `DYNAMICCL_COORD`)"},
  {"DYNAMICCL_PROFILE", "auto", "`on`/`off`: subscribe to NCCL profiler events; `auto`: on when learning or when a trace file is set"},
  {"DYNAMICCL_TRACE_FILE", "(none)", "CSV of every measured collective; `%r` is replaced by the rank, `%p` by the pid, `%c` by the communicator id; where two communicators of a process come out with one name, the second writes `<name>.<communicator id>`"},
  {"DYNAMICCL_QUEUE_CAPACITY", "4096", "measurements buffered per communicator for the background thread (64..1048576, rounded up to a power of two)"},
  {"DYNAMICCL_EVENT_POOL", "1024", "collectives tracked in flight per communicator by the profiler half (64..65536, rounded up to a power of two)"},
  {"DYNAMICCL_EPOCH_CALLS", "64", "getCollInfo calls per decision-table epoch; new tables apply from an epoch boundary (1..1048576, rounded up to a power of two)"},
  {"DYNAMICCL_LOG_STDERR", "0", "`1`: also print log lines on stderr when NCCL gave no logger (tools, tests)"},
  {"DYNAMICCL_POLICY_DIR", "(none)", "folder of saved policies, one file per topology fingerprint (loaded at start, saved periodically and at exit); made with its parents"},
  {"DYNAMICCL_POLICY_FILE", "(none)", "an explicit policy file; overrides DYNAMICCL_POLICY_DIR. Shared by communicators of several shapes, it keeps the first saved: the others learn without saving (docs/formats.md)"},
  {"DYNAMICCL_SAVE_SECONDS", "300", "seconds between periodic policy saves in `learn` mode (0: only at exit)"},
  {"DYNAMICCL_COORD", "auto", "How ranks of a communicator agree on a policy (`learn`, `frozen`, `fixed`, or rule pins). `auto`: rank 0 learns (or loads the saved policy, the fixed table and the rules) and the other ranks follow its tables and pins, over Unix sockets on one node, or across nodes over TCP through the registry at `MASTER_ADDR`:(`MASTER_PORT`+1) when torchrun's variables are set (else NCCL's choices, with a warning, while a fixed table and rules are read by each rank); `host:port` (or `[IPv6 address]:port`): across nodes, through the registry at that address (hosted by the process that can bind it); `off`: multi-rank communicators run `frozen`, each rank from its own policy, table and rule files (they must be the same); `solo`: every process tunes alone (single-process simulations only)"},
  {"DYNAMICCL_COORD_TIMEOUT_S", "30", "A worker waiting this long for the leader's table logs an error naming the leader (and again every as long; it keeps waiting: switching without the table could hang NCCL); rank 0 names the ranks that have not joined it by then (once)"},
  {"DYNAMICCL_COORD_SECRET", "(none)", "Mixed into the token every coordination message carries, so that only processes sharing it can take part"},
  {"DYNAMICCL_COORD_DROP", "0", "Testing only: probability that a worker drops its connection after a message (it reconnects and resumes)"},
  {"DYNAMICCL_COORD_PRESENT_RANKS", "0", "Testing only (the NCCL emulator, which runs the first N ranks of a communicator): rank 0 expects only ranks below N to join, neither waiting for nor naming the others (0: every rank)"},
  {"DYNAMICCL_GUARD_PCT", "3", "a learned action slower than NCCL's own choice by more than this (percent, recent window) falls back to NCCL's"},
  {"DYNAMICCL_GAMMA", "0", "DQN discount (0..0.9); 0: the reward is immediate"},
  {"DYNAMICCL_EPSILON", "0.3", "initial exploration rate of a new decision cell (0..1)"},
  {"DYNAMICCL_EPSILON_MIN", "0.01", "exploration rate floor (0..1, at most DYNAMICCL_EPSILON)"},
  {"DYNAMICCL_EXPLORE_BUDGET_PCT", "0", "when > 0, a decision cell (collective and size bin) explores only while its explored calls have cost, beyond the latency of the action it exploits, at most this percentage of the time its calls took so far (a challenger measured faster than what it runs is still raced); for short jobs whose rare, large collectives cannot repay exploration. 0: no limit"},
  {"DYNAMICCL_COST", "leftover", "what the learner charges a call: `span`: its kernel's GPU time (first channel start to last channel stop); `stream`: where NCCL had already launched the communicator's next call when this one's kernel ended, the time from its kernel's start to the next one's, which also holds work an algorithm leaves behind its kernel over network transports (tree over sockets: docs/agents.md), but also the next call's wait on the application (compute, or another CUDA stream); `leftover`: its span plus what its action leaves to the next call, estimated per cell from the calls whose next call was waiting: what the action's mean excess (stream time beyond span) exceeds the cell's least, where that least is at most half its span (calls back to back); between half a span and one, only beyond what a faster action saves (a wait that ends at a set time); nothing beyond a span, where the application's waits show (agents/leftover.h)"},
  {"DYNAMICCL_AFTER_SWITCH", "skip", "what the learner does with a measured call right after a call of the same cell that ran another action (algorithm, protocol or channels), with the first call of a run of a cell's calls right after a larger call of another cell (where the cell's calls come in runs), and with a call launched after a host pause where the cell's calls come back to back: `skip` them, as their spans hold work the call before left behind its kernel (tree on 1 channel over sockets makes the next kernel 18-20% of its call longer; a 1-KiB call right after a 64-MiB one reads 4-44x on the GPU, launched within it or after the application paused: docs/agents.md) or the ranks' skew after the pause (1.09-1.28x at 256 KiB-64 MiB on the GPU, 1.22-2.30x at 1-4 KiB), or `learn` them too (more samples where actions leave nothing behind: 0.45% less total latency over the 17 simulated scenarios without leftovers, `dccl eval`)"},
  {"DYNAMICCL_FIRST_CALLS", "skip", "what the learner does with a communicator's first measured call of each (collective, datatype, algorithm, protocol): `skip` it, as it holds NCCL's one-time work (loading that kernel, connecting the algorithm's channels at first use): 1-25 ms at each process's first call of a collective on the GPU test machine, 30-560x a 1-KiB call (docs/results/gpu); or `learn` it too"},
  {"DYNAMICCL_TRIGGER", "lstm", "congestion detector: `lstm` (LSTM forecast + CUSUM), `cusum` (plain CUSUM), `off`"},
  {"DYNAMICCL_CUSUM_K", "0.5", "CUSUM allowance, in standard deviations"},
  {"DYNAMICCL_CUSUM_H", "12", "CUSUM alarm threshold, in standard deviations"},
  {"DYNAMICCL_MAX_CHANNELS", "32", "largest explicit channel count the agents try (1..64)"},
  {"DYNAMICCL_MODEL_INTENSITY", "(estimated)", "compute-to-communication time ratio of the job, when known (else estimated from gaps between collectives)"},
  {"DYNAMICCL_BATCH_SIZE", "(unknown)", "local batch size, when known (a state feature)"},
  {"DYNAMICCL_LEARN_FOR", "0", "learn for this many measured collectives, then hold the decisions (the learn-once baseline; 0: never hold)"},
  {"DYNAMICCL_AGENT", "dqn", "the decision rule of `learn` mode: `dqn` (DynamICCL's config agent), or a baseline sharing its measurements and tables: `autoccl` (AutoCCL's subspace coordinate descent, then hold; no trigger) or `bandit` (Thompson sampling restarted by Agent-1's alarms)"},
  {"DYNAMICCL_SEED", "(from the communicator id)", "seed of the agents' random generators, 0 to 2^63-1 (0 included)"},
  {"DYNAMICCL_SCENARIOS", "(none)", "Tools only (`dccl`): a folder searched first for the profiles, workloads and conditions named without a path (then ./scenarios and the scenarios beside the program); its `suite/` is what `dccl eval` evaluates when ./scenarios/suite is missing"},
  {"DYNAMICCL_TEST_TIMEOUT_S", "600", "Testing only (`make test`): a test binary running longer is killed and reported as hung, with its log"},
  {"DYNAMICCL_TEST_JOBS", "(processors)", "Testing only (`make test`): how many test binaries run at a time (two of one name never do)"},
  {"DYNAMICCL_TEST_CALLS", "200000", "Testing only: calls of test_coordination's 8-process run (`make test-coordination-long`: 1000000)"},
  {"DYNAMICCL_MOCK_NCCL", "2.28", "Testing only (bench/gpu's mock NCCL, docs/gpu.md): `2.30`: the mock stands for NCCL 2.30.7 (tuner and profiler v6, `NCCL_MULTI_RANK_GPU_ENABLE`) rather than 2.28.9"},
  {"DYNAMICCL_MOCK_CLOCK", "(monotonic)", "Testing only (bench/gpu's mock CUDA runtime): `model`: a clock that only the mock NCCL's collectives advance, each by its modelled latency"},
  {"DYNAMICCL_MOCK_CORRUPT", "0", "Testing only (bench/gpu's mock NCCL): `1`: rank 0 gets one wrong element in every result, which collbench must catch"},
  {"DYNAMICCL_MOCK_HANG_RANK", "(none)", "Testing only (bench/gpu's mock NCCL): the rank that never returns from ncclCommInitRank"},
  {"DYNAMICCL_MOCK_TIMEOUT_S", "60", "Testing only (bench/gpu's mock NCCL): a rank waiting at the mock's barrier longer than this fails"},
  {NULL, NULL, NULL}};

const char* dccl_mode_name(dccl_mode mode) {
  static const char* const names[] = {"default", "fixed", "learn", "frozen"};
  return mode >= 0 && mode <= DCCL_MODE_FROZEN ? names[mode] : "default";
}

/* Which of `count` keywords `text` is, in any case; -1 for none. */
static int keyword_index(const char* text, const char* const* words, int count) {
  for (int k = 0; k < count; k++)
    if (strcasecmp(text, words[k]) == 0) return k;
  return -1;
}

/* A setting that is one of `count` keywords (in any case), standing for values[k]: the first when it is
 * unset or, with a warning, none of them. */
static int read_keyword(const char* name, const char* const* words, const int* values, int count,
                        const dccl_logger* logger) {
  const char* text = getenv(name);
  if (text == NULL || text[0] == '\0') return values[0];
  int k = keyword_index(text, words, count);
  if (k >= 0) return values[k];
  char list[128] = "";
  for (int i = 0; i < count; i++)
    snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i > 0 ? ", " : "", words[i]);
  DCCL_WARN(logger, "%s='%s' is not one of %s; using %s", name, text, list, words[0]);
  return values[0];
}

static void copy_path(const char* name, const char* value, char* out, const dccl_logger* logger) {
  out[0] = '\0';
  if (value == NULL || value[0] == '\0') return;
  if (strlen(value) >= DCCL_PATH_MAX) {
    DCCL_WARN(logger, "%s is longer than %d characters; ignored", name, DCCL_PATH_MAX - 1);
    return;
  }
  strcpy(out, value);
}

/* Whether `text` is written as a plain decimal number: strtod and strtoll also take leading spaces, a '+'
 * and (strtod) hexadecimal, "0x1p-3" for 0.125, which no DYNAMICCL_ setting documents. */
static int plain_decimal(const char* text) {
  return (isdigit((unsigned char)text[0]) || text[0] == '-' || text[0] == '.') && strpbrk(text, "xX") == NULL;
}

/* Parses all of `text` as an integer in [low, high] (`base` as for strtoll; base 10: a plain decimal); 0 on
 * success, -1 when it is malformed, has anything after the number, or is out of range. */
static int parse_integer(const char* text, int base, long long low, long long high, long long* out) {
  if (base == 10 && !plain_decimal(text)) return -1;
  errno = 0;
  char* end = NULL;
  long long value = strtoll(text, &end, base);
  if (errno != 0 || end == text || *end != '\0' || value < low || value > high) return -1;
  *out = value;
  return 0;
}

/* Reads a number in [low, high]; returns `fallback` (with a warning) when malformed. */
static double read_number(const char* name, double low, double high, double fallback, const dccl_logger* logger) {
  const char* text = getenv(name);
  if (text == NULL || text[0] == '\0') return fallback;
  errno = 0;
  char* end = NULL;
  double value = strtod(text, &end);
  if (!plain_decimal(text) || errno != 0 || end == text || *end != '\0' || !(value >= low && value <= high)) {
    DCCL_WARN(logger, "%s='%s' is not a number in [%g, %g]; using %g", name, text, low, high, fallback);
    return fallback;
  }
  return value;
}

/* Reads an integer in [low, high] into *value: 1 when the variable holds one, 0 when it is unset or
 * empty, -1 when it is malformed (reported, with `instead`: what is done in its place). */
static int read_given_integer(const char* name, long long low, long long high, const char* instead, long long* value,
                              const dccl_logger* logger) {
  const char* text = getenv(name);
  if (text == NULL || text[0] == '\0') return 0;
  if (parse_integer(text, 10, low, high, value) == 0) return 1;
  DCCL_WARN(logger, "%s='%s' is not an integer in [%lld, %lld]; %s", name, text, low, high, instead);
  return -1;
}

/* Reads an integer in [low, high]; returns `fallback` (with a warning) when malformed. */
static long long read_integer(const char* name, long long low, long long high, long long fallback,
                             const dccl_logger* logger) {
  char instead[48];
  snprintf(instead, sizeof(instead), "using %lld", fallback);
  long long value;
  return read_given_integer(name, low, high, instead, &value, logger) == 1 ? value : fallback;
}

/* Reads an integer in [low, high] (as read_integer) rounded up to a power of two, saying so in the log
 * when that changes it. */
static unsigned long long read_power_of_two(const char* name, long long low, long long high, long long fallback,
                                            const dccl_logger* logger) {
  unsigned long long value = (unsigned long long)read_integer(name, low, high, fallback, logger), rounded = 1;
  while (rounded < value) rounded <<= 1;
  if (rounded != value) DCCL_INIT_INFO(logger, "%s=%llu is rounded up to %llu, a power of two", name, value, rounded);
  return rounded;
}

/* NCCL's own buffer sizes, which bound the chunk sizes worth trying (NCCL clamps a tuner's chunk to
 * them); 0 where unset (NCCL's default) or not a size NCCL would take. */
static void read_nccl_buffers(dccl_settings* settings, const dccl_logger* logger) {
  static const char* const variables[3] = {"NCCL_LL_BUFFSIZE", "NCCL_LL128_BUFFSIZE", "NCCL_BUFFSIZE"};
  for (int proto = 0; proto < 3; proto++) {
    settings->nccl_buffer_bytes[proto] = 0;
    const char* text = getenv(variables[proto]);
    if (text == NULL || text[0] == '\0') continue;
    long long value;
    if (parse_integer(text, 0, -2, -2, &value) == 0) continue; /* NCCL's "default" */
    if (parse_integer(text, 0, 4096, 1LL << 31, &value) != 0) {
      DCCL_WARN(logger, "%s='%s' is not a buffer size in [4096, 2^31] bytes; chunk sizes are chosen for NCCL's default",
                variables[proto], text);
      continue;
    }
    settings->nccl_buffer_bytes[proto] = value;
  }
}

unsigned dccl_nccl_enabled_list(const char* text, const char* const* names, int count, unsigned defaults) {
  if (text == NULL || text[0] == '\0') return defaults;
  int disable = text[0] == '^';
  unsigned mask = disable ? (1u << count) - 1 : 0;
  for (const char* token = text + disable; *token != '\0';) {
    size_t length = strcspn(token, ",");
    for (int i = 0; i < count; i++)
      if (strlen(names[i]) == length && strncasecmp(token, names[i], length) == 0)
        mask = disable ? mask & ~(1u << i) : mask | (1u << i);
    token += length + (token[length] == ',');
  }
  return mask;
}

/* NCCL_ALGO and NCCL_PROTO, by NCCL 2.21's names and in its order (DCCL_ALGO_TREE ... NVLS_TREE and
 * DCCL_PROTO_LL, LL128, SIMPLE): every algorithm and protocol by default but LL128, which NCCL enables
 * by default only on hardware it has tested ("may cause silent data corruption"), unless NCCL_PROTO
 * enables it outright, as any list that does not exclude it does. */
static void read_nccl_selection(dccl_settings* settings) {
  static const char* const algos[] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree"};
  static const char* const protos[] = {"LL", "LL128", "Simple"};
  settings->nccl_algos_enabled = dccl_nccl_enabled_list(getenv("NCCL_ALGO"), algos, 6, (1u << 6) - 1);
  settings->nccl_protos_enabled =
    dccl_nccl_enabled_list(getenv("NCCL_PROTO"), protos, 3, 1u << DCCL_PROTO_LL | 1u << DCCL_PROTO_SIMPLE);
}

int dccl_parse_host_port(const char* text, char* host, size_t host_size, uint16_t* port) {
  const char *first = text, *last, *colon;
  if (text[0] == '[') { /* [IPv6]:port */
    first = text + 1;
    last = strchr(first, ']');
    if (last == NULL || last[1] != ':') return -1;
    colon = last + 1;
  } else {
    colon = last = strchr(text, ':');
    if (colon == NULL || strchr(colon + 1, ':') != NULL) return -1; /* none, or an IPv6 address without brackets */
  }
  size_t length = (size_t)(last - first);
  long long value;
  /* No host holds a bracket ("[[]:80" or "a]b:80" is a typo, and could not be written back as an address),
   * a space or a control character (a pasted "node1 :80" would otherwise reach getaddrinfo). */
  for (size_t i = 0; i < length; i++)
    if (first[i] == '[' || first[i] == ']' || isspace((unsigned char)first[i]) || iscntrl((unsigned char)first[i]))
      return -1;
  if (length == 0 || length >= host_size || !isdigit((unsigned char)colon[1]) ||
      parse_integer(colon + 1, 10, 1, 65535, &value) != 0)
    return -1;
  memcpy(host, first, length);
  host[length] = '\0';
  *port = (uint16_t)value;
  return 0;
}

_Static_assert(sizeof(((dccl_settings*)0)->coord_registry) > DCCL_HOST_MAX + sizeof("[]:65535") - 1,
               "every address dccl_parse_host_port accepts fits, written by dccl_format_host_port");

void dccl_format_host_port(char* out, size_t size, const char* host, uint16_t port) {
  snprintf(out, size, strchr(host, ':') != NULL ? "[%s]:%u" : "%s:%u", host, (unsigned)port);
}

/* DYNAMICCL_COORD, or torchrun's MASTER_ADDR and MASTER_PORT, and the other coordination settings. */
static void read_coordination(dccl_settings* settings, const dccl_logger* logger) {
  strcpy(settings->coordination, "auto");
  settings->coord_registry[0] = '\0';
  const char* coordination = getenv("DYNAMICCL_COORD");
  char host[DCCL_HOST_MAX + 1];
  uint16_t registry_port;
  if (coordination != NULL && coordination[0] != '\0') {
    const char* keywords[] = {"solo", "off", "auto"}; /* kept in lower case: compared as such later */
    int keyword = keyword_index(coordination, keywords, 3);
    if (keyword >= 0) {
      snprintf(settings->coordination, sizeof(settings->coordination), "%s", keywords[keyword]);
    } else if (dccl_parse_host_port(coordination, host, sizeof(host), &registry_port) == 0) {
      /* Written anew from the parsed parts, not copied: the text given may be longer (a port with leading
       * zeros), and cut to fit it would name another port. */
      dccl_format_host_port(settings->coord_registry, sizeof(settings->coord_registry), host, registry_port);
    } else {
      DCCL_WARN(logger,
                "DYNAMICCL_COORD='%s' is not auto, off, solo, host:port or [IPv6 address]:port; using auto",
                coordination);
    }
  }
  /* torchrun's rendezvous address; the registry listens on the port after MASTER_PORT. */
  const char* master_addr = getenv("MASTER_ADDR");
  const char* master_port = getenv("MASTER_PORT");
  if (settings->coord_registry[0] == '\0' && master_addr != NULL && master_addr[0] != '\0' && master_port != NULL) {
    long long port;
    /* An IPv6 address (torchrun takes it with or without brackets) gets them: [address]:port. */
    int bracket = strchr(master_addr, ':') != NULL && master_addr[0] != '[';
    if (parse_integer(master_port, 10, 1, 65534, &port) != 0)
      DCCL_WARN(logger,
                "MASTER_PORT='%s' is not a port in [1, 65534] (the coordination registry listens on MASTER_PORT+1); "
                "no registry is derived from MASTER_ADDR/MASTER_PORT (learning across nodes needs DYNAMICCL_COORD=host:port)",
                master_port);
    else if (strlen(master_addr) >= 256)
      DCCL_WARN(logger,
                "MASTER_ADDR is longer than 255 characters; no coordination registry is derived from "
                "MASTER_ADDR/MASTER_PORT (learning across nodes needs DYNAMICCL_COORD=host:port)");
    else
      snprintf(settings->coord_registry, sizeof(settings->coord_registry), bracket ? "[%s]:%lld" : "%s:%lld",
               master_addr, port + 1);
    /* Checked as DYNAMICCL_COORD is, so that the service never gets an address it cannot parse. */
    if (settings->coord_registry[0] != '\0' &&
        dccl_parse_host_port(settings->coord_registry, host, sizeof(host), &registry_port) != 0) {
      DCCL_WARN(logger,
                "MASTER_ADDR='%s' makes no registry address ('%s' is not host:port or [IPv6 address]:port); no "
                "registry is derived from MASTER_ADDR/MASTER_PORT (learning across nodes needs DYNAMICCL_COORD=host:port)",
                master_addr, settings->coord_registry);
      settings->coord_registry[0] = '\0';
    }
  }
  settings->coord_timeout_seconds = read_number("DYNAMICCL_COORD_TIMEOUT_S", 0.1, 1e6, 30, logger);
  settings->coord_drop = read_number("DYNAMICCL_COORD_DROP", 0, 0.5, 0, logger);
  settings->coord_present_ranks = (int)read_integer("DYNAMICCL_COORD_PRESENT_RANKS", 0, 1 << 20, 0, logger);
  const char* secret = getenv("DYNAMICCL_COORD_SECRET");
  settings->coord_secret = 0;
  if (secret != NULL)
    for (const char* p = secret; *p != '\0'; p++) settings->coord_secret = dccl_mix64(settings->coord_secret ^ (uint8_t)*p);
}

void dccl_settings_load(dccl_settings* settings, const dccl_logger* logger) {
  memset(settings, 0, sizeof(*settings));

  static const char* const modes[] = {"default", "fixed", "learn", "frozen"};
  static const int mode_values[] = {DCCL_MODE_DEFAULT, DCCL_MODE_FIXED, DCCL_MODE_LEARN, DCCL_MODE_FROZEN};
  settings->mode = (dccl_mode)read_keyword("DYNAMICCL_MODE", modes, mode_values, 4, logger);

  copy_path("DYNAMICCL_TABLE_FILE", getenv("DYNAMICCL_TABLE_FILE"), settings->table_file, logger);
  copy_path("DYNAMICCL_RULES_FILE", getenv("DYNAMICCL_RULES_FILE"), settings->rules_file, logger);
  copy_path("DYNAMICCL_TRACE_FILE", getenv("DYNAMICCL_TRACE_FILE"), settings->trace_file, logger);

  static const char* const profiles[] = {"auto", "on", "off", "1", "0"};
  static const int profile_values[] = {DCCL_PROFILE_AUTO, DCCL_PROFILE_ON, DCCL_PROFILE_OFF, DCCL_PROFILE_ON,
                                       DCCL_PROFILE_OFF};
  settings->profile = (dccl_profile_setting)read_keyword("DYNAMICCL_PROFILE", profiles, profile_values, 5, logger);

  const char* log_stderr = getenv("DYNAMICCL_LOG_STDERR"); /* read by the logger, line by line */
  if (dccl_log_stderr_setting(log_stderr) < 0)
    DCCL_WARN(logger, "DYNAMICCL_LOG_STDERR='%s' is not 0 or 1; using 0", log_stderr);

  settings->queue_capacity = (unsigned)read_power_of_two("DYNAMICCL_QUEUE_CAPACITY", 64, 1 << 20, 4096, logger);
  settings->event_pool = (unsigned)read_power_of_two("DYNAMICCL_EVENT_POOL", 64, 1 << 16, 1024, logger);
  settings->epoch_calls = read_power_of_two("DYNAMICCL_EPOCH_CALLS", 1, 1 << 20, 64, logger);

  copy_path("DYNAMICCL_POLICY_DIR", getenv("DYNAMICCL_POLICY_DIR"), settings->policy_dir, logger);
  copy_path("DYNAMICCL_POLICY_FILE", getenv("DYNAMICCL_POLICY_FILE"), settings->policy_file, logger);
  read_coordination(settings, logger);
  settings->save_seconds = read_number("DYNAMICCL_SAVE_SECONDS", 0, 1e7, 300, logger);
  settings->guard_pct = read_number("DYNAMICCL_GUARD_PCT", 0, 100, 3, logger);
  settings->gamma = read_number("DYNAMICCL_GAMMA", 0, 0.9, 0, logger);
  settings->epsilon = read_number("DYNAMICCL_EPSILON", 0, 1, 0.3, logger);
  settings->epsilon_min = read_number("DYNAMICCL_EPSILON_MIN", 0, 1, 0.01, logger);
  if (settings->epsilon_min > settings->epsilon) { /* a floor above the rate a cell starts from */
    DCCL_WARN(logger, "DYNAMICCL_EPSILON_MIN=%g is above DYNAMICCL_EPSILON=%g, the initial exploration rate; using %g",
              settings->epsilon_min, settings->epsilon, settings->epsilon);
    settings->epsilon_min = settings->epsilon;
  }
  settings->explore_budget_pct = read_number("DYNAMICCL_EXPLORE_BUDGET_PCT", 0, 100, 0, logger);
  settings->cusum_k = read_number("DYNAMICCL_CUSUM_K", 0, 10, 0.5, logger);
  settings->cusum_h = read_number("DYNAMICCL_CUSUM_H", 0.5, 1000, 12, logger);
  settings->max_channels = (int)read_integer("DYNAMICCL_MAX_CHANNELS", 1, 64, 32, logger);
  read_nccl_buffers(settings, logger);
  read_nccl_selection(settings);
  settings->model_intensity = read_number("DYNAMICCL_MODEL_INTENSITY", 0, 1e6, -1, logger);
  settings->batch_size = read_number("DYNAMICCL_BATCH_SIZE", 1, 1e9, 0, logger);
  settings->learn_for = (uint64_t)read_integer("DYNAMICCL_LEARN_FOR", 0, (long long)1 << 50, 0, logger);
  long long seed = 0;
  settings->seed_given =
    read_given_integer("DYNAMICCL_SEED", 0, INT64_MAX, "the seed is derived from the communicator id", &seed, logger) == 1;
  settings->seed = settings->seed_given ? (uint64_t)seed : 0;
  static const char* const agents[] = {"dqn", "autoccl", "bandit"};
  static const int agent_values[] = {0, 1, 2};
  settings->agent = read_keyword("DYNAMICCL_AGENT", agents, agent_values, 3, logger);
  static const char* const triggers[] = {"lstm", "cusum", "off"};
  static const int trigger_values[] = {DCCL_TRIGGER_LSTM, DCCL_TRIGGER_CUSUM, DCCL_TRIGGER_OFF};
  settings->trigger = (dccl_trigger_setting)read_keyword("DYNAMICCL_TRIGGER", triggers, trigger_values, 3, logger);
  static const char* const costs[] = {"leftover", "span", "stream"}; /* the first is the default */
  static const int cost_values[] = {DCCL_COST_LEFTOVER, DCCL_COST_SPAN, DCCL_COST_STREAM};
  settings->cost = (dccl_cost_mode)read_keyword("DYNAMICCL_COST", costs, cost_values, 3, logger);
  static const char* const skip_or_learn[] = {"skip", "learn"};
  static const int skip_or_learn_values[] = {0, 1};
  settings->learn_after_switch = read_keyword("DYNAMICCL_AFTER_SWITCH", skip_or_learn, skip_or_learn_values, 2, logger);
  settings->learn_first_calls = read_keyword("DYNAMICCL_FIRST_CALLS", skip_or_learn, skip_or_learn_values, 2, logger);
}
