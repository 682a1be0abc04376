#!/usr/bin/env bash
# tests/tsan_available.sh: whether ThreadSanitizer runs on this machine (make test's TSan part needs it).
# Builds and runs a two-thread program with -fsanitize=thread. Some kernels map memory where GCC's TSan
# does not expect it (vm.mmap_rnd_bits above 28) and it stops at start; then this says so and fails.
# Usage: tests/tsan_available.sh [compiler]   (exit 0: available)
set -u
cc=${1:-cc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/probe.c" <<'PROBE'
#include <pthread.h>
static int shared;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void* bump(void* unused) {
  (void)unused;
  pthread_mutex_lock(&lock);
  shared++;
  pthread_mutex_unlock(&lock);
  return 0;
}
int main(void) {
  pthread_t thread;
  if (pthread_create(&thread, 0, bump, 0) != 0) return 1;
  bump(0);
  pthread_join(thread, 0);
  return shared == 2 ? 0 : 1;
}
PROBE
if ! "$cc" -fsanitize=thread -pthread -o "$work/probe" "$work/probe.c" > "$work/log" 2>&1; then
  echo "ThreadSanitizer: $cc cannot build with -fsanitize=thread ($(head -n 1 "$work/log")); its part of the tests is skipped"
  exit 1
fi
if ! timeout 30 "$work/probe" > "$work/log" 2>&1; then
  echo "ThreadSanitizer does not run here ($(grep -m 1 -E 'FATAL|ERROR' "$work/log" || head -n 1 "$work/log")); its part of the tests is skipped"
  exit 1
fi
exit 0
