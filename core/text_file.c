/* core/text_file.c: reads whole files into memory with a size limit; walks text lines and fields. */
#include "text_file.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Fails a read: the reason in `error` and in errno (the one state the message is derived from). */
static char* read_failed(int why, char* error, size_t error_size) {
  snprintf(error, error_size, "%s", why == EFBIG ? "file is too large" : why == ENOMEM ? "out of memory" : strerror(why));
  errno = why;
  return NULL;
}

/* Whether a file of this mode may be read: a regular file, or with `streams` a FIFO or character device. */
static int may_read(mode_t mode, int streams) {
  return S_ISREG(mode) || (streams && (S_ISFIFO(mode) || S_ISCHR(mode)));
}

/* Reads a whole file; `streams`: a FIFO or character device is read too (text handed over by a pipe,
 * `<(...)` or /dev/stdin), to its end, and one with no writer reads as empty rather than waiting for one. */
static char* read_whole(const char* path, size_t max_bytes, int streams, size_t* length_out, char* error,
                        size_t error_size) {
  /* Anything but what may be read is refused unopened, and looked at again once open (it may have been
   * replaced). Non-blocking: opening a FIFO waits for a writer otherwise (read() on a regular file never
   * waits); no controlling terminal taken from a tty either. */
  struct stat st;
  int fd = -1, why = stat(path, &st) != 0 ? errno : 0;
  if (why == 0 && may_read(st.st_mode, streams)) {
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    why = fd < 0 ? errno : fstat(fd, &st) != 0 ? errno : 0;
  }
  if (why == 0 && !may_read(st.st_mode, streams)) {
    if (fd >= 0) close(fd);
    snprintf(error, error_size, "not a regular file");
    errno = EINVAL;
    return NULL;
  }
  /* A stream is read as it comes: its writer may not have written yet (a FIFO without one reads empty). */
  if (why == 0 && !S_ISREG(st.st_mode) && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) why = errno;
  if (why != 0) {
    if (fd >= 0) close(fd);
    return read_failed(why, error, error_size);
  }
  FILE* file = fdopen(fd, "rb");
  if (file == NULL) {
    why = errno;
    close(fd);
    return read_failed(why, error, error_size);
  }
  /* Read at most max_bytes + 1 bytes: one byte more than allowed proves the file too large. */
  size_t limit = max_bytes + 1, capacity = limit < 4096 ? limit : 4096, length = 0;
  char* text = malloc(capacity + 1);
  why = text == NULL ? ENOMEM : 0;
  while (why == 0) {
    if (length == capacity) {
      if (capacity == limit) break;
      size_t grown_capacity = capacity * 2 < limit ? capacity * 2 : limit;
      char* grown = realloc(text, grown_capacity + 1);
      if (grown == NULL) {
        why = ENOMEM;
        break;
      }
      text = grown;
      capacity = grown_capacity;
    }
    errno = 0;
    size_t got = fread(text + length, 1, capacity - length, file);
    length += got;
    if (got == 0) {
      if (ferror(file)) why = errno != 0 ? errno : EIO;
      break;
    }
  }
  fclose(file);
  if (why == 0 && length > max_bytes) why = EFBIG;
  if (why != 0) {
    free(text);
    return read_failed(why, error, error_size);
  }
  text[length] = '\0';
  *length_out = length;
  return text;
}

char* dccl_read_file(const char* path, size_t max_bytes, size_t* length_out, char* error, size_t error_size) {
  return read_whole(path, max_bytes, 0, length_out, error, error_size);
}

char* dccl_read_text_file(const char* path, size_t max_bytes, char* error, size_t error_size) {
  size_t length;
  char* text = read_whole(path, max_bytes, 1, &length, error, error_size);
  if (text != NULL && memchr(text, '\0', length) != NULL) {
    snprintf(error, error_size, "file contains a NUL byte (not a text file)");
    free(text);
    return NULL;
  }
  return text;
}

char* dccl_trim(char* text) {
  while (isspace((unsigned char)*text)) text++;
  char* end = text + strlen(text);
  while (end > text && isspace((unsigned char)end[-1])) *--end = '\0';
  return text;
}

int dccl_next_line(const char** cursor, char* line, size_t size, int* line_number, int* too_long) {
  if (**cursor == '\0') return 0;
  const char* newline = strchr(*cursor, '\n');
  size_t length = newline ? (size_t)(newline - *cursor) : strlen(*cursor);
  *too_long = length >= size;
  size_t copy = *too_long ? size - 1 : length;
  memcpy(line, *cursor, copy);
  line[copy] = '\0';
  *cursor += length + (newline ? 1 : 0);
  (*line_number)++;
  char* trimmed = dccl_trim(line);
  memmove(line, trimmed, strlen(trimmed) + 1);
  return 1;
}

int dccl_split_fields(char* line, char separator, char** fields, int max) {
  int count = 0;
  char* cursor = line;
  for (;;) {
    char* next = strchr(cursor, separator);
    if (next != NULL) *next = '\0';
    if (count == max) return max + 1;
    fields[count++] = dccl_trim(cursor);
    if (next == NULL) return count;
    cursor = next + 1;
  }
}
