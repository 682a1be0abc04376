/* tests/fuzz/policy_target.c: one fuzz input through the policy file loader and a loaded agent
 * (tests/fuzz/policy_target.h says what is checked). */
#include "policy_target.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../agents/config_agent.h"
#include "../../agents/trigger.h"
#include "../../persist/policy_file.h"

#define HEADER_BYTES 64
#define TRAINING_STEPS_PER_ROUND 16

static void put_u32_at(uint8_t* data, size_t offset, uint32_t v) { memcpy(data + offset, &v, 4); }
static void put_u64_at(uint8_t* data, size_t offset, uint64_t v) { memcpy(data + offset, &v, 8); }
static uint32_t u32_at(const uint8_t* data, size_t offset) {
  uint32_t v;
  memcpy(&v, data + offset, 4);
  return v;
}

static void fuzz_abort(const char* what) {
  fprintf(stderr, "fuzz_policy: %s\n", what);
  abort();
}

/* Makes `file` (at least HEADER_BYTES) a sealed policy of a plausible shape; returns the fingerprint. */
static uint64_t reseal(uint8_t* file, size_t size, int* n_ranks, int* n_nodes, int* max_channels, int* tune_chunk) {
  static const char magic[8] = {'D', 'C', 'C', 'L', 'P', 'O', 'L', 0};
  static const int channel_choices[] = {1, 2, 4, 8, 16, 32, 64};
  uint32_t ranks = u32_at(file, 48), nodes = u32_at(file, 52), channels = u32_at(file, 56);
  *n_ranks = ranks >= 1 && ranks <= 64 ? (int)ranks : 1 + (int)(ranks % 64);
  *n_nodes = nodes >= 1 && nodes <= (uint32_t)*n_ranks ? (int)nodes : 1 + (int)(nodes % (uint32_t)*n_ranks);
  *max_channels = channel_choices[channels % 7];
  for (int i = 0; i < 7; i++)
    if (channels == (uint32_t)channel_choices[i]) *max_channels = (int)channels;
  *tune_chunk = (int)(u32_at(file, 60) & 1);
  uint64_t fingerprint = dccl_policy_fingerprint(*n_ranks, *n_nodes, *max_channels, *tune_chunk);
  memcpy(file, magic, 8);
  put_u32_at(file, 8, DCCL_POLICY_VERSION);
  put_u32_at(file, 12, HEADER_BYTES);
  put_u64_at(file, 16, fingerprint);
  put_u32_at(file, 48, (uint32_t)*n_ranks);
  put_u32_at(file, 52, (uint32_t)*n_nodes);
  put_u32_at(file, 56, (uint32_t)*max_channels);
  put_u32_at(file, 60, (uint32_t)*tune_chunk);
  dccl_policy_seal(file, size);
  return fingerprint;
}

/* Every entry of a table the agent wrote must be an action NCCL can be given. */
static void check_table(const dccl_table* table) {
  for (int cell = 0; cell < DCCL_TABLE_CELLS; cell++) {
    if (!dccl_action_well_formed(dccl_table_get(table, cell))) fuzz_abort("a table entry is not well formed");
    if (!dccl_action_well_formed(table->explore[cell])) fuzz_abort("a table's exploration is not well formed");
  }
}

/* Runs a loaded agent as the learner would: decides, observes each loaded cell's actions (its training
 * deferred, as a learner behind the job defers it), pays part of the training owed, decides again. The
 * training is the input's cost (about 90% of it); a few steps per round put the loaded weights through
 * every update (forward, backward, clipping, Adam, the target's blend) as the whole debt would. */
