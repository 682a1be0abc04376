/* persist/policy_file.c: versioned, checksummed binary policy files; all-or-nothing loading. */
#include "policy_file.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/action.h"
#include "../core/rng.h"
#include "../core/text_file.h"
#include "atomic_file.h"

#define HEADER_SIZE 64
#define CHECKSUM_OFFSET 32 /* the one header field the checksum does not cover: itself */
#define CHECKSUM_SIZE 8
#define MAX_POLICY_BYTES (64u << 20)
#define FLAG_TUNE_CHUNK 1u
#define KNOWN_FLAGS FLAG_TUNE_CHUNK
#define FOREIGN -2 /* a check's result: a sound policy this job cannot use (DCCL_POLICY_FOREIGN) */
#define NEWER_FORMATS 64 /* a format up to this far ahead may be a newer DynamICCL's; beyond, damage */
static const char magic[8] = {'D', 'C', 'C', 'L', 'P', 'O', 'L', 0};
enum {
  SECTION_QNET = 0x54454E51u,
  SECTION_LSTM = 0x4D54534Cu,
  SECTION_CELLS = 0x534C4C43u,
  SECTION_LEFTOVERS = 0x5446454Cu,
  SECTION_CHANNELS = 0x4E414843u,
  SECTION_TAIL = 0x4C494154u
};

#define PAYLOAD_SIZE_OFFSET 24

static uint64_t fnv1a(uint64_t h, const uint8_t* data, size_t size) {
  for (size_t i = 0; i < size; i++) {
    h ^= data[i];
    h *= 0x100000001B3ULL;
  }
  return h;
}

uint64_t dccl_policy_checksum(const uint8_t* file, size_t size) {
  uint64_t h = 0xCBF29CE484222325ULL;
  if (size < CHECKSUM_OFFSET + CHECKSUM_SIZE) return fnv1a(h, file, size);
  h = fnv1a(h, file, CHECKSUM_OFFSET);
  return fnv1a(h, file + CHECKSUM_OFFSET + CHECKSUM_SIZE, size - CHECKSUM_OFFSET - CHECKSUM_SIZE);
}

void dccl_policy_seal(uint8_t* file, size_t size) {
  uint64_t payload = size - HEADER_SIZE, checksum;
  memcpy(file + PAYLOAD_SIZE_OFFSET, &payload, sizeof(payload));
  checksum = dccl_policy_checksum(file, size);
  memcpy(file + CHECKSUM_OFFSET, &checksum, CHECKSUM_SIZE);
}

uint64_t dccl_policy_fingerprint(int n_ranks, int n_nodes, int max_channels, int tune_chunk) {
  uint64_t h = dccl_mix64(0xD1CC1F1D0ULL ^ (uint64_t)(uint32_t)n_ranks);
  h = dccl_mix64(h ^ ((uint64_t)(uint32_t)n_nodes << 20));
  h = dccl_mix64(h ^ ((uint64_t)(uint32_t)max_channels << 40));
  h = dccl_mix64(h ^ (uint64_t)(tune_chunk ? 0xC4u : 0x5Au));
  return h ? h : 1;
}

static int fail(char* error, size_t size, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char* error, size_t size, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(error, size, fmt, args);
  va_end(args);
  return -1;
}

/* The header's fields agree with each other: known flags, a plausible shape, and the fingerprint of
 * that shape. Checked on save (never write a file that cannot load) and on load. */
static int check_header_fields(const dccl_policy_meta* m, uint32_t flags, char* error, size_t error_size) {
  if ((flags & ~KNOWN_FLAGS) != 0) return fail(error, error_size, "unknown flags %08x", flags & ~KNOWN_FLAGS);
  if (m->n_ranks < 1 || m->n_ranks > DCCL_POLICY_MAX_RANKS)
    return fail(error, error_size, "%u ranks (1 to %u)", m->n_ranks, DCCL_POLICY_MAX_RANKS);
  if (m->n_nodes < 1 || m->n_nodes > m->n_ranks)
    return fail(error, error_size, "%u nodes for %u ranks", m->n_nodes, m->n_ranks);
  if (m->max_channels < 1 || m->max_channels > DCCL_MAX_CHANNELS)
    return fail(error, error_size, "up to %u channels (1 to %d)", m->max_channels, DCCL_MAX_CHANNELS);
  uint64_t expected = dccl_policy_fingerprint((int)m->n_ranks, (int)m->n_nodes, (int)m->max_channels,
                                              (flags & FLAG_TUNE_CHUNK) != 0);
  if (m->fingerprint != expected)
    return fail(error, error_size, "fingerprint %016llx is not that of its own shape (%016llx)",
                (unsigned long long)m->fingerprint, (unsigned long long)expected);
  return 0;
}

