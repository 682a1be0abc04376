/* tests/test.h: a minimal test harness. Each test binary defines test functions, registers them in
 * main with RUN(name), and ends with TEST_SUMMARY(), which prints "N passed, N failed". */
#ifndef DYNAMICCL_TESTS_TEST_H
#define DYNAMICCL_TESTS_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Built with AddressSanitizer (gcc says so with __SANITIZE_ADDRESS__, clang only through __has_feature):
 * there a test that measures a rate over many seeds runs a few of them, to check memory, not the rate. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ADDRESS_SANITIZER 1
#endif
#endif

static int test_passed, test_failed, test_current_failed;
static const char* test_current_name;

#define CHECK(cond)                                                                   \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "  FAIL %s (%s:%d): %s\n", test_current_name, __FILE__, __LINE__, #cond); \
      test_current_failed = 1;                                                        \
    }                                                                                 \
  } while (0)

#define CHECK_MSG(cond, ...)                                                          \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "  FAIL %s (%s:%d): %s: ", test_current_name, __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                   \
      fprintf(stderr, "\n");                                                          \
      test_current_failed = 1;                                                        \
    }                                                                                 \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                            \
  do {                                                                                \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);                  \
    CHECK_MSG(check_a_ == check_b_, "%lld != %lld", check_a_, check_b_);            \
  } while (0)

#define CHECK_NEAR(a, b, tolerance)                                                   \
  do {                                                                                \
    double check_a_ = (double)(a), check_b_ = (double)(b);                            \
    CHECK_MSG(fabs(check_a_ - check_b_) <= (tolerance), "%.9g vs %.9g (tolerance %g)", check_a_, check_b_, \
              (double)(tolerance));                                                   \
  } while (0)

/* Runs one test function and logs "ok name (seconds)" or "not ok name (seconds)" to stderr (the
 * binary's log under `make test`), so that a slow test shows where its time goes. */
#define RUN(fn)                                                   \
  do {                                                            \
    struct timespec run_start_, run_end_;                         \
    test_current_name = #fn;                                      \
    test_current_failed = 0;                                      \
    clock_gettime(CLOCK_MONOTONIC, &run_start_);                  \
    fn();                                                         \
    clock_gettime(CLOCK_MONOTONIC, &run_end_);                    \
    if (test_current_failed) test_failed++;                      \
    else test_passed++;                                           \
    fprintf(stderr, "%s %s (%.1f s)\n", test_current_failed ? "not ok" : "ok", #fn, \
            (double)(run_end_.tv_sec - run_start_.tv_sec) + 1e-9 * (double)(run_end_.tv_nsec - run_start_.tv_nsec)); \
  } while (0)

#define TEST_SUMMARY()                                   \
  do {                                                   \
    printf("%d passed, %d failed\n", test_passed, test_failed); \
    return test_failed == 0 ? 0 : 1;                     \
  } while (0)

/* Captures log lines emitted without an NCCL logger. */
static char test_log_buffer[65536];
static size_t test_log_length;
__attribute__((unused)) static void test_log_capture(int level, const char* line) {
  (void)level;
  size_t n = strlen(line);
  if (test_log_length + n + 2 < sizeof(test_log_buffer)) {
    memcpy(test_log_buffer + test_log_length, line, n);
    test_log_length += n;
    test_log_buffer[test_log_length++] = '\n';
    test_log_buffer[test_log_length] = '\0';
  }
}
__attribute__((unused)) static void test_log_reset(void) {
  test_log_length = 0;
  test_log_buffer[0] = '\0';
}

#endif
