/* core/settings.c: parses DYNAMICCL_* environment variables into dccl_settings. */
#include "settings.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const dccl_setting_doc dccl_setting_docs[] = {
  {"DYNAMICCL_MODE", "default", "`default`: NCCL's own choice, cost table untouched; `fixed`: decisions from DYNAMICCL_TABLE_FILE"},
  {"DYNAMICCL_TABLE_FILE", "(none)", "decision table for `fixed` mode (format: docs/formats.md)"},
  {"DYNAMICCL_RULES_FILE", "(none)", "NCCL example-tuner CSV rules, applied as hard pins over any policy"},
  {"DYNAMICCL_PROFILE", "auto", "`on`/`off`: subscribe to NCCL profiler events; `auto`: on when a trace file is set"},
  {"DYNAMICCL_TRACE_FILE", "(none)", "CSV of every measured collective; `%r` is replaced by the rank, `%p` by the pid"},
  {"DYNAMICCL_QUEUE_CAPACITY", "4096", "measurements buffered per communicator for the background thread (64..1048576)"},
  {"DYNAMICCL_EVENT_POOL", "1024", "collectives tracked in flight per communicator by the profiler half (64..65536)"},
  {"DYNAMICCL_EPOCH_CALLS", "64", "getCollInfo calls per decision-table epoch; new tables apply from an epoch boundary (1..1048576)"},
  {"DYNAMICCL_LOG_STDERR", "0", "`1`: also print log lines on stderr when NCCL gave no logger (tools, tests)"},
  {NULL, NULL, NULL}};

const char* dccl_mode_name(dccl_mode mode) { return mode == DCCL_MODE_FIXED ? "fixed" : "default"; }

static void copy_path(const char* name, const char* value, char* out, const dccl_logger* logger) {
  out[0] = '\0';
  if (value == NULL || value[0] == '\0') return;
  if (strlen(value) >= DCCL_PATH_MAX) {
    DCCL_WARN(logger, "%s is longer than %d characters; ignored", name, DCCL_PATH_MAX - 1);
    return;
  }
  strcpy(out, value);
}

/* Reads an integer in [low, high]; returns `fallback` (with a warning) when malformed. */
static long long read_integer(const char* name, long long low, long long high, long long fallback,
                             const dccl_logger* logger) {
  const char* text = getenv(name);
  if (text == NULL || text[0] == '\0') return fallback;
  errno = 0;
  char* end = NULL;
  long long value = strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < low || value > high) {
    DCCL_WARN(logger, "%s='%s' is not an integer in [%lld, %lld]; using %lld", name, text, low, high, fallback);
    return fallback;
  }
  return value;
}

static unsigned long long round_up_power_of_two(unsigned long long x) {
  unsigned long long p = 1;
  while (p < x) p <<= 1;
  return p;
}

void dccl_settings_load(dccl_settings* settings, const dccl_logger* logger) {
  memset(settings, 0, sizeof(*settings));

  settings->mode = DCCL_MODE_DEFAULT;
  const char* mode = getenv("DYNAMICCL_MODE");
  if (mode != NULL && mode[0] != '\0') {
    if (strcasecmp(mode, "default") == 0) settings->mode = DCCL_MODE_DEFAULT;
    else if (strcasecmp(mode, "fixed") == 0) settings->mode = DCCL_MODE_FIXED;
    else DCCL_WARN(logger, "DYNAMICCL_MODE='%s' is not one of default, fixed; using default", mode);
  }

  copy_path("DYNAMICCL_TABLE_FILE", getenv("DYNAMICCL_TABLE_FILE"), settings->table_file, logger);
  copy_path("DYNAMICCL_RULES_FILE", getenv("DYNAMICCL_RULES_FILE"), settings->rules_file, logger);
  copy_path("DYNAMICCL_TRACE_FILE", getenv("DYNAMICCL_TRACE_FILE"), settings->trace_file, logger);

  settings->profile = DCCL_PROFILE_AUTO;
  const char* profile = getenv("DYNAMICCL_PROFILE");
  if (profile != NULL && profile[0] != '\0') {
    if (strcasecmp(profile, "auto") == 0) settings->profile = DCCL_PROFILE_AUTO;
    else if (strcasecmp(profile, "on") == 0 || strcmp(profile, "1") == 0) settings->profile = DCCL_PROFILE_ON;
    else if (strcasecmp(profile, "off") == 0 || strcmp(profile, "0") == 0) settings->profile = DCCL_PROFILE_OFF;
    else DCCL_WARN(logger, "DYNAMICCL_PROFILE='%s' is not one of auto, on, off; using auto", profile);
  }

  settings->queue_capacity =
    (unsigned)round_up_power_of_two((unsigned long long)read_integer("DYNAMICCL_QUEUE_CAPACITY", 64, 1 << 20, 4096, logger));
  settings->event_pool =
    (unsigned)round_up_power_of_two((unsigned long long)read_integer("DYNAMICCL_EVENT_POOL", 64, 1 << 16, 1024, logger));
  settings->epoch_calls = round_up_power_of_two((unsigned long long)read_integer("DYNAMICCL_EPOCH_CALLS", 1, 1 << 20, 64, logger));
}