/* ---- writing ---- */
typedef struct writer {
  uint8_t* data;
  size_t size, capacity;
  int failed;
} writer;

static void put(writer* w, const void* bytes, size_t n) {
  if (w->failed) return;
  if (w->size + n > w->capacity) {
    size_t capacity = (w->capacity + n) * 2;
    uint8_t* grown = realloc(w->data, capacity);
    if (grown == NULL) {
      w->failed = 1;
      return;
    }
    w->data = grown;
    w->capacity = capacity;
  }
  memcpy(w->data + w->size, bytes, n);
  w->size += n;
}
/* The format is little-endian; so are the machines NCCL runs on (x86-64, AArch64). */
static void put_u8(writer* w, uint8_t v) { put(w, &v, 1); }
static void put_u16(writer* w, uint16_t v) { put(w, &v, 2); }
static void put_u32(writer* w, uint32_t v) { put(w, &v, 4); }
static void put_u64(writer* w, uint64_t v) { put(w, &v, 8); }
static void put_f32(writer* w, float v) { put(w, &v, 4); }
static void put_f64(writer* w, double v) { put(w, &v, 8); }

static void put_arm(writer* w, const dccl_arm* a) {
  put_f32(w, a->count);
  put_f32(w, a->mean);
  put_f32(w, a->m2);
  put_f32(w, a->recent);
  put_u16(w, a->recent_count);
  put_u8(w, a->invalid);
}

static void put_floats(writer* w, uint32_t tag, const float* values, size_t count) {
  put_u32(w, tag);
  put_u32(w, (uint32_t)count);
  put(w, values, count * sizeof(float));
}

/* Whether slot `s`'s leftover estimates are saved: those of an agent cell, that the loader will take (an
 * estimate it would refuse, say of an action on more channels than NCCL has, must not cost the policy). */
static int leftovers_saved(const dccl_config_agent* agent, const dccl_leftover_cell* leftovers, int s) {
  return agent->cells[s].cell >= 0 && leftovers[s].samples > 0 && dccl_leftover_cell_valid(&leftovers[s]);
}

/* The leftover estimates of every agent cell that has them (format 3). */
static void put_leftovers(writer* w, const dccl_config_agent* agent, const dccl_leftover_cell* leftovers) {
  uint32_t records = 0;
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) records += leftovers_saved(agent, leftovers, s);
  put_u32(w, SECTION_LEFTOVERS);
  put_u32(w, records);
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) {
    const dccl_leftover_cell* cell = &leftovers[s];
    if (!leftovers_saved(agent, leftovers, s)) continue;
    uint8_t entries = 0;
    for (int i = 0; i < DCCL_LEFTOVER_ACTIONS; i++) entries += cell->actions[i].count > 0;
    put_u16(w, (uint16_t)agent->cells[s].cell);
    put_u32(w, cell->samples);
    put_u8(w, entries);
    for (int i = 0; i < DCCL_LEFTOVER_ACTIONS; i++) {
      const dccl_leftover_estimate* e = &cell->actions[i];
      if (e->count == 0) continue;
      put_u32(w, e->action);
      put_u32(w, e->count);
      put_u32(w, e->last_used);
      put_f64(w, e->excess_us.mean);
      put_f64(w, e->excess_us.variance);
      put_f64(w, e->span_mean_us);
    }
  }
}

/* The channels NCCL ran an action on, as the cell's arms hold it (the same in every context: book_reading);
 * 0 where not known. */
static uint8_t channels_ran_of(const dccl_config_agent* agent, const dccl_agent_cell* c, int index) {
  for (int k = 0; k < DCCL_AGENT_CONTEXTS; k++) {
    uint8_t channels = c->arms[(size_t)k * agent->max_actions + index].channels_ran;
    if (channels > 0) return channels;
  }
  return 0;
}

/* How many of a cell's actions know the channels NCCL ran them on. */
static uint16_t channel_entries(const dccl_config_agent* agent, const dccl_agent_cell* c) {
  uint16_t entries = 0;
  for (int i = 0; i < agent->n_actions[c->info.coll]; i++) entries += channels_ran_of(agent, c, i) > 0;
  return entries;
}

/* What NCCL ran the requests of each cell on (format 4): per cell that knows any of it, its table index,
 * channel cap (0: none seen) and the actions with the channels NCCL last ran them on. A warm start then
 * knows at once which requests would only run as an arm already measured (above the cap, or on the
 * channels of NCCL's own choice) instead of spending its first explorations to find out again. */
