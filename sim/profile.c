/* sim/profile.c: parses hardware profiles (key = value text) with strict checking. */
#include "profile.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../core/action.h"
#include "../core/text_file.h"
#include "keyvalue.h"
#include "scenario_path.h"

static const char* const path_names[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET"};

const char* dccl_path_name(int path_type) {
  return path_type >= 0 && path_type <= DCCL_PATH_NET ? path_names[path_type] : "?";
}

typedef enum { FIELD_INT, FIELD_DOUBLE, FIELD_BYTES, FIELD_PATH } field_type;

typedef struct field {
  const char* key;
  field_type type;
  size_t offset;
  double low, high;
} field;

#define TRUTH(member) offsetof(dccl_profile, truth) + offsetof(dccl_truth_params, member)

/* Scalar keys. Keys with link/protocol/algorithm parts are matched by pattern in set_pattern_key. */
static const field scalar_fields[] = {
  {"nodes", FIELD_INT, offsetof(dccl_profile, n_nodes), 1, 4096},
  {"ranks_per_node", FIELD_INT, offsetof(dccl_profile, ranks_per_node), 1, 72},
  {"compute_capability", FIELD_INT, offsetof(dccl_profile, compute_capability), 60, 200},
  {"channels", FIELD_INT, offsetof(dccl_profile, channels), 1, DCCL_MAX_CHANNELS},
  {"nvls_channels", FIELD_INT, offsetof(dccl_profile, nvls_channels), 0, DCCL_MAX_CHANNELS},
  {"nvls", FIELD_INT, offsetof(dccl_profile, nvls_support), 0, 1},
  {"collnet", FIELD_INT, offsetof(dccl_profile, collnet_support), 0, 1},
  {"nvswitches", FIELD_INT, offsetof(dccl_profile, nvswitches), 0, 64},
  {"truth.launch_us", FIELD_DOUBLE, TRUTH(launch_us), 0, 1e4},
  {"truth.channel_us", FIELD_DOUBLE, TRUTH(channel_us), 0, 100},
  {"truth.tree_bw", FIELD_DOUBLE, TRUTH(tree_bw), 0.01, 10},
  {"truth.ring_bw", FIELD_DOUBLE, TRUTH(ring_bw), 0.01, 10},
  {"truth.pat_bw", FIELD_DOUBLE, TRUTH(pat_bw), 0.01, 10},
  {"truth.nvls_bw", FIELD_DOUBLE, TRUTH(nvls_bw), 0, 1e5},
  {"truth.nvls_step_us", FIELD_DOUBLE, TRUTH(nvls_step_us), 0, 1e4},
  {"truth.collnet_bw", FIELD_DOUBLE, TRUTH(collnet_bw), 0, 1e5},
  {"truth.ll128_congestion", FIELD_DOUBLE, TRUTH(ll128_congestion), 0, 100},
  {"truth.interference_sm", FIELD_DOUBLE, TRUTH(interference_sm), 0, 0.99},
  {"truth.interference_mem", FIELD_DOUBLE, TRUTH(interference_mem), 0, 0.99},
  {"truth.interference_channels", FIELD_DOUBLE, TRUTH(interference_channels), 0, 1},
  {"truth.congestion_bw", FIELD_DOUBLE, TRUTH(congestion_bw), 0, 0.99},
  {"truth.congestion_latency", FIELD_DOUBLE, TRUTH(congestion_latency), 0, 100},
  {"noise.sigma", FIELD_DOUBLE, TRUTH(noise_sigma), 0, 2},
  {"noise.spike_probability", FIELD_DOUBLE, TRUTH(spike_probability), 0, 1},
  {"noise.spike_scale", FIELD_DOUBLE, TRUTH(spike_scale), 1, 100},
  {"noise.burst_probability", FIELD_DOUBLE, TRUTH(burst_probability), 0, 1},
  {"noise.burst_calls", FIELD_DOUBLE, TRUTH(burst_calls), 3, 64},
  {"noise.burst_scale", FIELD_DOUBLE, TRUTH(burst_scale), 4, 100}, /* a burst's calls: burst_scale / 4 to it, never faster */
  {"noise.drift_sigma", FIELD_DOUBLE, TRUTH(drift_sigma), 0, 2},
  {"noise.drift_calls", FIELD_DOUBLE, TRUTH(drift_calls), 1, 1e12},
  {"noise.tail_share", FIELD_DOUBLE, TRUTH(tail_share), 0, 1},
  {"noise.pause_skew_us", FIELD_DOUBLE, TRUTH(pause_skew_us), 0, 1e6},
  {"noise.pause_share", FIELD_DOUBLE, TRUTH(pause_share), 0, 10},
};

static int set_field(dccl_profile* profile, field_type type, size_t offset, double low, double high, const char* value,
                     char* why, size_t why_size) {
  char* base = (char*)profile + offset;
  switch (type) {
  case FIELD_INT: {
    long long v;
    if (dccl_parse_int(value, (long long)low, (long long)high, &v) != 0) {
      snprintf(why, why_size, "expected an integer in [%g, %g]", low, high);
      return -1;
    }
    *(int*)base = (int)v;
    return 0;
  }
  case FIELD_DOUBLE: {
    double v;
    if (dccl_parse_double(value, &v) != 0 || v < low || v > high) {
      snprintf(why, why_size, "expected a number in [%g, %g]", low, high);
      return -1;
    }
    *(double*)base = v;
    return 0;
  }
  case FIELD_BYTES: {
    unsigned long long v;
    if (dccl_parse_bytes(value, &v) != 0 || (double)v < low || (double)v > high) {
      snprintf(why, why_size, "expected a byte count (e.g. 512K) in [%g, %g]", low, high);
      return -1;
    }
    *(double*)base = (double)v;
    return 0;
  }
  case FIELD_PATH:
    for (int p = 0; p <= DCCL_PATH_NET; p++)
      if (strcasecmp(value, path_names[p]) == 0) {
        *(int*)base = p;
        return 0;
      }
    snprintf(why, why_size, "expected a path type (NVL, NVB, PIX, PXB, PXN, PHB, SYS, NET...)");
    return -1;
  }
  return -1;
}

/* graph.<algo>.<field>, truth.<link>.<field>[.<protocol>] */
static int set_pattern_key(dccl_profile* profile, const char* key, const char* value, char* why, size_t why_size) {
  char copy[128];
  /* Every part named: strtok_r would read "graph..ring" as "graph.ring". */
  size_t length = strlen(key);
  if (length == 0 || length >= sizeof(copy) || key[0] == '.' || key[length - 1] == '.' || strstr(key, "..") != NULL)
    return 1;
  strcpy(copy, key);
  char* parts[5] = {0};
  int n = 0;
  char* save = NULL;
  for (char* t = strtok_r(copy, ".", &save); t != NULL && n < 5; t = strtok_r(NULL, ".", &save)) parts[n++] = t;
  if (n == 3 && strcmp(parts[0], "graph") == 0) {
    int algo = dccl_algo_parse(parts[1]);
    if (algo < 0) return 1;
    size_t base = offsetof(dccl_profile, graphs) + (size_t)algo * sizeof(dccl_graph);
    static const field graph_fields[] = {
      {"channels", FIELD_INT, offsetof(dccl_graph, channels), 0, DCCL_MAX_CHANNELS},
      {"bw_intra", FIELD_DOUBLE, offsetof(dccl_graph, bw_intra), 0, 1e4},
      {"bw_inter", FIELD_DOUBLE, offsetof(dccl_graph, bw_inter), 0, 1e4},
      {"type_intra", FIELD_PATH, offsetof(dccl_graph, type_intra), 0, 0},
      {"type_inter", FIELD_PATH, offsetof(dccl_graph, type_inter), 0, 0},
      {"latency_inter", FIELD_DOUBLE, offsetof(dccl_graph, latency_inter), 0, 1e4},
      {"same_channels", FIELD_INT, offsetof(dccl_graph, same_channels), 0, 1},
    };
    for (size_t i = 0; i < sizeof(graph_fields) / sizeof(graph_fields[0]); i++)
      if (strcmp(parts[2], graph_fields[i].key) == 0)
        return set_field(profile, graph_fields[i].type, base + graph_fields[i].offset, graph_fields[i].low,
                         graph_fields[i].high, value, why, why_size);
    return 1;
  }
  if ((n == 3 || n == 4) && strcmp(parts[0], "truth") == 0) {
    int link = strcmp(parts[1], "intra") == 0 ? DCCL_LINK_INTRA : strcmp(parts[1], "net") == 0 ? DCCL_LINK_NET : -1;
    if (link < 0) return 1;
    size_t truth = offsetof(dccl_profile, truth);
    if (n == 3) {
      if (strcmp(parts[2], "link_bw") == 0)
        return set_field(profile, FIELD_DOUBLE, truth + offsetof(dccl_truth_params, link_bw) + (size_t)link * sizeof(double),
                         0.001, 1e5, value, why, why_size);
      if (strcmp(parts[2], "buffer") == 0)
        return set_field(profile, FIELD_BYTES,
                         truth + offsetof(dccl_truth_params, buffer_bytes) + (size_t)link * sizeof(double), 1024, 1e12,
                         value, why, why_size);
      if (strcmp(parts[2], "congestion") == 0)
        return set_field(profile, FIELD_DOUBLE,
                         truth + offsetof(dccl_truth_params, congestion_gain) + (size_t)link * sizeof(double), 0, 100,
                         value, why, why_size);
      return 1;
    }
    int proto = dccl_proto_parse(parts[3]);
    if (proto < 0) return 1;
    size_t cell = ((size_t)link * DCCL_NUM_PROTOS + (size_t)proto) * sizeof(double);
    if (strcmp(parts[2], "channel_bw") == 0)
      return set_field(profile, FIELD_DOUBLE, truth + offsetof(dccl_truth_params, channel_bw) + cell, 0.001, 1e4, value,
                       why, why_size);
    if (strcmp(parts[2], "step_us") == 0)
      return set_field(profile, FIELD_DOUBLE, truth + offsetof(dccl_truth_params, step_us) + cell, 0, 1e4, value, why,
                       why_size);
    return 1;
  }
  return 1; /* unknown */
}

static void set_defaults(dccl_profile* p) {
  memset(p, 0, sizeof(*p));
  p->cpu = DCCL_CPU_INTEL;
  p->net_device_host = 1;
  p->tree_pattern = DCCL_TREE_PATTERN_BALANCED;
  for (int a = 0; a < DCCL_NUM_ALGOS; a++) {
    p->graphs[a].type_intra = DCCL_PATH_NVL;
    p->graphs[a].type_inter = DCCL_PATH_PIX;
    p->graphs[a].same_channels = 1;
  }
  dccl_truth_params* t = &p->truth;
  t->launch_us = 5.0;
  t->channel_us = 0.15;
  t->tree_bw = 0.5;
  t->ring_bw = 1.0;
  t->pat_bw = 0.8;
  t->nvls_step_us = 5.0;
  t->ll128_congestion = 1.0;
  t->interference_sm = 0.5;
  t->interference_mem = 0.1;
  t->interference_channels = 0.0;
  t->congestion_bw = 0.6;
  t->congestion_latency = 3.0;
  t->noise_sigma = 0.03;
  t->spike_probability = 0.0005;
  t->spike_scale = 3.0;
  t->burst_calls = 12;
  t->burst_scale = 10;
  for (int l = 0; l < 2; l++) {
    t->buffer_bytes[l] = 4.0 * 1024 * 1024;
    t->congestion_gain[l] = 0.05;
  }
}

#define PROFILE_BYTES_MAX 1e13 /* the largest size a profile line may name */

/* `measured = <collective> <bytes> <algorithm>/<protocol>/ch=<channels> <latency us>` */
static int parse_measured(dccl_profile* p, const char* value, char* why, size_t why_size) {
  char coll_name[32], action_text[64], extra[2];
  double bytes, latency;
  dccl_action action;
  if (sscanf(value, "%31s %lf %63s %lf %1s", coll_name, &bytes, action_text, &latency, extra) != 4) {
    snprintf(why, why_size, "expected '<collective> <bytes> <algorithm>/<protocol>/ch=<channels> <latency us>'");
    return -1;
  }
  int coll = dccl_coll_parse(coll_name);
  if (coll < 0 || dccl_action_parse(action_text, &action) != 0 || dccl_action_algo(action) < 0 ||
      dccl_action_channels(action) <= 0) {
    snprintf(why, why_size, "'%s %s': unknown collective or not an algorithm/protocol/ch=N action", coll_name,
             action_text);
    return -1;
  }
  if (dccl_action_chunk_log2(action) != 0) { /* the simulator's truth has no chunk size: not dropped silently */
    snprintf(why, why_size, "'%s': a measured point names no chunk size", action_text);
    return -1;
  }
  if (!(bytes >= 1 && bytes <= PROFILE_BYTES_MAX) || !(latency > 0 && latency < 1e9)) {
    snprintf(why, why_size, "bytes must be in [1, %g] and the latency a positive number of microseconds", PROFILE_BYTES_MAX);
    return -1;
  }
  for (int i = 0; i < p->n_measured; i++) { /* two latencies for one point: which one counted would be chance */
    const dccl_measured_point* m = &p->measured[i];
    if (m->coll == coll && m->algo == dccl_action_algo(action) && m->proto == dccl_action_proto(action) &&
        m->channels == dccl_action_channels(action) && m->bytes == bytes) {
      snprintf(why, why_size, "'%s %.0f %s' is measured already", coll_name, bytes, action_text);
      return -1;
    }
  }
  if (p->n_measured >= DCCL_MEASURED_MAX) {
    snprintf(why, why_size, "more than %d measured points", DCCL_MEASURED_MAX);
    return -1;
  }
  dccl_measured_point* m = &p->measured[p->n_measured++];
  m->coll = (unsigned char)coll;
  m->algo = (unsigned char)dccl_action_algo(action);
  m->proto = (unsigned char)dccl_action_proto(action);
  m->channels = (unsigned char)dccl_action_channels(action);
  m->bytes = bytes;
  m->latency_us = latency;
  return 0;
}

/* Whether a leftover line is of this action and form. */
static int leftover_of(const dccl_leftover* l, int form, int algo, int proto, int channels) {
  return l->form == form && l->algo == algo && l->proto == proto && l->channels == channels;
}

/* Where `bytes` lies between two points' sizes, linearly in log2(bytes): 0 at `low`, 1 at `high`. */
static double log2_weight(double bytes, double low, double high) {
  return (log2(bytes) - log2(low)) / (log2(high) - log2(low));
}

double dccl_profile_leftover(const dccl_profile* p, int form, int coll, int algo, int proto, int channels,
                             double bytes, double* spread) {
  const dccl_leftover *below = NULL, *above = NULL;
  *spread = 0;
  for (int i = 0; i < p->n_leftovers; i++) {
    const dccl_leftover* l = &p->leftovers[i];
    if (!leftover_of(l, form, algo, proto, channels)) continue;
    if (!l->at) { /* the action's only line of this form (the parser refuses points beside it) */
      *spread = l->spread;
      return l->fraction;
    }
    if (l->coll != coll) continue;
    if (l->bytes <= bytes && (below == NULL || l->bytes > below->bytes)) below = l;
    if (l->bytes >= bytes && (above == NULL || l->bytes < above->bytes)) above = l;
  }
  if (below == NULL && above == NULL) return 0;
  if (below == NULL || above == NULL || below == above) {
    const dccl_leftover* end = below != NULL ? below : above;
    *spread = end->spread;
    return end->fraction;
  }
  double weight = log2_weight(bytes, below->bytes, above->bytes);
  *spread = below->spread + weight * (above->spread - below->spread);
  return below->fraction + weight * (above->fraction - below->fraction);
}

/* `leftover = <algorithm>/<protocol>/ch=<channels> later|longer <fraction> [spread <coefficient of variation>]
 *             [at <collective> <bytes>]` */
static int parse_leftover(dccl_profile* p, const char* value, char* why, size_t why_size) {
  enum { WORDS_MAX = 8 }; /* action, form, fraction, spread and its value, at, collective, bytes */
  char text[256], *words[WORDS_MAX];
  if (snprintf(text, sizeof(text), "%s", value) >= (int)sizeof(text)) {
    snprintf(why, why_size, "longer than %zu characters", sizeof(text) - 1);
    return -1;
  }
  int n_words = dccl_tokenize(text, words, WORDS_MAX); /* -1: too many */
  double fraction = 0, spread = 0, bytes = 0;
  int next = 3, at = 0, coll = 0;
  if (n_words < 3 || dccl_parse_double(words[2], &fraction) != 0) goto usage;
  if (next < n_words && strcmp(words[next], "spread") == 0) {
    if (next + 1 >= n_words || dccl_parse_double(words[next + 1], &spread) != 0) goto usage;
    next += 2;
  }
  if (next < n_words && strcmp(words[next], "at") == 0) {
    unsigned long long parsed_bytes = 0;
    if (next + 2 >= n_words) goto usage;
    if ((coll = dccl_coll_parse(words[next + 1])) < 0 || dccl_parse_bytes(words[next + 2], &parsed_bytes) != 0 ||
        parsed_bytes < 1 || (double)parsed_bytes > PROFILE_BYTES_MAX) {
      snprintf(why, why_size, "'at %s %s': expected a collective and a size in bytes (1 to %g)", words[next + 1],
               words[next + 2], PROFILE_BYTES_MAX);
      return -1;
    }
    at = 1;
    bytes = (double)parsed_bytes;
    next += 3;
  }
  if (next != n_words) goto usage;
  if (!(spread >= 0 && spread <= DCCL_LEFTOVER_SPREAD_MAX)) {
    snprintf(why, why_size, "expected a spread in [0, %g]", DCCL_LEFTOVER_SPREAD_MAX);
    return -1;
  }
  dccl_action action;
  int form = strcmp(words[1], "later") == 0 ? DCCL_LEFTOVER_LATER : strcmp(words[1], "longer") == 0 ? DCCL_LEFTOVER_LONGER : 0;
  if (dccl_action_parse(words[0], &action) != 0 || dccl_action_algo(action) < 0 || dccl_action_channels(action) <= 0 ||
      dccl_action_chunk_log2(action) != 0) {
    snprintf(why, why_size, "'%s': not an algorithm/protocol/ch=N action (no chunk size)", words[0]);
    return -1;
  }
  if (form == 0 || !(fraction >= 0 && fraction <= 0.9)) {
    snprintf(why, why_size, "expected 'later' or 'longer' and a fraction in [0, 0.9]");
    return -1;
  }
  for (int i = 0; i < p->n_leftovers; i++) { /* one line per action and form, or points at distinct sizes */
    const dccl_leftover* l = &p->leftovers[i];
    if (!leftover_of(l, form, dccl_action_algo(action), dccl_action_proto(action), dccl_action_channels(action)))
      continue;
    if (!at || !l->at) {
      snprintf(why, why_size, "'%s %s' has a line already: one line for every size, or points at sizes", words[0],
               words[1]);
      return -1;
    }
    if (l->coll == coll && l->bytes == bytes) {
      snprintf(why, why_size, "'%s %s' has a point at %s %s already", words[0], words[1], words[next - 2], words[next - 1]);
      return -1;
    }
  }
  if (p->n_leftovers >= DCCL_LEFTOVER_MAX) {
    snprintf(why, why_size, "more than %d leftover lines", DCCL_LEFTOVER_MAX);
    return -1;
  }
  dccl_leftover* l = &p->leftovers[p->n_leftovers++];
  l->algo = (unsigned char)dccl_action_algo(action);
  l->proto = (unsigned char)dccl_action_proto(action);
  l->channels = (unsigned char)dccl_action_channels(action);
  l->form = (unsigned char)form;
  l->at = (unsigned char)at;
  l->coll = (unsigned char)coll;
  l->bytes = bytes;
  l->fraction = fraction;
  l->spread = spread;
  return 0;
usage:
  snprintf(why, why_size, "expected '<algorithm>/<protocol>/ch=<channels> later|longer <fraction> "
                          "[spread <coefficient of variation>] [at <collective> <bytes>]'");
  return -1;
}

/* `noise.sigma_at = <collective> <bytes> <sigma>`, `noise.level_at` alike, and `noise.alternation_at =
 * <collective> <bytes> <algorithm>/<protocol> <amplitude>` (`kind`: DCCL_NOISE_*; `key`: the line's key). */
static int parse_noise_point(dccl_profile* p, int kind, const char* key, const char* value, char* why, size_t why_size) {
  char coll_name[32], action_text[64], extra[2];
  double bytes, amount;
  int alternation = kind == DCCL_NOISE_ALTERNATION;
  int fields = alternation ? sscanf(value, "%31s %lf %63s %lf %1s", coll_name, &bytes, action_text, &amount, extra)
                           : sscanf(value, "%31s %lf %lf %1s", coll_name, &bytes, &amount, extra);
  if (fields != (alternation ? 4 : 3)) {
    snprintf(why, why_size, alternation ? "expected '<collective> <bytes> <algorithm>/<protocol> <amplitude>'"
                                        : "expected '<collective> <bytes> <sigma>'");
    return -1;
  }
  int coll = dccl_coll_parse(coll_name), algo = 0, proto = 0;
  if (coll < 0) {
    snprintf(why, why_size, "'%s': unknown collective", coll_name);
    return -1;
  }
  if (alternation) { /* an action on NCCL's channels and chunk size: its algorithm and protocol alone */
    dccl_action action;
    if (dccl_action_parse(action_text, &action) != 0 || dccl_action_is_nccl(action) ||
        dccl_action_channels(action) != 0 || dccl_action_chunk_log2(action) != 0) {
      snprintf(why, why_size, "'%s': not an algorithm/protocol", action_text);
      return -1;
    }
    algo = dccl_action_algo(action);
    proto = dccl_action_proto(action);
  }
  if (!(bytes >= 1 && bytes <= PROFILE_BYTES_MAX) || !(amount >= 0 && amount <= 2)) {
    snprintf(why, why_size, "bytes must be in [1, %g] and the %s in [0, 2]", PROFILE_BYTES_MAX,
             alternation ? "amplitude" : "sigma");
    return -1;
  }
  for (int i = 0; i < p->n_noise_points; i++) {
    const dccl_noise_point* n = &p->noise_points[i];
    if (n->kind == kind && n->coll == coll && n->algo == algo && n->proto == proto && n->bytes == bytes) {
      snprintf(why, why_size, "'%s' has a point at %s %.0f already", key, coll_name, bytes);
      return -1;
    }
  }
  if (p->n_noise_points >= DCCL_NOISE_POINTS_MAX) {
    snprintf(why, why_size, "more than %d noise.*_at lines", DCCL_NOISE_POINTS_MAX);
    return -1;
  }
  p->noise_points[p->n_noise_points++] = (dccl_noise_point){.kind = (unsigned char)kind, .coll = (unsigned char)coll,
                                                            .algo = (unsigned char)algo, .proto = (unsigned char)proto,
                                                            .bytes = bytes, .value = amount};
  return 0;
}

static int compare_noise_points(const void* a, const void* b) {
  const dccl_noise_point *x = a, *y = b;
  int keys[4][2] = {{x->kind, y->kind}, {x->coll, y->coll}, {x->algo, y->algo}, {x->proto, y->proto}};
  for (int i = 0; i < 4; i++)
    if (keys[i][0] != keys[i][1]) return keys[i][0] < keys[i][1] ? -1 : 1;
  return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

/* A group's points (kind, collective, algorithm, protocol) interpolated at `bytes`; `none` without points. */
static double noise_at(const dccl_profile* p, int kind, int coll, int algo, int proto, double bytes, double none) {
  const dccl_noise_point *below = NULL, *above = NULL;
  for (int i = 0; i < p->n_noise_points; i++) { /* sorted: the last point at or below, the first above */
    const dccl_noise_point* n = &p->noise_points[i];
    if (n->kind != kind || n->coll != coll || n->algo != algo || n->proto != proto) continue;
    if (n->bytes <= bytes) below = n;
    else if (above == NULL) above = n;
  }
  if (below == NULL && above == NULL) return none;
  if (below == NULL || above == NULL) return (below != NULL ? below : above)->value;
  return below->value + log2_weight(bytes, below->bytes, above->bytes) * (above->value - below->value);
}

double dccl_profile_noise_sigma(const dccl_profile* p, int coll, double bytes) {
  return noise_at(p, DCCL_NOISE_SIGMA, coll, 0, 0, bytes, p->truth.noise_sigma);
}

double dccl_profile_noise_level(const dccl_profile* p, int coll, double bytes) {
  return noise_at(p, DCCL_NOISE_LEVEL, coll, 0, 0, bytes, 0.0);
}

double dccl_profile_noise_alternation(const dccl_profile* p, int coll, int algo, int proto, double bytes) {
  if (algo < 0 || proto < 0) return 0.0;
  return noise_at(p, DCCL_NOISE_ALTERNATION, coll, algo, proto, bytes, 0.0);
}

/* Measured points by collective, algorithm, protocol, channels, then size: each group is contiguous. */
static int compare_points(const void* a, const void* b) {
  const dccl_measured_point *x = a, *y = b;
  int keys[4][2] = {{x->coll, y->coll}, {x->algo, y->algo}, {x->proto, y->proto}, {x->channels, y->channels}};
  for (int i = 0; i < 4; i++)
    if (keys[i][0] != keys[i][1]) return keys[i][0] < keys[i][1] ? -1 : 1;
  return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

int dccl_profile_parse(const char* text, const char* source, dccl_profile* out, char* error, size_t error_size) {
  set_defaults(out);
  int have_name = 0, have_link[2] = {0, 0};
  const char* cursor = text;
  char line[512];
  int line_number = 0, too_long = 0;
  while (dccl_next_scenario_line(&cursor, line, sizeof(line), &line_number, &too_long)) {
    if (line[0] == '\0') continue;
    char why[160] = "";
    char *key, *value;
    if (too_long || dccl_split_key_value(line, &key, &value) != 0) {
      snprintf(error, error_size, "%s:%d: expected 'key = value'", source, line_number);
      return -1;
    }
    int rc = 1;
    if (strcmp(key, "name") == 0) {
      rc = dccl_copy_text(out->name, sizeof(out->name), value, "value", why, sizeof(why));
      have_name = 1;
    } else if (strcmp(key, "description") == 0) {
      rc = dccl_copy_text(out->description, sizeof(out->description), value, "value", why, sizeof(why));
    } else if (strcmp(key, "cpu") == 0) {
      static const char* const cpus[] = {"intel", "amd", "arm", "power"};
      rc = -1;
      snprintf(why, sizeof(why), "expected intel, amd, arm or power");
      for (int i = 0; i < 4; i++)
        if (strcasecmp(value, cpus[i]) == 0) out->cpu = i, rc = 0;
    } else if (strcmp(key, "net_device") == 0) {
      rc = strcasecmp(value, "host") == 0 ? (out->net_device_host = 1, 0)
           : strcasecmp(value, "offload") == 0 ? (out->net_device_host = 0, 0)
                                               : (snprintf(why, sizeof(why), "expected host or offload"), -1);
    } else if (strcmp(key, "measured") == 0) {
      rc = parse_measured(out, value, why, sizeof(why));
    } else if (strcmp(key, "leftover") == 0) {
      rc = parse_leftover(out, value, why, sizeof(why));
    } else if (strcmp(key, "noise.sigma_at") == 0) {
      rc = parse_noise_point(out, DCCL_NOISE_SIGMA, key, value, why, sizeof(why));
    } else if (strcmp(key, "noise.level_at") == 0) {
      rc = parse_noise_point(out, DCCL_NOISE_LEVEL, key, value, why, sizeof(why));
    } else if (strcmp(key, "noise.alternation_at") == 0) {
      rc = parse_noise_point(out, DCCL_NOISE_ALTERNATION, key, value, why, sizeof(why));
    } else if (strcmp(key, "tree_pattern") == 0) {
      rc = strcasecmp(value, "balanced") == 0 ? (out->tree_pattern = DCCL_TREE_PATTERN_BALANCED, 0)
           : strcasecmp(value, "split") == 0  ? (out->tree_pattern = DCCL_TREE_PATTERN_SPLIT, 0)
           : strcasecmp(value, "tree") == 0   ? (out->tree_pattern = DCCL_TREE_PATTERN_TREE, 0)
                                              : (snprintf(why, sizeof(why), "expected balanced, split or tree"), -1);
    } else {
      for (size_t i = 0; i < sizeof(scalar_fields) / sizeof(scalar_fields[0]); i++)
        if (strcmp(key, scalar_fields[i].key) == 0)
          rc = set_field(out, scalar_fields[i].type, scalar_fields[i].offset, scalar_fields[i].low, scalar_fields[i].high,
                         value, why, sizeof(why));
      if (rc == 1) rc = set_pattern_key(out, key, value, why, sizeof(why));
      if (rc == 0 && strcmp(key, "truth.intra.link_bw") == 0) have_link[0] = 1;
      if (rc == 0 && strcmp(key, "truth.net.link_bw") == 0) have_link[1] = 1;
    }
    if (rc == 1) {
      snprintf(error, error_size, "%s:%d: unknown key '%s'", source, line_number, key);
      return -1;
    }
    if (rc != 0) {
      snprintf(error, error_size, "%s:%d: %s: %s", source, line_number, key, why);
      return -1;
    }
  }
  const char* missing = !have_name                      ? "name"
                        : out->n_nodes == 0             ? "nodes"
                        : out->ranks_per_node == 0      ? "ranks_per_node"
                        : out->compute_capability == 0  ? "compute_capability"
                        : out->channels == 0            ? "channels"
                        : out->graphs[DCCL_ALGO_RING].channels == 0 ? "graph.ring.channels"
                        : !have_link[0] && out->ranks_per_node > 1 ? "truth.intra.link_bw"
                        : !have_link[1] && out->n_nodes > 1 ? "truth.net.link_bw"
                                                            : NULL;
  if (missing != NULL) {
    snprintf(error, error_size, "%s: required key '%s' is missing", source, missing);
    return -1;
  }
  for (int l = 0; l < 2; l++)
    for (int p = 0; p < DCCL_NUM_PROTOS; p++)
      if ((l == DCCL_LINK_INTRA ? out->ranks_per_node > 1 : out->n_nodes > 1) && out->truth.channel_bw[l][p] <= 0) {
        snprintf(error, error_size, "%s: truth.%s.channel_bw.%s is missing", source, l == 0 ? "intra" : "net",
                 dccl_proto_name(p));
        return -1;
      }
  out->n_ranks = out->n_nodes * out->ranks_per_node;
  qsort(out->measured, (size_t)out->n_measured, sizeof(out->measured[0]), compare_points);
  qsort(out->noise_points, (size_t)out->n_noise_points, sizeof(out->noise_points[0]), compare_noise_points);
  return 0;
}

int dccl_profile_load(const char* path, dccl_profile* out, char* error, size_t error_size) {
  char reason[256];
  char* text = dccl_read_text_file(path, 1u << 20, reason, sizeof(reason));
  if (text == NULL) {
    snprintf(error, error_size, "cannot read profile %s: %s", path, reason);
    return -1;
  }
  int rc = dccl_profile_parse(text, path, out, error, error_size);
  free(text);
  return rc;
}

int dccl_profile_find(const char* name_or_path, dccl_profile* out, char* error, size_t error_size) {
  char path[1024];
  char* text = dccl_scenario_read("profiles", name_or_path, ".profile", path, sizeof(path), error, error_size);
  if (text == NULL) return -1;
  int rc = dccl_profile_parse(text, path, out, error, error_size);
  free(text);
  return rc;
}
