/* sim/keyvalue.c: line iteration and value parsing for the simulator's text formats. */
#include "keyvalue.h"

#include "../core/text_file.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dccl_next_scenario_line(const char** cursor, char* line, size_t size, int* line_number, int* too_long) {
  if (!dccl_next_line(cursor, line, size, line_number, too_long)) return 0;
  char* hash = strchr(line, '#');
  if (hash != NULL) {
    *hash = '\0';
    char* trimmed = dccl_trim(line);
    memmove(line, trimmed, strlen(trimmed) + 1);
  }
  return 1;
}

int dccl_split_key_value(char* line, char** key, char** value) {
  char* equals = strchr(line, '=');
  if (equals == NULL) return -1;
  *equals = '\0';
  *key = dccl_trim(line);
  *value = dccl_trim(equals + 1);
  return (**key != '\0' && **value != '\0') ? 0 : -1;
}

int dccl_copy_text(char* field, size_t field_size, const char* value, const char* what, char* why, size_t why_size) {
  size_t length = strlen(value);
  if (length >= field_size) {
    snprintf(why, why_size, "%s longer than %zu characters", what, field_size - 1);
    return -1;
  }
  memcpy(field, value, length + 1);
  return 0;
}

int dccl_name_line(char* line, char* name, size_t name_size, char* why, size_t why_size) {
  char *key, *value;
  if (strncmp(line, "name", 4) != 0 || strchr(line, '=') == NULL) return 0;
  if (dccl_split_key_value(line, &key, &value) != 0) snprintf(why, why_size, "expected 'name = <value>'");
  else if (strcmp(key, "name") != 0) snprintf(why, why_size, "unknown key '%s' (the one key is name)", key);
  else if (dccl_copy_text(name, name_size, value, "name", why, why_size) == 0) return 1;
  return -1;
}

int dccl_tokenize(char* line, char** tokens, int max) {
  int count = 0;
  char* save = NULL;
  for (char* token = strtok_r(line, " \t", &save); token != NULL; token = strtok_r(NULL, " \t", &save)) {
    if (count == max) return -1;
    tokens[count++] = token;
  }
  return count;
}

int dccl_parse_double(const char* text, double* out) {
  errno = 0;
  char* end = NULL;
  double value = strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !isfinite(value)) return -1;
  *out = value;
  return 0;
}

int dccl_parse_int(const char* text, long long low, long long high, long long* out) {
  errno = 0;
  char* end = NULL;
  long long value = strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < low || value > high) return -1;
  *out = value;
  return 0;
}

int dccl_parse_duration_us(const char* text, double* out) {
  errno = 0;
  char* end = NULL;
  double value = strtod(text, &end);
  if (errno != 0 || end == text || !isfinite(value) || value < 0) return -1;
  double scale = 1.0;
  if (strcmp(end, "us") == 0 || *end == '\0') scale = 1.0;
  else if (strcmp(end, "ns") == 0) scale = 1e-3;
  else if (strcmp(end, "ms") == 0) scale = 1e3;
  else if (strcmp(end, "s") == 0) scale = 1e6;
  else return -1;
  double us = value * scale;
  if (!isfinite(us) || us > DCCL_MAX_DURATION_US) return -1;
  *out = us;
  return 0;
}
