/* plugin/registry.h: every communicator context of the process, and how the tuner half and the
 * profiler half of one communicator find each other.
 *
 * Pairing rule. NCCL initialises a communicator's profiler context before its tuner context, on the
 * same thread (NCCL 2.27 through 2.30, initTransportsRank / ncclCommInitRankFunc). So:
 *  1. A profiler init creates the context and leaves it "pending" for the calling thread.
 *  2. A tuner init claims the pending context of its own thread when the shape matches (nRanks,
 *     nNodes, and commId for tuner v5+). This is the only rule that tells apart the ranks of one
 *     communicator living in one process (they share a commId).
 *  3. Otherwise a v5+ tuner joins the unique unpaired profiler context with its commId.
 *  4. Otherwise (tuner v2-v4 on a thread without a pending profiler context, or ambiguity) the tuner
 *     runs without feedback: it still applies fixed tables and pins, but measures nothing.
 * The registry lock is taken only at init and finalize, never on the hot path. */
#ifndef DYNAMICCL_PLUGIN_REGISTRY_H
#define DYNAMICCL_PLUGIN_REGISTRY_H

#include <stdint.h>

#include "comm.h"

dccl_comm* dccl_registry_attach_profiler(uint64_t comm_id, int rank, int n_ranks, int n_nodes, ncclDebugLogger_t logger,
                                         int abi_version, int* activation_mask);
dccl_comm* dccl_registry_attach_tuner(int comm_id_known, uint64_t comm_id, int n_ranks, int n_nodes,
                                      ncclDebugLogger_t logger, int abi_version);

enum { DCCL_HALF_TUNER = 1, DCCL_HALF_PROFILER = 2 };
/* Detaches one half; the context is destroyed when both halves are gone. */
void dccl_registry_detach(dccl_comm* comm, int half);

/* Number of live contexts (tests). */
int dccl_registry_count(void);

/* Simulations driving the statically linked plugin: with manual on, no background thread is started
 * and the caller runs each communicator's background pass itself, at points of its choosing
 * (deterministic). Set before the first communicator is initialised. */
void dccl_registry_set_manual(int manual);
/* One background pass (measurements, learning, publication) for the communicator of a tuner context. */
void dccl_plugin_sync_step(void* tuner_context);

#endif
