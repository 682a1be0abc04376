/* tests/fuzz/fuzz_policy.c: fuzz target for the policy file loader and what a loaded policy drives
 * (tests/fuzz/policy_target.h). With libFuzzer: `make fuzz` (needs clang). Without: the same file builds a
 * driver that runs the target on each file named on the command line (to replay a crash); `make test`
 * drives the target with mutated saved policies (tests/test_policy_file.c). */
#include <stddef.h>
#include <stdint.h>

#include "policy_target.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dccl_fuzz_policy_one(data, size);
  return 0;
}

#include "replay_driver.h"
