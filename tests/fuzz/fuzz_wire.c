/* tests/fuzz/fuzz_wire.c: fuzz target for the coordination message parser (coord/wire.c).
 * With libFuzzer: `make fuzz` (needs clang) builds build/fuzz_wire; run it with a corpus folder.
 * Without: the same file builds a driver that runs the target on each file named on the command line
 * (to replay a crash); `make test` drives the target with 200,000 mutated inputs (tests/test_coord.c). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../coord/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dccl_wire_parse_stream(data, size);
  return 0;
}

#ifndef DCCL_LIBFUZZER
int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    FILE* f = fopen(argv[i], "rb");
    if (f == NULL) {
      perror(argv[i]);
      return 1;
    }
    static uint8_t data[1 << 20];
    size_t n = fread(data, 1, sizeof(data), f);
    fclose(f);
    uint8_t* exact = malloc(n ? n : 1);
    for (size_t k = 0; k < n; k++) exact[k] = data[k];
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    printf("%s: %zu bytes parsed\n", argv[i], n);
  }
  return 0;
}
#endif
