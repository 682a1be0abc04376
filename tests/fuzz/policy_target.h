/* tests/fuzz/policy_target.h: the policy file loader's fuzz target, shared by the libFuzzer build
 * (tests/fuzz/fuzz_policy.c) and `make test` (tests/test_policy_file.c, on mutated saved policies).
 *
 * The input is a policy file whose header is resealed before loading: magic, version, header size,
 * payload size, fingerprint and checksum are made right (the shape is taken from the input, bounded), so
 * that the time goes to the payload (sections, cells, arms) rather than to the checksum. A refused file
 * must say why; a loaded policy must leave an agent whose tables hold well-formed actions and leftover
 * estimates whose charges are finite, and that can decide, learn, train and save a policy that loads
 * again. Anything else aborts with a line saying what. */
#ifndef DYNAMICCL_TESTS_FUZZ_POLICY_TARGET_H
#define DYNAMICCL_TESTS_FUZZ_POLICY_TARGET_H

#include <stddef.h>
#include <stdint.h>

/* Runs one input (at least 64 bytes; shorter ones are skipped). Returns 1 when it loaded, else 0. */
int dccl_fuzz_policy_one(const uint8_t* data, size_t size);

#endif
