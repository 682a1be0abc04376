/* sim/workload.c: parses workload files and iterates their calls. */
#include "workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/action.h"
#include "../core/text_file.h"
#include "keyvalue.h"
#include "scenario_path.h"

static int add_op(dccl_workload* w, const dccl_workload_op* op) {
  if (w->n_ops >= DCCL_WORKLOAD_MAX_OPS) return -1;
  w->ops[w->n_ops++] = *op;
  return 0;
}

/* Parses the options after the sizes: x<count>, gap=, pause=, pipeops=, regbuff=. */
static int parse_options(char** tokens, int n, dccl_workload_op* op, char* why, size_t why_size) {
  for (int i = 0; i < n; i++) {
    const char* t = tokens[i];
    long long value;
    if (t[0] == 'x') {
      if (dccl_parse_int(t + 1, 1, (long long)1 << 40, &value) != 0) {
        snprintf(why, why_size, "bad count '%s' (x<positive integer>)", t);
        return -1;
      }
      op->count = (uint64_t)value;
    } else if (strncmp(t, "gap=", 4) == 0) {
      if (dccl_parse_duration_us(t + 4, &op->gap_us) != 0) {
        snprintf(why, why_size, "bad gap '%s' (e.g. gap=50us, gap=1.5ms; at most an hour)", t + 4);
        return -1;
      }
    } else if (strncmp(t, "pause=", 6) == 0) {
      if (dccl_parse_duration_us(t + 6, &op->pause_us) != 0) {
        snprintf(why, why_size, "bad pause '%s' (e.g. pause=20ms; at most an hour)", t + 6);
        return -1;
      }
    } else if (strncmp(t, "pipeops=", 8) == 0) {
      if (dccl_parse_int(t + 8, 1, 1 << 20, &value) != 0) {
        snprintf(why, why_size, "bad pipeops '%s'", t + 8);
        return -1;
      }
      op->pipe_ops = (int)value;
    } else if (strncmp(t, "regbuff=", 8) == 0) {
      if (dccl_parse_int(t + 8, 0, 1, &value) != 0) {
        snprintf(why, why_size, "bad regbuff '%s' (0 or 1)", t + 8);
        return -1;
      }
      op->reg_buff = (int)value;
    } else {
      snprintf(why, why_size, "unknown option '%s'", t);
      return -1;
    }
  }
  return 0;
}

/* Sets the calls per iteration; -1 when they, or their product with the iterations, overflow. */
static int count_calls(dccl_workload* w) {
  uint64_t per_iteration = 0, total;
  for (int i = 0; i < w->n_ops; i++)
    if (__builtin_add_overflow(per_iteration, w->ops[i].count, &per_iteration)) return -1;
  if (__builtin_mul_overflow(per_iteration, w->iterations, &total)) return -1;
  w->calls_per_iteration = per_iteration;
  return 0;
}

