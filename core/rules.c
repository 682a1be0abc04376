/* core/rules.c: parses NCCL example-tuner CSV rule files and compiles them into a per-cell index. */
#include "rules.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_file.h"

/* Integer field: -1 or a value in [low, high]. */
static int parse_int_field(const char* text, long long low, long long high, long long* out) {
  errno = 0;
  char* end = NULL;
  long long value = strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') return -1;
  if (value != -1 && (value < low || value > high)) return -1;
  *out = value;
  return 0;
}

/* The counts a rule names, for messages: " on 2 nodes", " with 8 ranks", both, or "". */
static void describe_shape(const dccl_rule* rule, char* out, size_t size) {
  int length = 0;
  out[0] = '\0';
  if (rule->n_nodes > 0)
    length = snprintf(out, size, " on %d node%s", rule->n_nodes, rule->n_nodes == 1 ? "" : "s");
  if (rule->n_ranks > 0 && length >= 0 && (size_t)length < size)
    snprintf(out + length, size - (size_t)length, " with %d rank%s", rule->n_ranks, rule->n_ranks == 1 ? "" : "s");
}

static int parse_rule_line(char* line, int line_number, dccl_rule* rule, char* why, size_t why_size) {
  char* fields[10];
  int count = dccl_split_fields(line, ',', fields, 10);
  if (count < 8 || count > 10) {
    snprintf(why, why_size, "expected 8 to 10 comma-separated fields, found %d", count);
    return -1;
  }
  memset(rule, 0, sizeof(*rule));
  rule->line = line_number;
  rule->coll = dccl_coll_parse(fields[0]);
  if (rule->coll < 0) {
    snprintf(why, why_size, "unknown collective '%s'", fields[0]);
    return -1;
  }
  long long min_bytes, max_bytes, channels, n_nodes, n_ranks, pipe = -1, reg = -1;
  if (parse_int_field(fields[1], 0, INT64_MAX, &min_bytes) != 0 ||
      parse_int_field(fields[2], 0, INT64_MAX, &max_bytes) != 0) {
    snprintf(why, why_size, "min_bytes/max_bytes must be -1 or non-negative integers");
    return -1;
  }
  rule->min_bytes = min_bytes < 0 ? 0 : (uint64_t)min_bytes;
  rule->max_bytes = max_bytes < 0 ? UINT64_MAX : (uint64_t)max_bytes;
  rule->algo = dccl_algo_parse(fields[3]);
  rule->proto = dccl_proto_parse(fields[4]);
  if (rule->algo < 0 || rule->proto < 0) {
    snprintf(why, why_size, "unknown algorithm '%s' or protocol '%s'", fields[3], fields[4]);
    return -1;
  }
  /* Ranges are dccl_rule_check's. */
  if (parse_int_field(fields[5], INT_MIN, INT_MAX, &channels) != 0 ||
      parse_int_field(fields[6], INT_MIN, INT_MAX, &n_nodes) != 0 ||
      parse_int_field(fields[7], INT_MIN, INT_MAX, &n_ranks) != 0 ||
      (count > 8 && parse_int_field(fields[8], INT_MIN, INT_MAX, &pipe) != 0) ||
      (count > 9 && parse_int_field(fields[9], INT_MIN, INT_MAX, &reg) != 0)) {
    snprintf(why, why_size, "channels, nNodes, nRanks, numPipeOps and regBuff must be integers");
    return -1;
  }
  rule->channels = (int)channels;
  rule->n_nodes = (int)n_nodes;
  rule->n_ranks = (int)n_ranks;
  rule->num_pipe_ops = (int)pipe;
  rule->reg_buff = (int)reg;
  return dccl_rule_check(rule, why, why_size);
}

int dccl_rule_check(const dccl_rule* rule, char* why, size_t why_size) {
  if (rule->coll < 0 || rule->coll >= DCCL_NUM_COLLS || rule->algo < 0 || rule->algo >= DCCL_NUM_ALGOS ||
      rule->proto < 0 || rule->proto >= DCCL_NUM_PROTOS) {
    snprintf(why, why_size, "collective %d, algorithm %d or protocol %d out of range", rule->coll, rule->algo,
             rule->proto);
    return -1;
  }
  if (rule->min_bytes > rule->max_bytes) {
    snprintf(why, why_size, "min_bytes %llu is larger than max_bytes %llu", (unsigned long long)rule->min_bytes,
             (unsigned long long)rule->max_bytes);
    return -1;
  }
  if (!(rule->channels == -1 || (rule->channels >= 1 && rule->channels <= DCCL_MAX_CHANNELS)) ||
      !(rule->n_nodes == -1 || (rule->n_nodes >= 1 && rule->n_nodes <= 1 << 20)) ||
      !(rule->n_ranks == -1 || (rule->n_ranks >= 1 && rule->n_ranks <= 1 << 24)) ||
      !(rule->num_pipe_ops == -1 || (rule->num_pipe_ops >= 1 && rule->num_pipe_ops <= 1 << 20)) ||
      rule->reg_buff < -1 || rule->reg_buff > 1) {
    snprintf(why, why_size, "channels (1..%d), nNodes, nRanks, numPipeOps must be -1 or positive, regBuff -1, 0 or 1",
             DCCL_MAX_CHANNELS);
    return -1;
  }
  if (rule->channels > 0 && !dccl_algo_takes_channels(rule->algo)) {
    snprintf(why, why_size, "%s takes no channel count (it runs on NCCL's own resources; -1 leaves them to NCCL)",
             dccl_algo_name(rule->algo));
    return -1;
  }
  /* A pin that can never apply is a mistake worth reporting, not a silent no-op: a shape no communicator
   * has, or a pair NCCL cannot run on any communicator of the node and rank counts the rule names. */
  if (rule->n_nodes > 0 && rule->n_ranks > 0 && rule->n_ranks < rule->n_nodes) {
    snprintf(why, why_size, "nRanks %d is fewer than nNodes %d: no communicator has that shape", rule->n_ranks,
             rule->n_nodes);
    return -1;
  }
  if (!dccl_algo_proto_possible(rule->coll, rule->algo, rule->proto, rule->n_ranks, rule->n_nodes)) {
    char shape[64];
    describe_shape(rule, shape, sizeof(shape));
    snprintf(why, why_size, "%s/%s can never run %s%s", dccl_algo_name(rule->algo), dccl_proto_name(rule->proto),
             dccl_coll_name(rule->coll), shape);
    return -1;
  }
  return 0;
}

