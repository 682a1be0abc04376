/* persist/atomic_file.c: crash-safe file replacement (temporary file, fsync, rename, fsync dir). */
#include "atomic_file.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int dccl_atomic_write(const char* path, const void* data, size_t size, char* error, size_t error_size) {
  char temporary[4096];
  /* Unique per process and per save, so concurrent saves (two communicators) never share a file. */
  static _Atomic unsigned long saves;
  unsigned long save = atomic_fetch_add(&saves, 1);
  if (snprintf(temporary, sizeof(temporary), "%s.tmp.%ld.%lu", path, (long)getpid(), save) >= (int)sizeof(temporary)) {
    snprintf(error, error_size, "path too long");
    return -1;
  }
  int fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    snprintf(error, error_size, "cannot create %s: %s", temporary, strerror(errno));
    return -1;
  }
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
