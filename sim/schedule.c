/* sim/schedule.c: parses condition events and expands them into piecewise-constant segments. */
#include "schedule.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/rng.h"
#include "../core/text_file.h"
#include "keyvalue.h"
#include "scenario_path.h"

/* The longest mean on or off episode, in calls: far beyond any run, and short enough that a sampled
 * episode stays a finite number of calls. */
#define MAX_MEAN_EPISODE 1e15

static int parse_event(char* line, dccl_condition_event* e, char* why, size_t why_size) {
  char* tokens[DCCL_LINE_MAX_WORDS];
  int n = dccl_tokenize(line, tokens, DCCL_LINE_MAX_WORDS);
  if (n < 0) {
    snprintf(why, why_size, "more than %d words on a line", DCCL_LINE_MAX_WORDS);
    return -1;
  }
  if (n < 2) {
    snprintf(why, why_size, "expected '<congestion|interference> <constant|step|ramp|onoff> key=value...'");
    return -1;
  }
  memset(e, 0, sizeof(*e));
  e->until = UINT64_MAX;
  e->steps = 16;
  e->level = -1;
  if (strcmp(tokens[0], "congestion") == 0) e->kind = 0;
  else if (strcmp(tokens[0], "interference") == 0) e->kind = 1;
  else {
    snprintf(why, why_size, "unknown kind '%s' (congestion or interference)", tokens[0]);
    return -1;
  }
  if (strcmp(tokens[1], "constant") == 0) e->shape = DCCL_EVENT_CONSTANT;
  else if (strcmp(tokens[1], "step") == 0) e->shape = DCCL_EVENT_STEP;
  else if (strcmp(tokens[1], "ramp") == 0) e->shape = DCCL_EVENT_RAMP;
  else if (strcmp(tokens[1], "onoff") == 0) e->shape = DCCL_EVENT_ONOFF;
  else {
    snprintf(why, why_size, "unknown shape '%s' (constant, step, ramp or onoff)", tokens[1]);
    return -1;
  }
  int have_from = 0, have_to = 0;
  for (int i = 2; i < n; i++) {
    char* equals = strchr(tokens[i], '=');
    if (equals == NULL) {
      snprintf(why, why_size, "expected key=value, found '%s'", tokens[i]);
      return -1;
    }
    *equals = '\0';
    const char *key = tokens[i], *value = equals + 1;
    double d;
    long long k;
    int ok = 0;
    if (strcmp(key, "level") == 0 || strcmp(key, "start") == 0 || strcmp(key, "end") == 0) {
      ok = dccl_parse_double(value, &d) == 0 && d >= 0 && d <= 1;
      if (ok) *(strcmp(key, "level") == 0 ? &e->level : strcmp(key, "start") == 0 ? &e->start_level : &e->end_level) = d;
    } else if (strcmp(key, "at") == 0 || strcmp(key, "from") == 0) {
      ok = dccl_parse_int(value, 0, INT64_MAX, &k) == 0;
      if (ok) e->from = (uint64_t)k, have_from = 1;
    } else if (strcmp(key, "until") == 0 || strcmp(key, "to") == 0) {
      ok = dccl_parse_int(value, 0, INT64_MAX, &k) == 0;
      if (ok) e->until = (uint64_t)k, have_to = 1;
    } else if (strcmp(key, "on") == 0 || strcmp(key, "off") == 0) {
      ok = dccl_parse_double(value, &d) == 0 && d >= 1 && d <= MAX_MEAN_EPISODE;
      if (ok) *(strcmp(key, "on") == 0 ? &e->mean_on : &e->mean_off) = d;
    } else if (strcmp(key, "steps") == 0) {
      ok = dccl_parse_int(value, 1, 1024, &k) == 0;
      if (ok) e->steps = (int)k;
    } else {
      snprintf(why, why_size, "unknown key '%s'", key);
      return -1;
    }
    if (!ok) {
      snprintf(why, why_size, "bad value '%s' for %s (levels in [0,1], calls >= 0, on/off means in [1, 1e15])", value, key);
      return -1;
    }
  }
  if (e->shape != DCCL_EVENT_RAMP && e->level < 0) {
    snprintf(why, why_size, "level=L is required");
    return -1;
  }
  if (e->shape == DCCL_EVENT_STEP && !have_from) {
    snprintf(why, why_size, "step needs at=CALL");
    return -1;
  }
  if (e->shape == DCCL_EVENT_RAMP && (!have_from || !have_to || e->until <= e->from)) {
    snprintf(why, why_size, "ramp needs from=CALL to=CALL with to > from");
    return -1;
  }
  if (e->shape == DCCL_EVENT_ONOFF && (e->mean_on < 1 || e->mean_off < 1)) {
    snprintf(why, why_size, "onoff needs on=MEAN and off=MEAN (calls, >= 1)");
    return -1;
  }
  if (have_to && e->until <= e->from) {
    snprintf(why, why_size, "until must be after the start");
    return -1;
  }
  return 0;
}