static void put_channels(writer* w, const dccl_config_agent* agent) {
  uint32_t records = 0;
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) {
    const dccl_agent_cell* c = &agent->cells[s];
    records += c->cell >= 0 && (c->channel_cap > 0 || channel_entries(agent, c) > 0);
  }
  put_u32(w, SECTION_CHANNELS);
  put_u32(w, records);
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) {
    const dccl_agent_cell* c = &agent->cells[s];
    if (c->cell < 0) continue;
    uint16_t entries = channel_entries(agent, c);
    if (entries == 0 && c->channel_cap == 0) continue;
    put_u16(w, (uint16_t)c->cell);
    put_u8(w, c->channel_cap);
    put_u16(w, entries);
    for (int i = 0; i < agent->n_actions[c->info.coll]; i++) {
      uint8_t channels = channels_ran_of(agent, c, i);
      if (channels == 0) continue;
      put_u32(w, agent->actions[c->info.coll][i]);
      put_u8(w, channels);
    }
  }
}

/* The cells whose arms hold readings booked with their slow tail (format 5): loaded from an older policy,
 * they booked this job's readings so too (dccl_agent_cell_loaded); their table indexes. */
static void put_tail_cells(writer* w, const dccl_config_agent* agent) {
  uint32_t records = 0;
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) records += agent->cells[s].cell >= 0 && agent->cells[s].tail_as_it_came;
  put_u32(w, SECTION_TAIL);
  put_u32(w, records);
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++)
    if (agent->cells[s].cell >= 0 && agent->cells[s].tail_as_it_came) put_u16(w, (uint16_t)agent->cells[s].cell);
}

int dccl_policy_save(const char* path, const dccl_policy_meta* meta, const dccl_config_agent* agent,
                     const dccl_trigger* trigger, const dccl_leftover_cell* leftovers, char* error, size_t error_size) {
  writer w = {0};
  put_floats(&w, SECTION_QNET, agent->q.online.values, agent->q.online.count);
  if (trigger != NULL && trigger->params.values != NULL)
    put_floats(&w, SECTION_LSTM, trigger->params.values, trigger->params.count);
  uint32_t cells = 0;
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) cells += agent->cells[s].cell >= 0;
  put_u32(&w, SECTION_CELLS);
  put_u32(&w, cells);
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) {
    const dccl_agent_cell* c = &agent->cells[s];
    if (c->cell < 0) continue;
    int coll = c->info.coll;
    put_u16(&w, (uint16_t)c->cell);
    put_u8(&w, c->context);
    put_u8(&w, (uint8_t)c->info.cost_known);
    put_f64(&w, c->info.log2_bytes);
    for (int i = 0; i < DCCL_COST_ENTRIES; i++) put_f32(&w, c->info.cost[i]);
    for (int k = 0; k < DCCL_AGENT_CONTEXTS; k++) {
      put_arm(&w, &c->nccl[k]);
      put_u32(&w, c->samples[k]);
    }
    put_f32(&w, c->epsilon_peak);
    put_u32(&w, c->exploit);
    uint32_t arms = 0;
    for (int k = 0; k < DCCL_AGENT_CONTEXTS; k++)
      for (int i = 0; i < agent->n_actions[coll]; i++) {
        const dccl_arm* a = &c->arms[(size_t)k * agent->max_actions + i];
        arms += a->count > 0 || a->invalid;
      }
    put_u32(&w, arms);
    for (int k = 0; k < DCCL_AGENT_CONTEXTS; k++)
      for (int i = 0; i < agent->n_actions[coll]; i++) {
        const dccl_arm* a = &c->arms[(size_t)k * agent->max_actions + i];
        if (!(a->count > 0 || a->invalid)) continue;
        put_u32(&w, agent->actions[coll][i]);
        put_u8(&w, (uint8_t)k);
        put_arm(&w, a);
      }
  }
  put_channels(&w, agent);
  put_tail_cells(&w, agent);
  if (leftovers != NULL) put_leftovers(&w, agent, leftovers);
  if (w.failed) {
    free(w.data);
    snprintf(error, error_size, "out of memory");
    return -1;
  }
  uint32_t flags = meta->tune_chunk ? FLAG_TUNE_CHUNK : 0;
  char reason[256];
  if (check_header_fields(meta, flags, reason, sizeof(reason)) != 0) {
    free(w.data);
    snprintf(error, error_size, "inconsistent policy metadata: %s", reason);
    return -1;
  }
  uint8_t* file = malloc(HEADER_SIZE + w.size);
  if (file == NULL) {
    free(w.data);
    snprintf(error, error_size, "out of memory");
    return -1;
  }
  writer h = {file, 0, HEADER_SIZE, 0};
  put(&h, magic, 8);
  put_u32(&h, DCCL_POLICY_VERSION);
  put_u32(&h, HEADER_SIZE);
  put_u64(&h, meta->fingerprint);
  put_u64(&h, 0); /* the payload size and checksum: dccl_policy_seal, below */
  put_u64(&h, 0);
  put_u64(&h, meta->observations);
  put_u32(&h, meta->n_ranks);
  put_u32(&h, meta->n_nodes);
  put_u32(&h, meta->max_channels);
  put_u32(&h, flags);
  memcpy(file + HEADER_SIZE, w.data, w.size);
  dccl_policy_seal(file, HEADER_SIZE + w.size);
  int rc = dccl_atomic_write(path, file, HEADER_SIZE + w.size, error, error_size);
  free(file);
  free(w.data);
  return rc;
}

