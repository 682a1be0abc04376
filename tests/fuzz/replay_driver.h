/* tests/fuzz/replay_driver.h: the main() of a fuzz target built without libFuzzer (no -DDCCL_LIBFUZZER):
 * it runs LLVMFuzzerTestOneInput on each file named on the command line, from an exact-size heap copy
 * (so that AddressSanitizer sees any read past the end), to replay a crash libFuzzer saved. Included
 * once, at the end of each target's file. */
#ifndef DYNAMICCL_TESTS_FUZZ_REPLAY_DRIVER_H
#define DYNAMICCL_TESTS_FUZZ_REPLAY_DRIVER_H

#ifndef DCCL_LIBFUZZER
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  static uint8_t data[1 << 22];
  for (int i = 1; i < argc; i++) {
    FILE* f = fopen(argv[i], "rb");
    if (f == NULL) {
      perror(argv[i]);
      return 1;
    }
    size_t n = fread(data, 1, sizeof(data), f);
    fclose(f);
    uint8_t* exact = malloc(n ? n : 1);
    if (exact == NULL) {
      fprintf(stderr, "%s: out of memory\n", argv[i]);
      return 1;
    }
    memcpy(exact, data, n);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    printf("%s: %zu bytes run\n", argv[i], n);
  }
  return 0;
}
#endif

#endif
