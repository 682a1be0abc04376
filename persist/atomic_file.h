/* persist/atomic_file.h: replacing a file so that a crash leaves either the old or the new content,
 * never a mix: write a temporary file beside it, fsync it, rename it over, fsync the directory. */
#ifndef DYNAMICCL_PERSIST_ATOMIC_FILE_H
#define DYNAMICCL_PERSIST_ATOMIC_FILE_H

#include <stddef.h>

/* Returns 0 on success; on failure -1 with a reason in `error`, and the old file untouched. */
int dccl_atomic_write(const char* path, const void* data, size_t size, char* error, size_t error_size);

#endif
