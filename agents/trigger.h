/* agents/trigger.h: Agent-1, the congestion trigger.
 *
 * Every measured collective belongs to a stream (collective, log2 size bin). Its latency becomes a
 * residual z = log(latency) - baseline(action), where the baseline is a slow, outlier-clipped running
 * mean per action learned in calm periods: switching actions therefore does not look like congestion.
 * An LSTM shared by all streams reads the recent residuals (with inter-call gaps and action switches)
 * and forecasts the next one; the forecast error, standardised and winsorised at +-clip, feeds a
 * two-sided CUSUM. An upward alarm is a congestion onset; then a downward CUSUM relative to the
 * congested level detects the return to normal. An onset also dates its change: the calls since the
 * upward statistic last left 0 (the CUSUM's estimate of the change point). With the LSTM off the
 * forecast is 0 and this is a plain CUSUM on the residuals (the comparison the design asks for).
 *
 * States: none -> rising (half the threshold reached) -> congested (alarm) -> recovering (downward
 * alarm) -> none (confirmed). Onset and recovery are reported as events, which make the config agent
 * re-explore the affected cells. Memory is fixed at init; observing never allocates. */
#ifndef DYNAMICCL_AGENTS_TRIGGER_H
#define DYNAMICCL_AGENTS_TRIGGER_H

#include <stdint.h>

#include "../core/decision_table.h"
#include "../core/features.h"
#include "../nn/dense.h"
#include "../nn/lstm.h"
#include "cusum.h"

#define DCCL_TRIGGER_STREAMS (DCCL_NUM_COLLS * DCCL_SIZE_BINS)
#define DCCL_TRIGGER_BASELINES 24
#define DCCL_TRIGGER_HIDDEN 16
#define DCCL_TRIGGER_INPUTS 3
#define DCCL_TRIGGER_WINDOW 32

enum { DCCL_TRIGGER_EVENT_NONE = 0, DCCL_TRIGGER_EVENT_ONSET = 1, DCCL_TRIGGER_EVENT_RECOVERED = 2 };

typedef struct dccl_trigger_options {
  int use_lstm;        /* 0: plain CUSUM on the residuals */
  double k, h;         /* CUSUM allowance and threshold (standard deviations) */
  double clip;         /* standardised errors are clipped to +-clip, so one outlier cannot alarm */
  double baseline_rate;/* learning rate of the per-action baselines */
  int warmup;          /* observations of an action before its residuals count */
  int train_every;     /* observations between LSTM training steps */
  double learning_rate;
  uint64_t seed;
} dccl_trigger_options;

void dccl_trigger_default_options(dccl_trigger_options* options);

typedef struct dccl_trigger_baseline {
  dccl_action action;
  float mean;          /* log latency */
  uint32_t count;
  uint32_t last_use;
  uint8_t born_congested;
} dccl_trigger_baseline;

typedef struct dccl_trigger_stream {
  uint8_t active, state;
  dccl_trigger_baseline baselines[DCCL_TRIGGER_BASELINES];
  dccl_action last_action;
  float h[DCCL_TRIGGER_HIDDEN], c[DCCL_TRIGGER_HIDDEN];
  float forecast;        /* of the next standardised residual */
  float sigma;           /* scale of the residuals (log units) */
  float error_mean, error_scale;
  float congested_level; /* standardised residual level since the onset */
  uint32_t calm_count;   /* calm observations that shaped the normalisers */
  uint32_t since_change; /* observations since the last state change */
  uint32_t since_onset;  /* observations since the last onset: the first 8 shape congested_level */
  uint32_t rise_calls;   /* observations since the upward CUSUM statistic was last 0 (calm) */
  uint64_t count, clock;
  dccl_cusum cusum;
  float history[DCCL_TRIGGER_WINDOW + 1][DCCL_TRIGGER_INPUTS]; /* recent inputs, ring */
  uint8_t history_length, history_head;
} dccl_trigger_stream;

typedef struct dccl_trigger_result {
  int stream;
  int state;      /* DCCL_TRIGGER_* after this observation */
  int event;      /* DCCL_TRIGGER_EVENT_* */
  int change_calls;/* with an onset: the stream's observations before this one that came after the change,
                      as the CUSUM dates it (those since its upward statistic last left 0) */
  double residual;/* standardised residual of this observation (0 during warm-up) */
  double cusum_up, cusum_down; /* divided by h */
} dccl_trigger_result;

typedef struct dccl_trigger {
  dccl_trigger_options options;
  dccl_params params;
  dccl_lstm lstm;
  dccl_dense head;
  dccl_rng rng;
  dccl_trigger_stream* streams; /* DCCL_TRIGGER_STREAMS */
  uint64_t observations, training_steps, onsets, recoveries;
  float* batch_inputs;  /* WINDOW x batch x INPUTS */
  float* batch_targets; /* WINDOW x batch */
  float* batch_outputs, *batch_gradients, *hidden_gradients;
} dccl_trigger;

int dccl_trigger_init(dccl_trigger* trigger, const dccl_trigger_options* options);
void dccl_trigger_free(dccl_trigger* trigger);
/* Bytes allocated by dccl_trigger_init (not counting the struct itself). */
size_t dccl_trigger_memory_bytes(const dccl_trigger* trigger);

/* One measured collective. `gap_us` is the idle time before it (0 when unknown). */
void dccl_trigger_observe(dccl_trigger* trigger, int coll, int size_bin, dccl_action action, double latency_us,
                          double gap_us, dccl_trigger_result* result);

/* The state of a stream, for the config agent's features. */
void dccl_trigger_stream_state(const dccl_trigger* trigger, int coll, int size_bin, int* state, double* cusum_up,
                               double* cusum_down);
/* Share of active streams that are congested or recovering. */
double dccl_trigger_congested_fraction(const dccl_trigger* trigger);
/* Forgets everything learned about streams but keeps the LSTM's weights. */
void dccl_trigger_reset_streams(dccl_trigger* trigger);

#endif