/* ---- reading ---- */
typedef struct reader {
  const uint8_t* p;
  size_t left;
  int failed;
} reader;

static int get(reader* r, void* out, size_t n) {
  if (r->failed || r->left < n) {
    r->failed = 1;
    memset(out, 0, n);
    return 0;
  }
  memcpy(out, r->p, n);
  r->p += n;
  r->left -= n;
  return 1;
}
/* Typed little-endian reads; after a failure they return zeros. */
#define DEFINE_GET(name, type)        \
  static type name(reader* r) {       \
    type v;                           \
    get(r, &v, sizeof(v));            \
    return v;                         \
  }
DEFINE_GET(get_u8, uint8_t)
DEFINE_GET(get_u16, uint16_t)
DEFINE_GET(get_u32, uint32_t)
DEFINE_GET(get_u64, uint64_t)
DEFINE_GET(get_f32, float)
DEFINE_GET(get_f64, double)
#undef DEFINE_GET

static int get_arm(reader* r, dccl_arm* a) {
  memset(a, 0, sizeof(*a)); /* what is not saved starts unknown (channels_ran 0: NCCL has not run it yet) */
  a->count = get_f32(r);
  a->mean = get_f32(r);
  a->m2 = get_f32(r);
  a->recent = get_f32(r);
  a->recent_count = get_u16(r);
  a->recent_charge_us = NAN; /* not saved: a frozen job keeps the saved recent reading as it is */
  a->invalid = get_u8(r) ? 1 : 0;
  return !r->failed && isfinite(a->count) && a->count >= 0 && a->count < 1e12f &&
         fabsf(a->mean) <= DCCL_POLICY_MAX_LOG_LATENCY && isfinite(a->m2) && a->m2 >= 0 &&
         fabsf(a->recent) <= DCCL_POLICY_MAX_LOG_LATENCY;
}

/* One cell's saved leftover estimates into `cell`: 1, or 0 when the record is out of bounds. */
static int get_leftover_cell(reader* r, dccl_leftover_cell* cell) {
  memset(cell, 0, sizeof(*cell));
  cell->samples = get_u32(r);
  int entries = get_u8(r);
  if (entries < 1 || entries > DCCL_LEFTOVER_ACTIONS) return 0;
  for (int i = 0; i < entries; i++) {
    dccl_leftover_estimate* e = &cell->actions[i];
    e->action = get_u32(r);
    e->count = get_u32(r);
    e->last_used = get_u32(r);
    e->excess_us.mean = get_f64(r);
    e->excess_us.variance = get_f64(r);
    e->span_mean_us = get_f64(r);
    if (e->count == 0) return 0;
  }
  return !r->failed && dccl_leftover_cell_valid(cell);
}

enum { SEEN_CELL = 1, SEEN_LEFTOVERS = 2, SEEN_CHANNELS = 4, SEEN_TAIL = 8 }; /* a cell's records read (bits) */

/* Whether a record of `kind` for `cell` may be read: the cell's own record read before it, and no other of
 * that kind; marks it read. */
static int first_record_of(uint8_t* seen, int cell, uint8_t kind) {
  if (cell < 0 || cell >= DCCL_TABLE_CELLS || !(seen[cell] & SEEN_CELL) || (seen[cell] & kind)) return 0;
  seen[cell] |= kind;
  return 1;
}

/* Walks the payload; applies it when `agent` is not NULL (and the leftover estimates, of the agent's
 * cells by slot, when `leftovers` is not NULL too); counts the leftover records into `leftover_cells`
 * when that is not NULL. */