int dccl_rules_parse(const char* text, const char* source, dccl_rule_list* out, const dccl_logger* logger) {
  out->count = 0;
  int rejected = 0, line_number = 0, too_long = 0;
  const char* cursor = text;
  char line[1024];
  while (dccl_next_line(&cursor, line, sizeof(line), &line_number, &too_long)) {
    if (too_long) {
      DCCL_WARN(logger, "%s:%d: line longer than %zu characters; skipped", source, line_number, sizeof(line) - 1);
      rejected++;
      continue;
    }
    if (line[0] == '\0' || line[0] == '#') continue;
    dccl_rule rule;
    char why[256];
    if (parse_rule_line(line, line_number, &rule, why, sizeof(why)) != 0) {
      DCCL_WARN(logger, "%s:%d: %s; line skipped", source, line_number, why);
      rejected++;
      continue;
    }
    if (out->count >= DCCL_MAX_RULES) {
      DCCL_WARN(logger, "%s:%d: more than %d rules; the rest are skipped", source, line_number, DCCL_MAX_RULES);
      rejected++;
      break;
    }
    out->rules[out->count++] = rule;
  }
  return rejected;
}

int dccl_rules_load(const char* path, dccl_rule_list* out, const dccl_logger* logger) {
  out->count = 0;
  char error[256];
  char* text = dccl_read_text_file(path, 16u << 20, error, sizeof(error));
  if (text == NULL) {
    DCCL_WARN(logger, "cannot read rules file %s: %s; running without pins", path, error);
    return -1;
  }
  int rejected = dccl_rules_parse(text, path, out, logger);
  free(text);
  return rejected;
}

/* Does the rule's byte range intersect the size bin? Bin b holds [2^b, 2^(b+1)-1]; bin 0 also holds 0
 * and the last bin holds everything above. */
static int rule_touches_bin(const dccl_rule* rule, int bin) {
  uint64_t low = bin == 0 ? 0 : (1ULL << bin);
  uint64_t high = bin == DCCL_SIZE_BINS - 1 ? UINT64_MAX : (1ULL << (bin + 1)) - 1;
  return rule->min_bytes <= high && rule->max_bytes >= low;
}

static int rule_touches_pipe_bucket(const dccl_rule* rule, int bucket) {
  return rule->num_pipe_ops < 0 || dccl_pipe_bucket(rule->num_pipe_ops) == bucket;
}

static int rule_touches_cell(const dccl_rule* rule, int cell) {
  int coll, bin, pipe, reg;
  dccl_cell_decode(cell, &coll, &bin, &pipe, &reg);
  return rule->coll == coll && rule_touches_bin(rule, bin) && rule_touches_pipe_bucket(rule, pipe) &&
         (rule->reg_buff < 0 || rule->reg_buff == reg);
}

int dccl_pins_compile(dccl_pin_set* pins, const dccl_rule_list* rules, int n_nodes, int n_ranks) {
  memset(pins, 0, sizeof(*pins));
  int kept = 0;
  for (int i = 0; i < rules->count; i++) {
    const dccl_rule* r = &rules->rules[i];
    if ((r->n_nodes < 0 || r->n_nodes == n_nodes) && (r->n_ranks < 0 || r->n_ranks == n_ranks)) kept++;
  }
  if (kept == 0) return 0;
  pins->rules = calloc((size_t)kept, sizeof(dccl_rule));
  if (pins->rules == NULL) return -1;
  for (int i = 0; i < rules->count; i++) {
    const dccl_rule* r = &rules->rules[i];
    if ((r->n_nodes < 0 || r->n_nodes == n_nodes) && (r->n_ranks < 0 || r->n_ranks == n_ranks))
      pins->rules[pins->count++] = *r;
  }
  /* Two passes: count candidates per cell, then fill, keeping file order inside each cell. */
  size_t total = 0;
  for (int cell = 0; cell < DCCL_TABLE_CELLS; cell++) {
    pins->cell_start[cell] = (uint32_t)total;
    for (int i = 0; i < pins->count; i++) total += rule_touches_cell(&pins->rules[i], cell);
  }
  pins->cell_start[DCCL_TABLE_CELLS] = (uint32_t)total;
  pins->cell_rules = calloc(total > 0 ? total : 1, sizeof(uint16_t));
  if (pins->cell_rules == NULL) {
    dccl_pins_free(pins);
    return -1;
  }
  size_t next = 0;
  for (int cell = 0; cell < DCCL_TABLE_CELLS; cell++)
    for (int i = 0; i < pins->count; i++)
      if (rule_touches_cell(&pins->rules[i], cell)) pins->cell_rules[next++] = (uint16_t)i;
  return 0;
}

void dccl_pins_free(dccl_pin_set* pins) {
  free(pins->rules);
  free(pins->cell_rules);
  memset(pins, 0, sizeof(*pins));
}
