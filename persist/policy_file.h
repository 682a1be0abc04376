/* persist/policy_file.h: the learned policy on disk.
 *
 * Layout (little-endian): a 64-byte header
 *   "DCCLPOL\0", u32 version, u32 header size, u64 fingerprint, u64 payload bytes,
 *   u64 FNV-1a checksum of the payload, u64 observations, u32 ranks, u32 nodes,
 *   u32 max channels, u32 flags (bit 0: chunk sizes tuned)
 * then tagged sections: the DQN's weights, the trigger's LSTM weights, and every cell (its NCCL cost
 * snapshot, NCCL's arm per context, every measured action by its packed value). A file is applied
 * only after it has been read and checked completely: wrong magic, version, size, checksum,
 * fingerprint or shape, or any section out of bounds, and nothing is applied. Saving writes a
 * temporary file, fsyncs and renames, so a crash never leaves a half-written policy. */
#ifndef DYNAMICCL_PERSIST_POLICY_FILE_H
#define DYNAMICCL_PERSIST_POLICY_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "../agents/config_agent.h"
#include "../agents/trigger.h"

#define DCCL_POLICY_VERSION 1

typedef struct dccl_policy_meta {
  uint32_t version;
  uint64_t fingerprint;
  uint64_t observations;
  uint32_t n_ranks, n_nodes, max_channels, tune_chunk;
} dccl_policy_meta;

/* The payload checksum (64-bit FNV-1a) the header carries. */
uint64_t dccl_policy_checksum(const uint8_t* data, size_t size);

/* The file-name key of a communicator's policy: its shape and action space. */
uint64_t dccl_policy_fingerprint(int n_ranks, int n_nodes, int max_channels, int tune_chunk);

int dccl_policy_save(const char* path, const dccl_policy_meta* meta, const dccl_config_agent* agent,
                     const dccl_trigger* trigger, char* error, size_t error_size);

/* Reads and checks `path`; with expected_fingerprint != 0 it must match. When `agent` is not NULL the
 * policy is applied to it (and to `trigger` when both have LSTM weights). Returns 0, or -1 with a
 * reason (the agent untouched). */
int dccl_policy_load(const char* path, uint64_t expected_fingerprint, dccl_policy_meta* meta, dccl_config_agent* agent,
                     dccl_trigger* trigger, char* error, size_t error_size);

#endif
