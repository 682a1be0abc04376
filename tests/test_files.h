/* tests/test_files.h: whole-file reads and writes for tests (reading is the project's dccl_read_file). */
#ifndef DYNAMICCL_TESTS_TEST_FILES_H
#define DYNAMICCL_TESTS_TEST_FILES_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/text_file.h"

/* The whole file, up to 1 GiB (NULL when it cannot be read); free() it. */
static inline uint8_t* test_read_file(const char* path, size_t* size) {
  char error[256];
  *size = 0;
  return (uint8_t*)dccl_read_file(path, (size_t)1 << 30, size, error, sizeof(error));
}

/* Writes `size` bytes as the whole file; 0, or -1 when it could not. */
static inline int test_write_file(const char* path, const void* data, size_t size) {
  FILE* f = fopen(path, "wb");
  if (f == NULL) return -1;
  size_t wrote = size > 0 ? fwrite(data, 1, size, f) : 0;
  return fclose(f) == 0 && wrote == size ? 0 : -1;
}

/* Creates an empty file named after `path_template` (ending in XXXXXX, replaced in place); 0, or -1. */
static inline int test_temp_file(char* path_template) {
  int fd = mkstemp(path_template);
  if (fd < 0) return -1;
  close(fd);
  return 0;
}

/* Sets a file's (or folder's) access and modification times `seconds` in the past; 0, or -1. */
static inline int test_age_file(const char* path, double seconds) {
  struct timespec times[2];
  clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= (time_t)seconds;
  times[1] = times[0];
  return utimensat(AT_FDCWD, path, times, 0);
}

/* Removes a folder and everything below it (links are removed, not followed). */
static inline void test_remove_tree(const char* path) {
  DIR* d = opendir(path);
  if (d != NULL) {
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char child[1024];
      if (snprintf(child, sizeof(child), "%s/", path) >= (int)sizeof(child) - 256) continue; /* (no room for a name) */
      strcat(child, e->d_name);
      struct stat st;
      if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode)) test_remove_tree(child);
      else unlink(child);
    }
    closedir(d);
  }
  rmdir(path);
}

#endif