static int parse_payload(reader* r, uint32_t version, dccl_config_agent* agent, dccl_trigger* trigger,
                         dccl_leftover_cell* leftovers, size_t expected_q, size_t expected_lstm,
                         uint32_t* leftover_cells, char* error, size_t error_size) {
  /* The records read of each cell: its cell record once, then at most one of each other kind. */
  uint8_t seen[DCCL_TABLE_CELLS] = {0};
  while (r->left > 0) {
    uint32_t tag = get_u32(r), count = get_u32(r);
    if (r->failed) return fail(error, error_size, "truncated section header");
    /* A section its format did not have is damage (a writer of that format never wrote one). */
    if ((tag == SECTION_LEFTOVERS && version < 3) || (tag == SECTION_CHANNELS && version < 4) ||
        (tag == SECTION_TAIL && version < 5))
      return fail(error, error_size, "section %.4s in a policy of format %u", (const char*)&tag, version);
    if (tag == SECTION_QNET || tag == SECTION_LSTM) {
      size_t expected = tag == SECTION_QNET ? expected_q : expected_lstm;
      if ((size_t)count * sizeof(float) > r->left) return fail(error, error_size, "truncated network weights");
      if (tag == SECTION_LSTM && expected == 0) { /* no trigger LSTM to restore: skip the section */
        r->p += (size_t)count * sizeof(float);
        r->left -= (size_t)count * sizeof(float);
        continue;
      }
      if (count != expected)
        return fail(error, error_size, "network of %u parameters where %zu are expected", count, expected);
      for (uint32_t i = 0; i < count; i++) {
        float weight;
        memcpy(&weight, r->p + (size_t)4 * i, sizeof(weight));
        if (!isfinite(weight)) return fail(error, error_size, "network weights are not finite");
        if (fabsf(weight) > DCCL_POLICY_MAX_WEIGHT)
          return fail(error, error_size, "network weight %u is %g, beyond %g: not a trained network", i, (double)weight,
                      (double)DCCL_POLICY_MAX_WEIGHT);
      }
      if (agent != NULL && tag == SECTION_QNET) {
        memcpy(agent->q.online.values, r->p, (size_t)count * sizeof(float));
        memcpy(agent->q.target.values, r->p, (size_t)count * sizeof(float));
      }
      if (agent != NULL && tag == SECTION_LSTM && trigger != NULL && trigger->params.values != NULL)
        memcpy(trigger->params.values, r->p, (size_t)count * sizeof(float));
      r->p += (size_t)count * sizeof(float);
      r->left -= (size_t)count * sizeof(float);
    } else if (tag == SECTION_CELLS) {
      if (count > DCCL_AGENT_MAX_CELLS) return fail(error, error_size, "%u cells (at most %d)", count, DCCL_AGENT_MAX_CELLS);
      for (uint32_t n = 0; n < count; n++) {
        int cell = get_u16(r), context = get_u8(r), cost_known = get_u8(r);
        double log2_bytes = get_f64(r);
        float cost[DCCL_COST_ENTRIES];
        for (int i = 0; i < DCCL_COST_ENTRIES; i++) cost[i] = get_f32(r);
        dccl_arm nccl[DCCL_AGENT_CONTEXTS];
        uint32_t samples[DCCL_AGENT_CONTEXTS];
        int ok = 1;
        for (int k = 0; k < DCCL_AGENT_CONTEXTS; k++) {
          ok &= get_arm(r, &nccl[k]);
          samples[k] = get_u32(r);
        }
        float epsilon = get_f32(r);
        dccl_action exploit = get_u32(r);
        uint32_t arms = get_u32(r);
        if (r->failed) return fail(error, error_size, "truncated cell record");
        if (!ok || cell >= DCCL_TABLE_CELLS || seen[cell] != 0 || context >= DCCL_AGENT_CONTEXTS ||
            !isfinite(log2_bytes) || log2_bytes < 0 || log2_bytes > 64 || !(epsilon >= 0 && epsilon <= 1) ||
            !dccl_action_well_formed(exploit))
          return fail(error, error_size, "cell record %u is inconsistent", n);
        seen[cell] = SEEN_CELL;
        dccl_agent_cell* c = agent != NULL ? dccl_agent_cell_slot(agent, cell, 1) : NULL;
        if (c != NULL) {
          c->context = (uint8_t)context;
          c->info.cost_known = cost_known;
          c->info.log2_bytes = log2_bytes;
          memcpy(c->info.cost, cost, sizeof(cost));
          memcpy(c->nccl, nccl, sizeof(nccl));
          memcpy(c->samples, samples, sizeof(samples));
          c->epsilon_peak = epsilon;
          c->exploit = exploit;
          c->observations = samples[0] + samples[1];
          c->age = samples[context]; /* a loaded decision counts as settled: no fresh burst of exploration */
          c->dirty = 1;
        }
        for (uint32_t k = 0; k < arms; k++) {
          dccl_action action = get_u32(r);
          int arm_context = get_u8(r);
          dccl_arm a;
          if (!get_arm(r, &a) || arm_context >= DCCL_AGENT_CONTEXTS || !dccl_action_well_formed(action))
            return fail(error, error_size, "arm record %u of cell %u is inconsistent", k, n);
          if (c != NULL) {
            int index = dccl_agent_action_index(agent, c->info.coll, action);
            if (index >= 0) c->arms[(size_t)arm_context * agent->max_actions + index] = a;
          }
        }
        /* Format 5 on: the readings' tail clipped, but in the cells its TAIL section lists (after this). */
        if (c != NULL) dccl_agent_cell_loaded(agent, c, version >= 5);
      }
    } else if (tag == SECTION_LEFTOVERS) {
      if (count > DCCL_AGENT_MAX_CELLS)
        return fail(error, error_size, "%u leftover records (at most %d)", count, DCCL_AGENT_MAX_CELLS);
      if (leftover_cells != NULL) *leftover_cells += count;
      for (uint32_t n = 0; n < count; n++) {
        int cell = get_u16(r);
        dccl_leftover_cell read;
        int ok = get_leftover_cell(r, &read);
        if (r->failed) return fail(error, error_size, "truncated leftover record");
        if (!ok || !first_record_of(seen, cell, SEEN_LEFTOVERS))
          return fail(error, error_size, "leftover record %u is inconsistent", n);
        dccl_agent_cell* c = agent != NULL && leftovers != NULL ? dccl_agent_cell_slot(agent, cell, 0) : NULL;
        if (c != NULL) {
          dccl_leftover_cell* into = &leftovers[c - agent->cells];
          *into = read;
          dccl_leftover_cell_loaded(into);
        }
      }
    } else if (tag == SECTION_CHANNELS) {
      if (count > DCCL_AGENT_MAX_CELLS)
        return fail(error, error_size, "%u channel records (at most %d)", count, DCCL_AGENT_MAX_CELLS);
      for (uint32_t n = 0; n < count; n++) {
        int cell = get_u16(r), cap = get_u8(r), entries = get_u16(r);
        if (r->failed) return fail(error, error_size, "truncated channel record");
        if (!first_record_of(seen, cell, SEEN_CHANNELS) || cap > DCCL_MAX_CHANNELS)
          return fail(error, error_size, "channel record %u is inconsistent", n);
        dccl_agent_cell* c = agent != NULL ? dccl_agent_cell_slot(agent, cell, 0) : NULL;
        if (c != NULL) c->channel_cap = (uint8_t)cap;
        for (int e = 0; e < entries; e++) {
          dccl_action action = get_u32(r);
          int channels = get_u8(r);
          if (r->failed) return fail(error, error_size, "truncated channel record");
          if (!dccl_action_well_formed(action) || channels < 1 || channels > DCCL_MAX_CHANNELS)
            return fail(error, error_size, "entry %d of channel record %u is inconsistent", e, n);
          int index = c != NULL ? dccl_agent_action_index(agent, c->info.coll, action) : -1;
          for (int k = 0; index >= 0 && k < DCCL_AGENT_CONTEXTS; k++)
            c->arms[(size_t)k * agent->max_actions + index].channels_ran = (uint8_t)channels;
        }
      }
    } else if (tag == SECTION_TAIL) {
      if (count > DCCL_AGENT_MAX_CELLS) return fail(error, error_size, "%u tail records (at most %d)", count, DCCL_AGENT_MAX_CELLS);
      for (uint32_t n = 0; n < count; n++) {
        int cell = get_u16(r);
        if (r->failed) return fail(error, error_size, "truncated tail record");
        if (!first_record_of(seen, cell, SEEN_TAIL)) return fail(error, error_size, "tail record %u is inconsistent", n);
        dccl_agent_cell* c = agent != NULL ? dccl_agent_cell_slot(agent, cell, 0) : NULL;
        if (c != NULL) c->tail_as_it_came = 1;
      }
    } else {
      return fail(error, error_size, "unknown section %08x", tag);
    }
  }
  return 0;
}

