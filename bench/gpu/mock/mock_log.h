/* bench/gpu/mock/mock_log.h: NCCL's debug log for the mock NCCL and the plugins it hosts: lines
 * "host:pid:tid [0] NCCL INFO ..." on stdout, selected by NCCL_DEBUG (VERSION, WARN, INFO, TRACE) and
 * NCCL_DEBUG_SUBSYS (INIT, TUNING, ENV, PROFILE, ..., ALL; a leading ^ inverts), as NCCL selects them. */
#ifndef DYNAMICCL_MOCK_LOG_H
#define DYNAMICCL_MOCK_LOG_H

#include "../../../abi/nccl_abi.h"

/* The logger NCCL hands to plugins (ncclDebugLogger_t). */
void mock_log(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...)
  __attribute__((format(printf, 5, 6)));

#define MOCK_LOG_COLL 0x2UL /* NCCL_DEBUG_SUBSYS=COLL (abi/nccl_abi.h has INIT, TUNING, ENV and PROFILE) */

#define MOCK_INFO(flags, ...) mock_log(NCCL_LOG_INFO, (flags), __FILE__, __LINE__, __VA_ARGS__)
#define MOCK_WARN(...) mock_log(NCCL_LOG_WARN, ~0UL, __FILE__, __LINE__, __VA_ARGS__)

#endif
