/* tests/fuzz/fuzz_wire.c: fuzz target for the coordination message parser (coord/wire.c).
 * With libFuzzer: `make fuzz` (needs clang) builds build/fuzz_wire; run it with a corpus folder.
 * Without: the same file builds a driver that runs the target on each file named on the command line
 * (to replay a crash); `make test` drives the target with 200,000 mutated inputs (tests/test_coord.c). */
#include <stddef.h>
#include <stdint.h>

#include "../../coord/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dccl_wire_parse_stream(data, size);
  return 0;
}

#include "replay_driver.h"
