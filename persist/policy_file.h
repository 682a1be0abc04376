/* persist/policy_file.h: the learned policy on disk (format: docs/formats.md, "Policy file").
 *
 * Layout (little-endian): a 64-byte header
 *   "DCCLPOL\0", u32 version, u32 header size, u64 fingerprint, u64 payload bytes,
 *   u64 FNV-1a checksum, u64 observations, u32 ranks, u32 nodes, u32 max channels,
 *   u32 flags (bit 0: chunk sizes tuned; the others must be 0)
 * then tagged sections: the DQN's weights, the trigger's LSTM weights, every cell (its NCCL cost
 * snapshot, NCCL's arm per context, every measured action by its packed value), from format 3 the
 * leftover estimates of the cells that have them, from format 4 the channels NCCL ran each cell's
 * requests on, and from format 5 the cells booked with their readings' slow tail (all after the cells). The checksum covers
 * the whole file but its own 8 bytes (format 1 covered only the payload), and the fingerprint must be
 * that of the header's own ranks, nodes, channels and flags. A file is applied only after it has been
 * read and checked completely: wrong magic, version, size, checksum, an inconsistent header, another
 * fingerprint or shape, or any section out of bounds, and nothing is applied. Saving writes a
 * temporary file, fsyncs and renames, so a crash never leaves a half-written policy. */
#ifndef DYNAMICCL_PERSIST_POLICY_FILE_H
#define DYNAMICCL_PERSIST_POLICY_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "../agents/config_agent.h"
#include "../agents/leftover.h"
#include "../agents/trigger.h"

/* 2: the checksum covers the header too; 3: the leftover estimates (agents/leftover.h) are saved too;
 * 4: what NCCL ran each cell's requests on (its channel cap, each arm's channels_ran); 5: arms whose
 * readings were booked with their slow tail clipped (agents/config_agent.c, booked_tail_limit), but in the
 * cells listed as booked with it. Formats 2 to 4 are still read (their cells start without what they lack,
 * and book this job's readings with their tail, as theirs were); others are rejected (never converted),
 * and a newer DynamICCL's too. */
#define DCCL_POLICY_VERSION 5
#define DCCL_POLICY_OLDEST_VERSION 2
/* A header's rank count beyond this is damage, not a job. */
#define DCCL_POLICY_MAX_RANKS (1u << 24)
/* A network weight beyond this magnitude is damage, not training: trained weights stay within a few
 * units (2.3 at most in the simulator's policies), and one of 1e37 overflows the first forward pass. */
#define DCCL_POLICY_MAX_WEIGHT 1e4f
/* An arm's mean or recent log latency (natural log of microseconds) beyond this magnitude is damage:
 * the agent's readings lie between log(1e-3) = -6.9 and about 25 (a day). */
#define DCCL_POLICY_MAX_LOG_LATENCY 100.0f

typedef struct dccl_policy_meta {
  uint32_t version;
  uint64_t fingerprint;
  uint64_t observations;
  uint32_t n_ranks, n_nodes, max_channels, tune_chunk;
  uint32_t leftover_cells; /* cells with saved leftover estimates (read from the file; not written) */
} dccl_policy_meta;

/* The checksum the header carries: 64-bit FNV-1a of the whole file (`size` bytes from its magic on),
 * header included, skipping only the checksum field itself (bytes 32 to 39). */
uint64_t dccl_policy_checksum(const uint8_t* file, size_t size);
/* Writes the payload size (`size` less the 64-byte header) and then the checksum into a file's header:
 * the last step of a save, and how tests and the fuzz target reseal a file they edited. */
void dccl_policy_seal(uint8_t* file, size_t size);

/* The file-name key of a communicator's policy: its shape and action space. */
uint64_t dccl_policy_fingerprint(int n_ranks, int n_nodes, int max_channels, int tune_chunk);

/* Writes the policy atomically, with the leftover estimates of the agent's cells when `leftovers` is not
 * NULL (DCCL_AGENT_MAX_CELLS of them, by the agent's cell slot). `meta` must be consistent (its
 * fingerprint that of its shape), else nothing is written. Returns 0, or -1 with a reason (any previous
 * file untouched). */
int dccl_policy_save(const char* path, const dccl_policy_meta* meta, const dccl_config_agent* agent,
                     const dccl_trigger* trigger, const dccl_leftover_cell* leftovers, char* error, size_t error_size);

/* What loading a policy file found; every failure comes with a reason and leaves the agent untouched.
 * What may be saved over the path afterwards differs: nothing is there (MISSING); a file that is no
 * policy, or a damaged or obsolete one, to be set aside first (REJECTED); a sound policy of another
 * job's (FOREIGN), or a file that could not be read, perhaps a good policy (UNREADABLE): neither may be
 * replaced. */
typedef enum dccl_policy_status {
  DCCL_POLICY_LOADED = 0,
  DCCL_POLICY_REJECTED = -1,   /* read and refused: not a policy, damaged, a format older than this one reads */
  DCCL_POLICY_MISSING = -2,    /* no file at the path (ENOENT) */
  DCCL_POLICY_UNREADABLE = -3, /* not read: permissions, descriptors, memory, I/O, not a regular file */
  DCCL_POLICY_FOREIGN = -4,    /* another topology's or shape's policy (fingerprint, ranks, nodes, channels,
                                  chunk sizes), or one a newer DynamICCL wrote */
} dccl_policy_status;

/* Reads and checks `path`; with expected_fingerprint != 0 it must match. When `agent` is not NULL the
 * policy is applied to it (and to `trigger` when both have LSTM weights, and to `leftovers`, by the
 * agent's cell slot, when that is not NULL: every slot cleared, then the saved estimates, each weighing
 * at most DCCL_LEFTOVER_LOADED_SAMPLES). */
dccl_policy_status dccl_policy_load(const char* path, uint64_t expected_fingerprint, dccl_policy_meta* meta,
                                    dccl_config_agent* agent, dccl_trigger* trigger, dccl_leftover_cell* leftovers,
                                    char* error, size_t error_size);

/* What a save of a policy of this `fingerprint` may do at `path` now, checked before each save (another
 * communicator or job may have saved there since this one started: the first saved is kept): replace
 * nothing or this topology's policy (OVER); set aside a file that is no sound policy first
 * (AFTER_SET_ASIDE); or save nothing over another topology's sound policy, a newer format's, or a file
 * that cannot be read (NOT). The reason, where there is one, in `error`. */
typedef enum dccl_policy_save_plan { DCCL_SAVE_OVER, DCCL_SAVE_AFTER_SET_ASIDE, DCCL_SAVE_NOT } dccl_policy_save_plan;
dccl_policy_save_plan dccl_policy_plan_save(const char* path, uint64_t fingerprint, char* error, size_t error_size);

/* Moves a rejected policy out of the way of the next save: renames `path` (its target, where it is a
 * symbolic link) to `<path>.rejected`, or to `<path>.rejected.N` (N up to DCCL_POLICY_ASIDE_NAMES - 1)
 * where older ones are kept, and names that in `aside`. Returns 0 (also when `path` is gone already), or
 * -1 with a reason (every name taken, or the rename failed), `path` then left where it is. */
#define DCCL_POLICY_ASIDE_NAMES 10
int dccl_policy_set_aside(const char* path, char* aside, size_t aside_size, char* error, size_t error_size);

#endif