/* The header as read, before any check. */
typedef struct policy_header {
  char magic[8];
  uint32_t version, header_size, flags;
  uint64_t payload, checksum;
  dccl_policy_meta meta;
} policy_header;

static void read_header(const uint8_t* data, size_t size, policy_header* h) {
  reader r = {data, size, 0};
  memset(&h->meta, 0, sizeof(h->meta));
  get(&r, h->magic, 8);
  h->version = get_u32(&r);
  h->header_size = get_u32(&r);
  h->meta.fingerprint = get_u64(&r);
  h->payload = get_u64(&r);
  h->checksum = get_u64(&r);
  h->meta.observations = get_u64(&r);
  h->meta.n_ranks = get_u32(&r);
  h->meta.n_nodes = get_u32(&r);
  h->meta.max_channels = get_u32(&r);
  h->flags = get_u32(&r);
  h->meta.version = h->version;
  h->meta.tune_chunk = h->flags & FLAG_TUNE_CHUNK;
  if (r.failed) memset(h->magic, 0, sizeof(h->magic)); /* shorter than a header: not a policy */
}

/* The file is a complete, undamaged policy of this format whose header agrees with itself. */
static int check_file(const char* path, const uint8_t* data, size_t size, const policy_header* h, char* error,
                      size_t error_size) {
  char reason[256];
  if (memcmp(h->magic, magic, 8) != 0) return fail(error, error_size, "%s is not a DynamICCL policy", path);
  if (h->version < DCCL_POLICY_OLDEST_VERSION)
    return fail(error, error_size,
                "%s was written by an older DynamICCL (policy format %u; this one reads formats %u to %u)", path,
                h->version, DCCL_POLICY_OLDEST_VERSION, DCCL_POLICY_VERSION);
  if (h->version > DCCL_POLICY_VERSION + NEWER_FORMATS)
    return fail(error, error_size, "%s is not a DynamICCL policy (policy format %u)", path, h->version);
  if (h->version > DCCL_POLICY_VERSION) {
    /* Kept only if sound by this format's checksum (a flipped version bit is damage, not a newer format). */
    if (size < HEADER_SIZE || dccl_policy_checksum(data, size) != h->checksum)
      return fail(error, error_size, "%s claims policy format %u, newer than this DynamICCL's %u, and fails this "
                  "format's checksum: damaged", path, h->version, DCCL_POLICY_VERSION);
    fail(error, error_size, "%s was written by a newer DynamICCL (policy format %u; this one reads format %u)", path,
         h->version, DCCL_POLICY_VERSION);
    return FOREIGN;
  }
  if (h->header_size != HEADER_SIZE || h->payload != size - HEADER_SIZE)
    return fail(error, error_size, "%s is truncated or padded (%zu bytes, header says %llu)", path, size,
                (unsigned long long)(h->payload + h->header_size));
  if (dccl_policy_checksum(data, size) != h->checksum) return fail(error, error_size, "%s fails its checksum", path);
  if (check_header_fields(&h->meta, h->flags, reason, sizeof(reason)) != 0)
    return fail(error, error_size, "%s has an inconsistent header: %s", path, reason);
  return 0;
}