int dccl_schedule_parse(const char* text, const char* source, dccl_schedule* out, char* error, size_t error_size) {
  memset(out, 0, sizeof(*out));
  snprintf(out->name, sizeof(out->name), "calm");
  const char* cursor = text;
  char line[512];
  int line_number = 0, too_long = 0;
  while (dccl_next_scenario_line(&cursor, line, sizeof(line), &line_number, &too_long)) {
    if (line[0] == '\0') continue;
    char why[200];
    /* A name line cut for length was cut in its comment or spaces, or in a name far too long to fit. */
    int name_line = dccl_name_line(line, out->name, sizeof(out->name), why, sizeof(why));
    if (name_line < 0) {
      snprintf(error, error_size, "%s:%d: %s", source, line_number, why);
      return -1;
    }
    if (name_line > 0) continue;
    if (too_long) {
      snprintf(error, error_size, "%s:%d: line too long", source, line_number);
      return -1;
    }
    if (out->n_events >= DCCL_SCHEDULE_MAX_EVENTS) {
      snprintf(error, error_size, "%s:%d: more than %d events", source, line_number, DCCL_SCHEDULE_MAX_EVENTS);
      return -1;
    }
    if (parse_event(line, &out->events[out->n_events], why, sizeof(why)) != 0) {
      snprintf(error, error_size, "%s:%d: %s", source, line_number, why);
      return -1;
    }
    out->n_events++;
  }
  return 0;
}

int dccl_schedule_find(const char* name_or_path, dccl_schedule* out, char* error, size_t error_size) {
  char path[1024];
  char* text = dccl_scenario_read("conditions", name_or_path, ".conditions", path, sizeof(path), error, error_size);
  if (text == NULL) return -1;
  int rc = dccl_schedule_parse(text, path, out, error, error_size);
  free(text);
  return rc;
}

/* Intervals [start, end) at a level, produced by expanding events. */
typedef struct interval {
  uint64_t start, end;
  int kind, event;
  double level;
} interval;

typedef struct interval_list {
  interval* items;
  size_t count, capacity;
} interval_list;

static int push_interval(interval_list* list, uint64_t start, uint64_t end, int kind, int event, double level) {
  if (start >= end || level <= 0) return 0;
  if (list->count == list->capacity) {
    size_t capacity = list->capacity ? list->capacity * 2 : 64;
    interval* grown = realloc(list->items, capacity * sizeof(interval));
    if (grown == NULL) return -1;
    list->items = grown;
    list->capacity = capacity;
  }
  list->items[list->count++] = (interval){start, end, kind, event, level};
  return 0;
}

typedef struct edge {
  uint64_t position;
  int interval;
  int opening;
} edge;

/* By position; at one position closings before openings, so back-to-back intervals hand over. */
static int compare_edges(const void* a, const void* b) {
  const edge *x = a, *y = b;
  if (x->position != y->position) return x->position < y->position ? -1 : 1;
  return x->opening - y->opening;
}

/* Where step k of a ramp starts: from + length * k / steps, rounded down, without overflowing. */
static uint64_t ramp_boundary(const dccl_condition_event* e, int k) {
  uint64_t length = e->until - e->from, steps = (uint64_t)e->steps;
  return e->from + length / steps * (uint64_t)k + length % steps * (uint64_t)k / steps;
}

