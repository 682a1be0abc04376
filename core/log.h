/* core/log.h: DynamICCL's logging, through the logger NCCL hands to the plugin, with one prefix.
 *
 * Lines go to NCCL's logger with the NCCL_TUNING (tuner) or NCCL_INIT subsystem flag, so
 * NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING shows them. Without an NCCL logger (tools, tests) the
 * lines go to stderr when DYNAMICCL_LOG_STDERR=1 or a sink is installed. Formatting uses a stack
 * buffer: no allocation. Nothing here runs per call on the hot path except the log-once helpers. */
#ifndef DYNAMICCL_CORE_LOG_H
#define DYNAMICCL_CORE_LOG_H

#include <stdatomic.h>

#include "../abi/nccl_abi.h"

#define DCCL_LOG_PREFIX "DynamICCL: "

typedef struct dccl_logger {
  ncclDebugLogger_t nccl_logger; /* may be NULL */
} dccl_logger;

/* Sink for lines when no NCCL logger is present (tests capture lines with it). Process-wide. */
typedef void (*dccl_log_sink)(int level, const char* line);
void dccl_log_set_sink(dccl_log_sink sink);

/* DYNAMICCL_LOG_STDERR's value, read whole: 1 for "1"; 0 for "0", empty or unset (the default); -1 for
 * anything else, which counts as 0 (dccl_settings_load reports it). */
int dccl_log_stderr_setting(const char* value);

void dccl_log_write(const dccl_logger* logger, ncclDebugLogLevel level, unsigned long subsystem, const char* file,
                    int line, const char* fmt, ...) __attribute__((format(printf, 6, 7)));

#define DCCL_WARN(lg, ...) dccl_log_write((lg), NCCL_LOG_WARN, NCCL_TUNING | NCCL_INIT, __FILE__, __LINE__, __VA_ARGS__)
#define DCCL_INFO(lg, ...) dccl_log_write((lg), NCCL_LOG_INFO, NCCL_TUNING, __FILE__, __LINE__, __VA_ARGS__)
#define DCCL_INIT_INFO(lg, ...) \
  dccl_log_write((lg), NCCL_LOG_INFO, NCCL_TUNING | NCCL_INIT, __FILE__, __LINE__, __VA_ARGS__)
#define DCCL_TRACE(lg, ...) dccl_log_write((lg), NCCL_LOG_TRACE, NCCL_TUNING, __FILE__, __LINE__, __VA_ARGS__)

/* Log-once: the first caller to claim `flag` logs, everyone else returns at the cost of one load. */
static inline int dccl_log_once_claim(atomic_flag* flag) { return !atomic_flag_test_and_set_explicit(flag, memory_order_relaxed); }

#define DCCL_WARN_ONCE(lg, flag, ...)                      \
  do {                                                     \
    if (dccl_log_once_claim(flag)) DCCL_WARN(lg, __VA_ARGS__); \
  } while (0)

#endif
