/* persist/atomic_file.c: crash-safe file replacement (exclusive temporary file, fsync, rename, fsync dir). */
#include "atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
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

/* Whether `name` is a temporary name of `base` (dccl_temporary_name's, whatever its suffix). */
static int is_temporary_of(const char* name, const char* base) {
  char pattern[4096];
  if (dccl_temporary_name(base, 0, pattern, sizeof(pattern)) != 0) return 0;
  size_t length = strlen(pattern), prefix = length - 16; /* 16 hex digits last */
  if (strlen(name) != length || strncmp(name, pattern, prefix) != 0) return 0;
  return strspn(name + prefix, "0123456789abcdef") == 16;
}

int dccl_remove_stale_temporaries(const char* path, double older_than_seconds, char* error, size_t error_size) {
  char target[4096], folder[4096], base[4096], file[8192];
  if (dccl_resolve_links(path, target, sizeof(target), error, error_size) != 0) return -1;
  strcpy(folder, target); /* dirname and basename may write into their argument */
  strcpy(base, target);
  const char *directory = dirname(folder), *name = basename(base);
  DIR* d = opendir(directory);
  if (d == NULL) {
    snprintf(error, error_size, "cannot read the folder %s: %s", directory, strerror(errno));
    return -1;
  }
  time_t now = time(NULL);
  int removed = 0;
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    if (!is_temporary_of(e->d_name, name)) continue;
    snprintf(file, sizeof(file), "%s/%s", directory, e->d_name);
    struct stat st;
    if (lstat(file, &st) != 0 || !S_ISREG(st.st_mode) || difftime(now, st.st_mtime) < older_than_seconds) continue;
    removed += unlink(file) == 0;
  }
  closedir(d);
  return removed;
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

int dccl_resolve_links(const char* path, char* resolved, size_t size, char* error, size_t error_size) {
  enum { MOST_LINKS = 40 }; /* as the kernel's ELOOP */
  char current[4096], target[4096];
  if (snprintf(current, sizeof(current), "%s", path) >= (int)sizeof(current)) {
    snprintf(error, error_size, "%s: path too long", path);
    return -1;
  }
  for (int links = 0;; links++) {
    struct stat st;
    if (lstat(current, &st) != 0 || !S_ISLNK(st.st_mode)) break; /* not there (yet), or no link */
    if (links == MOST_LINKS) {
      snprintf(error, error_size, "%s: too many levels of symbolic links", path);
      return -1;
    }
    ssize_t n = readlink(current, target, sizeof(target) - 1);
    if (n < 0) {
      snprintf(error, error_size, "cannot read the link %s: %s", current, strerror(errno));
      return -1;
    }
    target[n] = '\0';
    if (target[0] == '/') {
      memcpy(current, target, (size_t)n + 1);
    } else { /* relative to the link's folder */
      char* slash = strrchr(current, '/');
      size_t folder = slash != NULL ? (size_t)(slash - current) + 1 : 0;
      if (folder + (size_t)n >= sizeof(current)) {
        snprintf(error, error_size, "%s: path too long", path);
        return -1;
      }
      memcpy(current + folder, target, (size_t)n + 1);
    }
  }
  if (snprintf(resolved, size, "%s", current) >= (int)size) {
    snprintf(error, error_size, "%s: path too long", path);
    return -1;
  }
  return 0;
}

int dccl_ensure_directory(const char* path, char* error, size_t error_size) {
  char partial[4096];
  size_t length = strlen(path);
  if (length == 0 || length >= sizeof(partial)) {
    snprintf(error, error_size, "%s: %s", path, length == 0 ? "empty path" : "path too long");
    return -1;
  }
  memcpy(partial, path, length + 1);
  for (size_t i = 1; i <= length; i++) { /* each parent in turn, then the folder itself */
    if (partial[i] != '/' && partial[i] != '\0') continue;
    char kept = partial[i];
    partial[i] = '\0';
    if (mkdir(partial, 0755) != 0 && errno != EEXIST) {
      snprintf(error, error_size, "cannot create %s: %s", partial, strerror(errno));
      return -1;
    }
    partial[i] = kept;
  }
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(error, error_size, "%s is not a folder", path);
    return -1;
  }
  if (access(path, W_OK | X_OK) != 0) {
    snprintf(error, error_size, "cannot write in %s: %s", path, strerror(errno));
    return -1;
  }
  return 0;
}

int dccl_atomic_write(const char* path, const void* data, size_t size, char* error, size_t error_size) {
  return dccl_atomic_write_with(path, data, size, dccl_random_suffix, NULL, error, error_size);
}

int dccl_atomic_write_with(const char* path, const void* data, size_t size, dccl_suffix_source next_suffix,
                           void* context, char* error, size_t error_size) {
  /* A link's target is what is replaced (a policy shared through a link stays shared), beside the target,
   * where the rename stays within one file system; a device, FIFO or folder is never replaced. The new
   * file keeps the permissions of the one it replaces. */
  char target[4096], temporary[4096];
  if (dccl_resolve_links(path, target, sizeof(target), error, error_size) != 0) return -1;
  struct stat old;
  int replacing = stat(target, &old) == 0;
  if (replacing && !S_ISREG(old.st_mode)) {
    snprintf(error, error_size, "%s is not a regular file: it is not replaced", target);
    return -1;
  }
  path = target;
  int fd = create_temporary(path, next_suffix, context, temporary, sizeof(temporary), error, error_size);
  if (fd < 0) return -1;
  if (replacing) fchmod(fd, old.st_mode & 07777); /* best effort: another owner's file keeps the umask's */
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