int dccl_schedule_build(dccl_schedule* s, uint64_t seed, uint64_t horizon) {
  free(s->segments);
  s->segments = NULL;
  s->n_segments = 0;
  interval_list list = {0};
  int failed = 0;
  for (int i = 0; i < s->n_events && !failed; i++) {
    const dccl_condition_event* e = &s->events[i];
    uint64_t end = e->until < horizon ? e->until : horizon;
    switch (e->shape) {
    case DCCL_EVENT_CONSTANT: failed |= push_interval(&list, e->from, end, e->kind, i, e->level); break;
    case DCCL_EVENT_STEP: failed |= push_interval(&list, e->from, end, e->kind, i, e->level); break;
    case DCCL_EVENT_RAMP: {
      for (int k = 0; k < e->steps; k++) {
        uint64_t a = ramp_boundary(e, k), b = ramp_boundary(e, k + 1);
        double level = e->start_level + (e->end_level - e->start_level) * (k + 0.5) / e->steps;
        failed |= push_interval(&list, a < horizon ? a : horizon, b < horizon ? b : horizon, e->kind, i, level);
      }
      /* After the ramp the end level holds until `until` of a following event; a ramp ends its effect. */
      break;
    }
    case DCCL_EVENT_ONOFF: {
      dccl_rng rng;
      dccl_rng_seed(&rng, dccl_mix64(seed ^ (0x51ED270B7A3C9E11ULL * (uint64_t)(i + 1))));
      uint64_t t = e->from;
      int on = 0;
      while (t < end && !failed) {
        double mean = on ? e->mean_on : e->mean_off;
        /* Geometric duration with the given mean. */
        double u = dccl_rng_uniform(&rng);
        double duration = 1 + floor(log(1.0 - u) / log(1.0 - 1.0 / (mean + 1.0)));
        uint64_t stop = isfinite(duration) && duration < (double)(end - t) ? t + (uint64_t)duration : end;
        if (on) failed |= push_interval(&list, t, stop, e->kind, i, e->level);
        t = stop;
        on = !on;
      }
      break;
    }
    }
  }
  /* Sweep over interval edges. Intervals of one event never overlap, so one active level per event
   * is enough; each segment takes the maximum level per kind. */
  edge* edges = failed ? NULL : malloc((2 * list.count + 1) * sizeof(edge));
  if (edges == NULL) failed = 1;
  size_t n_edges = 0;
  if (!failed) {
    for (size_t i = 0; i < list.count; i++) {
      edges[n_edges++] = (edge){list.items[i].start, (int)i, 1};
      edges[n_edges++] = (edge){list.items[i].end, (int)i, 0};
    }
    qsort(edges, n_edges, sizeof(edge), compare_edges);
    s->segments = malloc((n_edges + 1) * sizeof(dccl_segment));
    failed = s->segments == NULL;
  }
  if (!failed) {
    double active[DCCL_SCHEDULE_MAX_EVENTS] = {0};
    size_t i = 0;
    uint64_t position = 0;
    for (;;) {
      while (i < n_edges && edges[i].position == position) {
        const interval* v = &list.items[edges[i].interval];
        active[v->event] = edges[i].opening ? v->level : 0.0;
        i++;
      }
      dccl_conditions c = {0, 0};
      for (int e = 0; e < s->n_events; e++) {
        double* level = s->events[e].kind == 0 ? &c.congestion : &c.interference;
        if (active[e] > *level) *level = active[e];
      }
      if (s->n_segments == 0 || s->segments[s->n_segments - 1].conditions.congestion != c.congestion ||
          s->segments[s->n_segments - 1].conditions.interference != c.interference)
        s->segments[s->n_segments++] = (dccl_segment){position, c};
      if (i >= n_edges) break;
      position = edges[i].position;
    }
  }
  free(edges);
  free(list.items);
  if (failed) {
    free(s->segments);
    s->segments = NULL;
    s->n_segments = 0;
    return -1;
  }
  return 0;
}

void dccl_schedule_free(dccl_schedule* s) {
  free(s->segments);
  s->segments = NULL;
  s->n_segments = 0;
}

size_t dccl_schedule_at(const dccl_schedule* s, uint64_t call, size_t* hint, dccl_conditions* out) {
  if (s == NULL || s->n_segments == 0) {
    out->congestion = out->interference = 0;
    return 0;
  }
  size_t index = hint != NULL ? *hint : 0;
  if (index >= s->n_segments || s->segments[index].start > call) index = 0;
  if (index + 1 < s->n_segments && s->segments[index + 1].start <= call) {
    /* Sequential access moves forward a step at a time; otherwise binary search. */
    if (index + 2 < s->n_segments && s->segments[index + 2].start <= call) {
      size_t lo = index, hi = s->n_segments - 1;
      while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2;
        if (s->segments[mid].start <= call) lo = mid;
        else hi = mid - 1;
      }
      index = lo;
    } else {
      index++;
    }
  }
  if (hint != NULL) *hint = index;
  *out = s->segments[index].conditions;
  return index;
}
