/* persist/table_text.c: reads and writes decision tables in the line-oriented text format. */
#include "table_text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/text_file.h"
#include "atomic_file.h"

static int parse_bound(const char* text, uint64_t* out, int is_max) {
  if (strcmp(text, "-1") == 0) {
    *out = is_max ? UINT64_MAX : 0;
    return 0;
  }
  unsigned long long value;
  if (dccl_parse_bytes(text, &value) != 0) return -1;
  *out = value;
  return 0;
}

static int parse_selector(const char* text, int low, int high, int* out) {
  char* end = NULL;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || (value != -1 && (value < low || value > high))) return -1;
  *out = (int)value;
  return 0;
}

/* Applies one parsed entry; returns 0, or -1 with a reason. */
static int parse_entry(char* line, int n_ranks, int n_nodes, dccl_table* table, char* why, size_t why_size,
                       int* widened) {
  char* fields[6];
  int count = dccl_split_fields(line, ',', fields, 6);
  if (count < 4 || count > 6) {
    snprintf(why, why_size, "expected 4 to 6 comma-separated fields, found %d", count);
    return -1;
  }
  int coll = dccl_coll_parse(fields[0]);
  if (coll < 0) {
    snprintf(why, why_size, "unknown collective '%s'", fields[0]);
    return -1;
  }
  uint64_t low, high;
  if (parse_bound(fields[1], &low, 0) != 0 || parse_bound(fields[2], &high, 1) != 0 || low > high) {
    snprintf(why, why_size, "bad byte range '%s'..'%s'", fields[1], fields[2]);
    return -1;
  }
  /* `A|B`: the cell's calls alternate, A on even-numbered calls and B on odd ones; `A||B`: in blocks of
   * four calls, A on calls 0-3 of every eight and B on calls 4-7. */
  char* second_text = strchr(fields[3], '|');
  int blocks = 0;
  if (second_text != NULL) {
    *second_text++ = '\0';
    if (*second_text == '|') {
      blocks = 1;
      second_text++;
    }
  }
  dccl_action actions[2] = {DCCL_ACTION_NCCL, DCCL_ACTION_NCCL};
  for (int k = 0; k < (second_text != NULL ? 2 : 1); k++) {
    const char* text = k == 0 ? fields[3] : second_text;
    if (dccl_action_parse(text, &actions[k]) != 0) {
      snprintf(why, why_size, "bad action '%s' (expected nccl or algorithm/protocol[/ch=N][/chunk=SIZE], or two of them as A|B or A||B)",
               text);
      return -1;
    }
    dccl_action a = actions[k];
    if (!dccl_action_is_nccl(a) && !dccl_algo_proto_allowed(coll, dccl_action_algo(a), dccl_action_proto(a), n_ranks, n_nodes)) {
      snprintf(why, why_size, "%s/%s cannot run %s on %d ranks over %d nodes", dccl_algo_name(dccl_action_algo(a)),
               dccl_proto_name(dccl_action_proto(a)), dccl_coll_name(coll), n_ranks, n_nodes);
      return -1;
    }
    if (!dccl_action_resources_valid(a)) {
      snprintf(why, why_size, "%s takes no channel count or chunk size (it runs on NCCL's own resources)",
               dccl_algo_name(dccl_action_algo(a)));
      return -1;
    }
  }
  uint8_t alternate_mask = second_text == NULL ? 0 : blocks ? DCCL_TABLE_BLOCKS_MASK : DCCL_TABLE_ALTERNATE_MASK;
  int pipe = -1, reg = -1;
  if ((count > 4 && parse_selector(fields[4], 1, 1 << 20, &pipe) != 0) ||
      (count > 5 && parse_selector(fields[5], 0, 1, &reg) != 0)) {
    snprintf(why, why_size, "numPipeOps must be -1 or positive, regBuff -1, 0 or 1");
    return -1;
  }
  int first_bin = dccl_size_bin(low), last_bin = dccl_size_bin(high);
  uint64_t bin_low = first_bin == 0 ? 0 : 1ULL << first_bin;
  uint64_t bin_high = last_bin == DCCL_SIZE_BINS - 1 ? UINT64_MAX : (1ULL << (last_bin + 1)) - 1;
  *widened = (low != bin_low || high != bin_high);
  for (int bin = first_bin; bin <= last_bin; bin++)
    for (int p = 0; p < DCCL_PIPE_BUCKETS; p++) {
      if (pipe >= 0 && dccl_pipe_bucket(pipe) != p) continue;
      for (int r = 0; r < DCCL_REG_STATES; r++) {
        if (reg >= 0 && reg != r) continue;
        int cell = dccl_cell_index(coll, bin, p, r);
        dccl_table_set(table, cell, actions[0]);
        dccl_table_set_explore(table, cell, actions[1], alternate_mask); /* a later line replaces both */
      }
    }
  return 0;
}

int dccl_table_text_parse(const char* text, const char* source, int n_ranks, int n_nodes, dccl_table* table,
                          const dccl_logger* logger) {
  int rejected = 0, line_number = 0, too_long = 0;
  const char* cursor = text;
  char line[1024];
  while (dccl_next_line(&cursor, line, sizeof(line), &line_number, &too_long)) {
    if (too_long) {
      DCCL_WARN(logger, "%s:%d: line too long; skipped", source, line_number);
      rejected++;
      continue;
    }
    if (line[0] == '\0' || line[0] == '#') continue;
    char why[256];
    int widened = 0;
    if (parse_entry(line, n_ranks, n_nodes, table, why, sizeof(why), &widened) != 0) {
      DCCL_WARN(logger, "%s:%d: %s; line skipped", source, line_number, why);
      rejected++;
    } else if (widened) {
      DCCL_INFO(logger, "%s:%d: byte range widened to whole power-of-two size bins", source, line_number);
    }
  }
  return rejected;
}