static void drive(dccl_config_agent* agent, dccl_trigger* trigger, dccl_leftover_cell* leftovers) {
  static dccl_table table;
  agent->defer_training = 1;
  dccl_table_fill(&table, DCCL_ACTION_NCCL);
  dccl_agent_exploit_table(agent, &table);
  check_table(&table);
  for (int round = 0; round < 3; round++) {
    dccl_agent_decide(agent, &table);
    check_table(&table);
    for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) {
      const dccl_agent_cell* c = &agent->cells[s];
      if (c->cell < 0) continue;
      int coll, bin, pipe, reg;
      dccl_cell_decode(c->cell, &coll, &bin, &pipe, &reg);
      for (uint32_t call = 0; call < 8; call++) {
        dccl_action decided = dccl_table_action(&table, c->cell, call);
        dccl_agent_observation o;
        memset(&o, 0, sizeof(o));
        o.cell = c->cell;
        o.bytes = (size_t)1 << bin;
        o.decided = decided;
        o.executed_algo = dccl_action_is_nccl(decided) ? DCCL_ALGO_RING : dccl_action_algo(decided);
        o.executed_proto = dccl_action_is_nccl(decided) ? DCCL_PROTO_SIMPLE : dccl_action_proto(decided);
        o.latency_us = 10.0 + call;
        /* The learner's charge from the loaded leftover estimates, then this call's sample. */
        dccl_leftover_cell* left = &leftovers[s];
        uint32_t ran = dccl_leftover_key(o.executed_algo, o.executed_proto, call % 4);
        double charge_us = dccl_leftover_charge(left, ran);
        for (int i = 0; i < DCCL_LEFTOVER_ACTIONS; i++) {
          double other = dccl_leftover_charge(left, left->actions[i].action);
          if (!(other >= 0 && other < INFINITY)) fuzz_abort("a loaded leftover charge is not a finite time");
        }
        if (!(charge_us >= 0 && charge_us < INFINITY)) fuzz_abort("a loaded leftover charge is not a finite time");
        o.latency_us += charge_us;
        dccl_leftover_add(left, ran, 10.0, (double)call);
        if (!dccl_leftover_cell_valid(left)) fuzz_abort("leftover estimates out of bounds after a sample");
        dccl_agent_observe(agent, &o);
        dccl_trigger_result result;
        dccl_trigger_observe(trigger, coll, bin, decided, o.latency_us, 5.0, &result);
        if (!isfinite(result.residual)) fuzz_abort("the trigger's residual is not finite");
      }
    }
    dccl_agent_train_owed(agent, TRAINING_STEPS_PER_ROUND);
  }
  dccl_agent_decide(agent, &table);
  check_table(&table);
}

int dccl_fuzz_policy_one(const uint8_t* data, size_t size) {
  if (size < HEADER_BYTES || size > (1u << 22)) return 0;
  uint8_t* file = malloc(size);
  if (file == NULL) return 0;
  memcpy(file, data, size);
  int n_ranks, n_nodes, max_channels, tune_chunk;
  uint64_t fingerprint = reseal(file, size, &n_ranks, &n_nodes, &max_channels, &tune_chunk);

  char path[512];
  const char* folder = getenv("TMPDIR");
  snprintf(path, sizeof(path), "%s/dccl_fuzz_policy_%d.bin", folder != NULL && folder[0] != '\0' ? folder : "/tmp",
           (int)getpid());
  FILE* f = fopen(path, "wb");
  if (f == NULL) fuzz_abort("cannot write the policy into TMPDIR or /tmp");
  size_t written = fwrite(file, 1, size, f);
  if (fclose(f) != 0 || written != size) fuzz_abort("cannot write the policy into TMPDIR or /tmp");
  free(file);

  static dccl_config_agent agent;
  static dccl_trigger trigger;
  static dccl_leftover_cell leftovers[DCCL_AGENT_MAX_CELLS];
  dccl_agent_options options;
  dccl_agent_default_options(&options);
  options.n_ranks = n_ranks;
  options.n_nodes = n_nodes;
  options.space.max_channels = max_channels;
  options.space.tune_chunk = tune_chunk;
  options.seed = 7;
  dccl_trigger_options trigger_options;
  dccl_trigger_default_options(&trigger_options);
  trigger_options.use_lstm = 1;
  trigger_options.seed = 7;
  if (dccl_agent_init(&agent, &options) != 0) fuzz_abort("cannot initialise the agent");
  if (dccl_trigger_init(&trigger, &trigger_options) != 0) fuzz_abort("cannot initialise the trigger");

  char error[512] = "";
  dccl_policy_meta meta;
  dccl_policy_status status =
    dccl_policy_load(path, fingerprint, &meta, &agent, &trigger, leftovers, error, sizeof(error));
  if (status != DCCL_POLICY_LOADED && error[0] == '\0') fuzz_abort("a refused policy gives no reason");
  if (status == DCCL_POLICY_LOADED) {
    drive(&agent, &trigger, leftovers);
    /* What was loaded and learned saves and loads again. */
    if (dccl_policy_save(path, &meta, &agent, &trigger, leftovers, error, sizeof(error)) != 0) fuzz_abort(error);
    if (dccl_policy_load(path, fingerprint, NULL, NULL, NULL, NULL, error, sizeof(error)) != DCCL_POLICY_LOADED)
      fuzz_abort(error);
  }
  unlink(path);
  dccl_trigger_free(&trigger);
  dccl_agent_free(&agent);
  return status == DCCL_POLICY_LOADED;
}

