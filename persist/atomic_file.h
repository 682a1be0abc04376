/* persist/atomic_file.h: replacing a file so that a crash leaves either the old or the new content,
 * never a mix: write a temporary file beside it, fsync it, rename it over, fsync the directory. */
#ifndef DYNAMICCL_PERSIST_ATOMIC_FILE_H
#define DYNAMICCL_PERSIST_ATOMIC_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Returns 0 on success; on failure -1 with a reason in `error`, and the old file untouched. The
 * temporary file is "<path>.tmp.<16 hex digits>", a random 64-bit suffix, created exclusively (another
 * writer's temporary file, from any process or host sharing the folder, is never opened). Where `path`
 * is a symbolic link, its target is replaced (the link stays), keeping that file's permissions; a path
 * that is no regular file (a device, FIFO, folder) is refused. */
int dccl_atomic_write(const char* path, const void* data, size_t size, char* error, size_t error_size);

/* The file a path names once its symbolic links are followed (even where the last one's target does not
 * exist yet): 0, or -1 with a reason (too long, more than 40 links, an unreadable link). */
int dccl_resolve_links(const char* path, char* resolved, size_t size, char* error, size_t error_size);

/* Makes `path` a folder this process can write in, creating its missing parents (as mkdir -p): 0, or -1
 * with a reason. */
int dccl_ensure_directory(const char* path, char* error, size_t error_size);

/* Where the temporary names' suffixes come from: dccl_random_suffix by default (its argument unused). */
typedef uint64_t (*dccl_suffix_source)(void* context);
uint64_t dccl_random_suffix(void* unused);

/* dccl_atomic_write with the suffixes drawn from `next_suffix` (tests make names collide with it). A
 * name taken already is skipped for the next suffix, a few times at most. */
int dccl_atomic_write_with(const char* path, const void* data, size_t size, dccl_suffix_source next_suffix,
                           void* context, char* error, size_t error_size);

/* A temporary file this old (by its modification time) is no save in progress: a save writes its
 * whole file within seconds. */
#define DCCL_STALE_TEMPORARY_SECONDS 3600

/* Removes the temporary files that saves of `path` (its link target, as dccl_atomic_write) left when
 * their process was killed mid-save: regular files named as dccl_temporary_name names them, last
 * modified `older_than_seconds` ago or earlier. Returns how many were removed, or -1 with a reason
 * (the folder unreadable); best effort otherwise (a file it cannot remove stays). */
int dccl_remove_stale_temporaries(const char* path, double older_than_seconds, char* error, size_t error_size);

/* The temporary name for `path` and `suffix`; returns 0, or -1 when it does not fit in `size`. */
int dccl_temporary_name(const char* path, uint64_t suffix, char* name, size_t size);

#endif