int dccl_table_text_load(const char* path, int n_ranks, int n_nodes, dccl_table* table, const dccl_logger* logger) {
  char error[256];
  char* text = dccl_read_text_file(path, 64u << 20, error, sizeof(error));
  if (text == NULL) {
    DCCL_WARN(logger, "cannot read decision table %s: %s", path, error);
    return -1;
  }
  int rejected = dccl_table_text_parse(text, path, n_ranks, n_nodes, table, logger);
  free(text);
  return rejected;
}

typedef struct text_buffer {
  char* data;
  size_t length, capacity;
  int failed;
} text_buffer;

static void append(text_buffer* b, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void append(text_buffer* b, const char* fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list args;
    va_start(args, fmt);
    /* Before the first allocation there is nowhere to write (and no arithmetic on a null pointer). */
    char* end = b->data != NULL ? b->data + b->length : NULL;
    int n = vsnprintf(end, b->capacity - b->length, fmt, args);
    va_end(args);
    if (n < 0) {
      b->failed = 1;
      return;
    }
    if ((size_t)n < b->capacity - b->length) {
      b->length += (size_t)n;
      return;
    }
    size_t capacity = (b->capacity + (size_t)n + 1) * 2;
    char* grown = realloc(b->data, capacity);
    if (grown == NULL) {
      b->failed = 1;
      return;
    }
    b->data = grown;
    b->capacity = capacity;
  }
}

/* What a line can say about a cell: its action and, when its calls alternate (1: call by call, `A|B`;
 * 2: in blocks, `A||B`), the second action (other exploration masks, a learner's, are not written). */
typedef struct cell_text {
  dccl_action action, second;
  int alternates;
} cell_text;

static cell_text cell_text_of(const dccl_table* table, int cell) {
  uint8_t mask = atomic_load_explicit(&table->explore_mask[cell], memory_order_relaxed);
  int alternates = mask == DCCL_TABLE_ALTERNATE_MASK ? 1 : mask == DCCL_TABLE_BLOCKS_MASK ? 2 : 0;
  cell_text t = {dccl_table_get(table, cell),
                 alternates ? atomic_load_explicit(&table->explore[cell], memory_order_relaxed) : DCCL_ACTION_NCCL,
                 alternates};
  return t;
}

static int same_cell_text(cell_text a, cell_text b) {
  return a.action == b.action && a.alternates == b.alternates && a.second == b.second;
}

static int same_for_all_variants(const dccl_table* table, int coll) {
  for (int bin = 0; bin < DCCL_SIZE_BINS; bin++) {
    cell_text first = cell_text_of(table, dccl_cell_index(coll, bin, 0, 0));
    for (int p = 0; p < DCCL_PIPE_BUCKETS; p++)
      for (int r = 0; r < DCCL_REG_STATES; r++)
        if (!same_cell_text(cell_text_of(table, dccl_cell_index(coll, bin, p, r)), first)) return 0;
  }
  return 1;
}

static void write_runs(text_buffer* b, const dccl_table* table, int coll, int pipe, int reg, int with_selectors) {
  static const int pipe_representative[DCCL_PIPE_BUCKETS] = {1, 2, 3, 5};
  int bin = 0;
  while (bin < DCCL_SIZE_BINS) {
    cell_text cell = cell_text_of(table, dccl_cell_index(coll, bin, pipe, reg));
    int end = bin;
    while (end + 1 < DCCL_SIZE_BINS && same_cell_text(cell_text_of(table, dccl_cell_index(coll, end + 1, pipe, reg)), cell))
      end++;
    if (!dccl_action_is_nccl(cell.action) || cell.alternates) {
      char first[96], second[96], text[200];
      dccl_action_format(cell.action, first, sizeof(first));
      dccl_action_format(cell.second, second, sizeof(second));
      snprintf(text, sizeof(text), "%s%s%s", first, cell.alternates == 2 ? "||" : cell.alternates ? "|" : "", cell.alternates ? second : "");
      unsigned long long low = bin == 0 ? 0 : 1ULL << bin;
      if (end == DCCL_SIZE_BINS - 1) append(b, "%s,%llu,-1,%s", dccl_coll_name(coll), low, text);
      else append(b, "%s,%llu,%llu,%s", dccl_coll_name(coll), low, (1ULL << (end + 1)) - 1, text);
      if (with_selectors) append(b, ",%d,%d", pipe_representative[pipe], reg);
      append(b, "\n");
    }
    bin = end + 1;
  }
}

char* dccl_table_text_format(const dccl_table* table) {
  text_buffer b = {0};
  append(&b, "# DynamICCL decision table\n# collective,min_bytes,max_bytes,action[,numPipeOps[,regBuff]]\n");
  for (int coll = 0; coll < DCCL_NUM_COLLS; coll++) {
    if (same_for_all_variants(table, coll)) {
      write_runs(&b, table, coll, 0, 0, 0);
    } else {
      for (int p = 0; p < DCCL_PIPE_BUCKETS; p++)
        for (int r = 0; r < DCCL_REG_STATES; r++) write_runs(&b, table, coll, p, r, 1);
    }
  }
  if (b.failed) {
    free(b.data);
    return NULL;
  }
  return b.data;
}

int dccl_table_text_save(const char* path, const dccl_table* table, char* error, size_t error_size) {
  char* text = dccl_table_text_format(table);
  if (text == NULL) {
    snprintf(error, error_size, "out of memory");
    return -1;
  }
  int rc = dccl_atomic_write(path, text, strlen(text), error, error_size);
  free(text);
  return rc;
}