/* The policy is one this communicator (fingerprint, agent's shape and action space) can use. */
static int check_fits(const char* path, const dccl_policy_meta* m, uint64_t expected_fingerprint,
                      const dccl_config_agent* agent, char* error, size_t error_size) {
  if (expected_fingerprint != 0 && m->fingerprint != expected_fingerprint)
    return fail(error, error_size, "%s belongs to another topology (fingerprint %016llx, expected %016llx)", path,
                (unsigned long long)m->fingerprint, (unsigned long long)expected_fingerprint);
  if (agent == NULL) return 0;
  if (m->n_ranks != (uint32_t)agent->options.n_ranks || m->n_nodes != (uint32_t)agent->options.n_nodes)
    return fail(error, error_size, "%s was learned on %u ranks / %u nodes, this is %d / %d", path, m->n_ranks,
                m->n_nodes, agent->options.n_ranks, agent->options.n_nodes);
  if (m->max_channels != (uint32_t)agent->options.space.max_channels ||
      m->tune_chunk != (uint32_t)(agent->options.space.tune_chunk != 0))
    return fail(error, error_size,
                "%s was learned with up to %u channels and chunk sizes %s; this job's action space differs", path,
                m->max_channels, m->tune_chunk ? "tuned" : "NCCL's");
  return 0;
}

/* Without an agent the expected network sizes are unknown: take those the file declares. */
static void declared_network_sizes(const uint8_t* payload, size_t size, size_t* q, size_t* lstm) {
  reader peek = {payload, size, 0};
  while (peek.left > 8) {
    uint32_t tag = get_u32(&peek), count = get_u32(&peek);
    if (tag == SECTION_QNET) *q = count;
    else if (tag == SECTION_LSTM) *lstm = count;
    else break;
    if ((size_t)count * 4 > peek.left) break;
    peek.p += (size_t)count * 4;
    peek.left -= (size_t)count * 4;
  }
}

