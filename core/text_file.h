/* core/text_file.h: reading whole text files with a size limit, and walking their lines and fields
 * (shared by the rule, decision-table and scenario parsers). */
#ifndef DYNAMICCL_CORE_TEXT_FILE_H
#define DYNAMICCL_CORE_TEXT_FILE_H

#include <stddef.h>

/* Returns a malloc'd copy of the file (followed by one NUL byte) and its length, or NULL with a reason
 * in `error` when the file cannot be opened or read, is no regular file, or is larger than max_bytes;
 * errno then says why (ENOENT: no such file; EINVAL: not a regular file, never read (a FIFO is opened
 * without waiting for a writer, then refused); EFBIG: larger than max_bytes; ENOMEM; or what open or
 * read failed with). */
char* dccl_read_file(const char* path, size_t max_bytes, size_t* length, char* error, size_t error_size);

/* Returns a NUL-terminated malloc'd copy of the file, or NULL with a reason in `error` when the file
 * cannot be opened, is larger than max_bytes, or contains a NUL byte. Unlike dccl_read_file, a FIFO or
 * character device is read too (a pipe, `<(...)`, /dev/stdin), to its end; one with no writer reads as
 * empty, never waiting for one. */
char* dccl_read_text_file(const char* path, size_t max_bytes, char* error, size_t error_size);

/* Trims white space at both ends, in place; returns the start of the trimmed text. */
char* dccl_trim(char* text);

/* Copies the next line of `*cursor` into `line`, trimmed, and advances; returns 0 at the end of the
 * text. *line_number counts from 1. A line longer than `size` is cut and flagged in *too_long. */
int dccl_next_line(const char** cursor, char* line, size_t size, int* line_number, int* too_long);

/* Splits `line` in place at `separator` into trimmed fields, keeping empty ones; returns the number
 * of fields, or max + 1 when there are more than `max`. */
int dccl_split_fields(char* line, char separator, char** fields, int max);

#endif
