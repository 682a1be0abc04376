/* sim/schedule.h: how network congestion and compute interference evolve during a run, read from
 * a conditions file under scenarios/conditions/ (format in scenarios/README.md).
 *
 * Time is counted in collective calls of the communicator, so every policy compared on a scenario
 * meets the same conditions at the same call. Events:
 *   <kind> constant level=L
 *   <kind> step at=CALL level=L [until=CALL]
 *   <kind> ramp from=CALL to=CALL start=L end=L [steps=N]   (a staircase of N levels)
 *   <kind> onoff level=L on=MEAN off=MEAN [from=CALL] [until=CALL]   (Markov on/off episodes)
 * with <kind> congestion or interference and levels in [0, 1]. Overlapping events of one kind
 * combine by maximum. The schedule is expanded once into piecewise-constant segments. */
#ifndef DYNAMICCL_SIM_SCHEDULE_H
#define DYNAMICCL_SIM_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "truth.h"

#define DCCL_SCHEDULE_MAX_EVENTS 64

typedef enum { DCCL_EVENT_CONSTANT, DCCL_EVENT_STEP, DCCL_EVENT_RAMP, DCCL_EVENT_ONOFF } dccl_event_shape;

typedef struct dccl_condition_event {
  int kind; /* 0 congestion, 1 interference */
  dccl_event_shape shape;
  double level, start_level, end_level;
  uint64_t from, until; /* until = UINT64_MAX: no end */
  double mean_on, mean_off;
  int steps;
} dccl_condition_event;

typedef struct dccl_segment {
  uint64_t start; /* first call of the segment */
  dccl_conditions conditions;
} dccl_segment;

typedef struct dccl_schedule {
  char name[64];
  int n_events;
  dccl_condition_event events[DCCL_SCHEDULE_MAX_EVENTS];
  dccl_segment* segments; /* built by dccl_schedule_build */
  size_t n_segments;
} dccl_schedule;

/* Parses; returns 0, or -1 with a line-numbered reason. An empty text is the calm schedule. */
int dccl_schedule_parse(const char* text, const char* source, dccl_schedule* out, char* error, size_t error_size);
int dccl_schedule_find(const char* name_or_path, dccl_schedule* out, char* error, size_t error_size);
/* Expands the events over calls [0, horizon) with a seeded generator; 0 or -1 (out of memory). */
int dccl_schedule_build(dccl_schedule* schedule, uint64_t seed, uint64_t horizon);
void dccl_schedule_free(dccl_schedule* schedule);

/* Conditions at a call; `hint` (may be NULL) caches the last segment index for sequential access.
 * Returns the segment index. */
size_t dccl_schedule_at(const dccl_schedule* schedule, uint64_t call, size_t* hint, dccl_conditions* out);

#endif