int dccl_workload_parse(const char* text, const char* source, dccl_workload* w, char* error, size_t error_size) {
  memset(w, 0, sizeof(*w));
  snprintf(w->name, sizeof(w->name), "workload");
  w->iterations = 1;
  w->ops = calloc(DCCL_WORKLOAD_MAX_OPS, sizeof(dccl_workload_op));
  if (w->ops == NULL) {
    snprintf(error, error_size, "out of memory");
    return -1;
  }
  const char* cursor = text;
  char line[512];
  int line_number = 0, too_long = 0;
  while (dccl_next_scenario_line(&cursor, line, sizeof(line), &line_number, &too_long)) {
    if (line[0] == '\0') continue;
    char why[200] = "";
    int rc = 0;
    /* A name line cut for length was cut in its comment or spaces, or in a name far too long to fit. */
    int name_line = dccl_name_line(line, w->name, sizeof(w->name), why, sizeof(why));
    if (name_line < 0) {
      snprintf(error, error_size, "%s:%d: %s", source, line_number, why);
      dccl_workload_free(w);
      return -1;
    }
    if (name_line > 0) continue;
    char* tokens[DCCL_LINE_MAX_WORDS];
    int n = too_long ? 0 : dccl_tokenize(line, tokens, DCCL_LINE_MAX_WORDS);
    dccl_workload_op op = {.count = 1, .pipe_ops = 1};
    if (n == 0) {
      snprintf(why, sizeof(why), "line too long");
      rc = -1;
    } else if (n < 0) {
      snprintf(why, sizeof(why), "more than %d words on a line", DCCL_LINE_MAX_WORDS);
      rc = -1;
    } else if (strcmp(tokens[0], "repeat") == 0) {
      long long iterations;
      if (n != 2 || dccl_parse_int(tokens[1], 1, (long long)1 << 40, &iterations) != 0) {
        snprintf(why, sizeof(why), "expected 'repeat <iterations>'");
        rc = -1;
      } else {
        w->iterations = (uint64_t)iterations;
      }
    } else if (strcmp(tokens[0], "sweep") == 0) {
      unsigned long long low, high;
      if (n < 4 || (op.coll = dccl_coll_parse(tokens[1])) < 0 || dccl_parse_bytes(tokens[2], &low) != 0 ||
          dccl_parse_bytes(tokens[3], &high) != 0 || low == 0 || high < low) {
        snprintf(why, sizeof(why), "expected 'sweep <collective> <min> <max> [options]' with 0 < min <= max");
        rc = -1;
      } else if ((rc = parse_options(tokens + 4, n - 4, &op, why, sizeof(why))) == 0) {
        for (unsigned long long size = low; size <= high && rc == 0; size *= 2) {
          op.bytes = size;
          if (add_op(w, &op) != 0) {
            snprintf(why, sizeof(why), "more than %d operations", DCCL_WORKLOAD_MAX_OPS);
            rc = -1;
          }
          if (size > high / 2) break;
        }
      }
    } else {
      unsigned long long size;
      if (n < 2 || (op.coll = dccl_coll_parse(tokens[0])) < 0 || dccl_parse_bytes(tokens[1], &size) != 0 || size == 0) {
        snprintf(why, sizeof(why), "expected '<collective> <size> [x<count>] [gap=..] [pause=..] [pipeops=..] [regbuff=..]'");
        rc = -1;
      } else if ((rc = parse_options(tokens + 2, n - 2, &op, why, sizeof(why))) == 0) {
        op.bytes = size;
        if (add_op(w, &op) != 0) {
          snprintf(why, sizeof(why), "more than %d operations", DCCL_WORKLOAD_MAX_OPS);
          rc = -1;
        }
      }
    }
    if (rc != 0) {
      snprintf(error, error_size, "%s:%d: %s", source, line_number, why);
      dccl_workload_free(w);
      return -1;
    }
  }
  if (w->n_ops == 0) {
    snprintf(error, error_size, "%s: no collectives", source);
    dccl_workload_free(w);
    return -1;
  }
  if (count_calls(w) != 0) {
    snprintf(error, error_size, "%s: too many calls (the x<count>s times repeat reach 2^64)", source);
    dccl_workload_free(w);
    return -1;
  }
  return 0;
}

int dccl_workload_find(const char* name_or_path, dccl_workload* out, char* error, size_t error_size) {
  char path[1024];
  char* text = dccl_scenario_read("workloads", name_or_path, ".workload", path, sizeof(path), error, error_size);
  if (text == NULL) return -1;
  int rc = dccl_workload_parse(text, path, out, error, error_size);
  free(text);
  return rc;
}

void dccl_workload_free(dccl_workload* w) {
  free(w->ops);
  w->ops = NULL;
  w->n_ops = 0;
}

uint64_t dccl_workload_total_calls(const dccl_workload* w) { return w->calls_per_iteration * w->iterations; }

void dccl_workload_start(dccl_workload_cursor* c, const dccl_workload* w, uint64_t limit) {
  memset(c, 0, sizeof(*c));
  c->workload = w;
  c->limit = limit;
}

uint64_t dccl_call_run_start(const dccl_call* previous, const dccl_call* call) {
  return previous != NULL && previous->coll == call->coll && previous->bytes == call->bytes ? previous->run_start
                                                                                           : call->index;
}

int dccl_workload_next(dccl_workload_cursor* c, dccl_call* out) {
  const dccl_workload* w = c->workload;
  if (c->limit != 0 && c->call >= c->limit) return 0;
  while (c->iteration < w->iterations) {
    if (c->op < w->n_ops && c->within_op < w->ops[c->op].count) {
      const dccl_workload_op* op = &w->ops[c->op];
      out->index = c->call++;
      out->coll = op->coll;
      out->bytes = op->bytes;
      out->gap_us = op->gap_us;
      out->pause_us = c->within_op == 0 ? op->pause_us : 0;
      out->pipe_ops = op->pipe_ops;
      out->reg_buff = op->reg_buff;
      out->run_start = dccl_call_run_start(out->index > 0 ? &c->previous : NULL, out);
      c->previous = *out;
      c->within_op++;
      return 1;
    }
    c->within_op = 0;
    if (++c->op >= w->n_ops) {
      c->op = 0;
      c->iteration++;
    }
  }
  return 0;
}
