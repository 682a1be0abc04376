/* bench/gpu/mock/mock_log.c: NCCL's debug log, as NCCL_DEBUG and NCCL_DEBUG_SUBSYS select it. */
#include "mock_log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

static int debug_level;           /* NCCL_LOG_NONE unless NCCL_DEBUG says otherwise */
static unsigned long debug_mask;  /* subsystems shown at INFO and TRACE */
static char host_name[64];
static pthread_once_t settings_once = PTHREAD_ONCE_INIT;

static unsigned long subsystem_flag(const char* name) {
  static const struct {
    const char* name;
    unsigned long flag;
  } subsystems[] = {{"INIT", 0x1},    {"COLL", 0x2},       {"P2P", 0x4},     {"SHM", 0x8},      {"NET", 0x10},
                    {"GRAPH", 0x20},  {"TUNING", 0x40},    {"ENV", 0x80},    {"ALLOC", 0x100},  {"CALL", 0x200},
                    {"PROXY", 0x400}, {"NVLS", 0x800},     {"BOOTSTRAP", 0x1000}, {"REG", 0x2000},
                    {"PROFILE", 0x4000}, {"RAS", 0x8000}, {"ALL", ~0UL}};
  for (size_t i = 0; i < sizeof(subsystems) / sizeof(subsystems[0]); i++)
    if (strcasecmp(name, subsystems[i].name) == 0) return subsystems[i].flag;
  return 0;
}

static void read_settings(void) {
  const char* level = getenv("NCCL_DEBUG");
  debug_level = NCCL_LOG_NONE;
  if (level != NULL) {
    if (strcasecmp(level, "VERSION") == 0) debug_level = NCCL_LOG_VERSION;
    else if (strcasecmp(level, "WARN") == 0) debug_level = NCCL_LOG_WARN;
    else if (strcasecmp(level, "INFO") == 0) debug_level = NCCL_LOG_INFO;
    else if (strcasecmp(level, "ABORT") == 0) debug_level = NCCL_LOG_ABORT;
    else if (strcasecmp(level, "TRACE") == 0) debug_level = NCCL_LOG_TRACE;
  }
  debug_mask = NCCL_INIT | NCCL_ENV | 0x1000; /* NCCL's default: INIT, ENV, BOOTSTRAP */
  const char* subsystems = getenv("NCCL_DEBUG_SUBSYS");
  if (subsystems != NULL) {
    int invert = subsystems[0] == '^';
    char list[256];
    snprintf(list, sizeof(list), "%s", subsystems + invert);
    unsigned long mask = 0;
    char* save = NULL;
    for (char* name = strtok_r(list, ",", &save); name != NULL; name = strtok_r(NULL, ",", &save))
      mask |= subsystem_flag(name);
    debug_mask = invert ? ~mask : mask;
  }
  if (gethostname(host_name, sizeof(host_name)) != 0) snprintf(host_name, sizeof(host_name), "localhost");
  host_name[sizeof(host_name) - 1] = '\0';
}

void mock_log(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  pthread_once(&settings_once, read_settings);
  if (level == NCCL_LOG_NONE || (int)level > debug_level) return;
  if ((level == NCCL_LOG_INFO || level == NCCL_LOG_TRACE) && (flags & debug_mask) == 0) return;
  char message[1024], where[256] = "";
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof(message), fmt, args);
  va_end(args);
  if (level == NCCL_LOG_WARN) {
    const char* base = strrchr(file, '/');
    snprintf(where, sizeof(where), "%s:%d ", base != NULL ? base + 1 : file, line);
  }
  const char* label = level == NCCL_LOG_WARN ? "WARN" : level == NCCL_LOG_TRACE ? "TRACE" : "INFO";
  /* One write per line: the ranks' processes and the plugins' threads share the output. */
  char text[1400];
  int length = snprintf(text, sizeof(text), "%s:%d:%ld [0] %sNCCL %s %s\n", host_name, (int)getpid(),
                        (long)syscall(SYS_gettid), where, label, message);
  if (length > 0) {
    fwrite(text, 1, (size_t)length < sizeof(text) ? (size_t)length : sizeof(text) - 1, stdout);
    fflush(stdout);
  }
}
