/* persist/atomic_file.c: crash-safe file replacement (exclusive temporary file, fsync, rename, fsync dir). */
#include "atomic_file.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "../core/rng.h"

static int fsync_directory_of(const char* path) {
  char copy[4096];
  if (strlen(path) >= sizeof(copy)) return -1;
  strcpy(copy, path);
  int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

uint64_t dccl_random_suffix(void* unused) {
  (void)unused;
  uint64_t value;
  if (getrandom(&value, sizeof(value), GRND_NONBLOCK) == (ssize_t)sizeof(value)) return value;
  /* No entropy source (very early boot, old kernel): mix what differs between processes and calls. */
  static _Atomic uint64_t calls;
  struct timespec wall, monotonic;
  clock_gettime(CLOCK_REALTIME, &wall);
  clock_gettime(CLOCK_MONOTONIC, &monotonic);
  uint64_t h = dccl_mix64((uint64_t)wall.tv_sec * 1000000000ULL + (uint64_t)wall.tv_nsec);
  h = dccl_mix64(h ^ ((uint64_t)monotonic.tv_sec * 1000000000ULL + (uint64_t)monotonic.tv_nsec));
  h = dccl_mix64(h ^ (uint64_t)getpid() ^ ((uint64_t)(uintptr_t)&value << 16));
  return dccl_mix64(h ^ atomic_fetch_add(&calls, 1));
}

int dccl_temporary_name(const char* path, uint64_t suffix, char* name, size_t size) {
  int n = snprintf(name, size, "%s.tmp.%016llx", path, (unsigned long long)suffix);
  return n >= 0 && (size_t)n < size ? 0 : -1;
}

/* Creates a temporary file of a new name beside `path` (O_EXCL: never one that exists, whoever made
 * it); returns its descriptor and name, or -1 with a reason. */
static int create_temporary(const char* path, dccl_suffix_source next_suffix, void* context, char* temporary,
                            size_t temporary_size, char* error, size_t error_size) {
  enum { ATTEMPTS = 8 };
  for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
    if (dccl_temporary_name(path, next_suffix(context), temporary, temporary_size) != 0) {
      snprintf(error, error_size, "path too long");
      return -1;
    }
    int fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) return fd;
    if (errno != EEXIST) {
      snprintf(error, error_size, "cannot create %s: %s", temporary, strerror(errno));
      return -1;
    }
  }
  snprintf(error, error_size, "cannot create a temporary file beside %s: %d names taken already", path, ATTEMPTS);
  return -1;
}

int dccl_atomic_write(const char* path, const void* data, size_t size, char* error, size_t error_size) {
  return dccl_atomic_write_with(path, data, size, dccl_random_suffix, NULL, error, error_size);
}

int dccl_atomic_write_with(const char* path, const void* data, size_t size, dccl_suffix_source next_suffix,
                           void* context, char* error, size_t error_size) {
  char temporary[4096];
  int fd = create_temporary(path, next_suffix, context, temporary, sizeof(temporary), error, error_size);
  if (fd < 0) return -1;
  const char* cursor = data;
  size_t left = size;
  while (left > 0) {
    ssize_t wrote = write(fd, cursor, left);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      snprintf(error, error_size, "cannot write %s: %s", temporary, wrote < 0 ? strerror(errno) : "short write");
      close(fd);
      unlink(temporary);
      return -1;
    }
    cursor += wrote;
    left -= (size_t)wrote;
  }
  if (fsync(fd) != 0) {
    snprintf(error, error_size, "cannot fsync %s: %s", temporary, strerror(errno));
    close(fd);
    unlink(temporary);
    return -1;
  }
  close(fd);
  if (rename(temporary, path) != 0) {
    snprintf(error, error_size, "cannot rename %s to %s: %s", temporary, path, strerror(errno));
    unlink(temporary);
    return -1;
  }
  fsync_directory_of(path); /* best effort: the data itself is already durable */
  return 0;
}