/* Checks the whole payload, then (with an agent) applies it: all or nothing. */
static int check_and_apply_payload(const uint8_t* payload, size_t size, dccl_policy_meta* meta,
                                   dccl_config_agent* agent, dccl_trigger* trigger, dccl_leftover_cell* leftovers,
                                   char* error, size_t error_size) {
  size_t expected_q = agent != NULL ? agent->q.online.count : 0;
  size_t expected_lstm = trigger != NULL && trigger->params.values != NULL ? trigger->params.count : 0;
  if (agent == NULL) declared_network_sizes(payload, size, &expected_q, &expected_lstm);
  reader check = {payload, size, 0};
  meta->leftover_cells = 0;
  if (parse_payload(&check, meta->version, NULL, NULL, NULL, expected_q, expected_lstm, &meta->leftover_cells, error,
                    error_size) != 0)
    return -1;
  if (agent != NULL) {
    reader apply = {payload, size, 0};
    if (leftovers != NULL) memset(leftovers, 0, DCCL_AGENT_MAX_CELLS * sizeof(*leftovers));
    parse_payload(&apply, meta->version, agent, trigger, leftovers, expected_q, expected_lstm, NULL, error, error_size);
    dccl_agent_index_measured(agent);
    agent->stats.observations = meta->observations; /* later saves count what was learned before */
  }
  return 0;
}

/* Why the file could not be read: missing, not a policy (too large to be one), or perhaps fine. */
static dccl_policy_status status_of_read_error(int why) {
  if (why == ENOENT) return DCCL_POLICY_MISSING;
  if (why == EFBIG) return DCCL_POLICY_REJECTED;
  return DCCL_POLICY_UNREADABLE;
}

dccl_policy_status dccl_policy_load(const char* path, uint64_t expected_fingerprint, dccl_policy_meta* meta,
                                    dccl_config_agent* agent, dccl_trigger* trigger, dccl_leftover_cell* leftovers,
                                    char* error, size_t error_size) {
  size_t size;
  char reason[256];
  uint8_t* data = (uint8_t*)dccl_read_file(path, MAX_POLICY_BYTES, &size, reason, sizeof(reason));
  if (data == NULL) {
    dccl_policy_status status = status_of_read_error(errno);
    fail(error, error_size, "cannot read %s: %s", path, reason);
    return status;
  }
  policy_header h;
  read_header(data, size, &h);
  int rc = check_file(path, data, size, &h, error, error_size);
  if (rc == 0 && check_fits(path, &h.meta, expected_fingerprint, agent, error, error_size) != 0) rc = FOREIGN;
  if (rc == 0)
    rc = check_and_apply_payload(data + HEADER_SIZE, (size_t)h.payload, &h.meta, agent, trigger, leftovers, error,
                                 error_size);
  if (meta != NULL) *meta = h.meta;
  free(data);
  return rc == 0 ? DCCL_POLICY_LOADED : rc == FOREIGN ? DCCL_POLICY_FOREIGN : DCCL_POLICY_REJECTED;
}

dccl_policy_save_plan dccl_policy_plan_save(const char* path, uint64_t fingerprint, char* error, size_t error_size) {
  dccl_policy_meta there;
  switch (dccl_policy_load(path, 0, &there, NULL, NULL, NULL, error, error_size)) {
  case DCCL_POLICY_MISSING: return DCCL_SAVE_OVER;
  case DCCL_POLICY_REJECTED: return DCCL_SAVE_AFTER_SET_ASIDE;
  case DCCL_POLICY_FOREIGN:
  case DCCL_POLICY_UNREADABLE: return DCCL_SAVE_NOT;
  case DCCL_POLICY_LOADED: break;
  }
  if (there.fingerprint == fingerprint) return DCCL_SAVE_OVER;
  fail(error, error_size, "%s holds another topology's policy (fingerprint %016llx, this one %016llx)", path,
       (unsigned long long)there.fingerprint, (unsigned long long)fingerprint);
  return DCCL_SAVE_NOT;
}

int dccl_policy_set_aside(const char* path, char* aside, size_t aside_size, char* error, size_t error_size) {
  char target[4096];
  if (dccl_resolve_links(path, target, sizeof(target), error, error_size) != 0) return -1;
  for (int n = 0; n < DCCL_POLICY_ASIDE_NAMES; n++) {
    int length = n == 0 ? snprintf(aside, aside_size, "%s.rejected", target)
                        : snprintf(aside, aside_size, "%s.rejected.%d", target, n);
    if (length < 0 || (size_t)length >= aside_size) return fail(error, error_size, "%s.rejected: path too long", target);
    struct stat st;
    if (lstat(aside, &st) == 0) continue; /* an earlier one: kept */
    if (errno != ENOENT) return fail(error, error_size, "cannot check %s: %s", aside, strerror(errno));
    if (rename(target, aside) != 0 && errno != ENOENT)
      return fail(error, error_size, "cannot rename %s to %s: %s", target, aside, strerror(errno));
    return 0;
  }
  return fail(error, error_size, "%s.rejected and .rejected.1 to .%d are all taken: remove those no longer needed",
              target, DCCL_POLICY_ASIDE_NAMES - 1);
}
