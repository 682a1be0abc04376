/* core/log.c: formats DynamICCL log lines and hands them to NCCL's logger or a fallback sink. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic(dccl_log_sink) fallback_sink; /* NULL: static storage starts zeroed (clang refuses NULL here) */

void dccl_log_set_sink(dccl_log_sink sink) { atomic_store(&fallback_sink, sink); }

int dccl_log_stderr_setting(const char* value) {
  if (value == NULL || value[0] == '\0' || strcmp(value, "0") == 0) return 0;
  return strcmp(value, "1") == 0 ? 1 : -1;
}

static int stderr_requested(void) { return dccl_log_stderr_setting(getenv("DYNAMICCL_LOG_STDERR")) == 1; }

void dccl_log_write(const dccl_logger* logger, ncclDebugLogLevel level, unsigned long subsystem, const char* file,
                    int line, const char* fmt, ...) {
  char message[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof(message), fmt, args);
  va_end(args);

  if (logger != NULL && logger->nccl_logger != NULL) {
    logger->nccl_logger(level, subsystem, file, line, DCCL_LOG_PREFIX "%s", message);
    return;
  }
  dccl_log_sink sink = atomic_load(&fallback_sink);
  if (sink != NULL) {
    sink((int)level, message);
  } else if (level == NCCL_LOG_WARN || stderr_requested()) {
    fprintf(stderr, "%s%s%s\n", DCCL_LOG_PREFIX, level == NCCL_LOG_WARN ? "WARN " : "", message);
  }
}
