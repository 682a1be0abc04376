/* tests/test_eval.c: `dccl eval` end to end: every suite scenario (and sockets-congestion's) resolves and
 * runs; on a short congestion scenario the oracle is exactly the oracle, NCCL's default exactly NCCL's,
 * ranks agree, and the learning policies beat NCCL; malformed scenario files are refused with file and line. */
#include <libgen.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

static char dccl[1200], temp_dir[64];

typedef struct row {
  char scenario[64], policy[16];
  double x_oracle, x_default;
  int mismatches;
} row;

static int read_rows(const char* path, row* rows, int capacity) {
  FILE* f = fopen(path, "r");
  if (f == NULL) return -1;
  char line[2048];
  int n = 0;
  if (fgets(line, sizeof(line), f) == NULL) {
    fclose(f);
    return 0;
  }
  while (n < capacity && fgets(line, sizeof(line), f) != NULL) {
    row* r = &rows[n];
    /* scenario,policy,seed,calls,mean_us,p99_us,x_oracle,x_default,...,rank_mismatches (16th) */
    char* field[32];
    int k = 0;
    for (char* t = strtok(line, ","); t != NULL && k < 32; t = strtok(NULL, ",")) field[k++] = t;
    if (k < 17) continue;
    snprintf(r->scenario, sizeof(r->scenario), "%s", field[0]);
    snprintf(r->policy, sizeof(r->policy), "%s", field[1]);
    r->x_oracle = atof(field[6]);
    r->x_default = atof(field[7]);
    r->mismatches = atoi(field[15]);
    n++;
  }
  fclose(f);
  return n;
}

static int run(const char* arguments, const char* csv) {
  char command[4096];
  snprintf(command, sizeof(command), "%s eval %s --csv %s > %s/out.txt 2>&1", dccl, arguments, csv, temp_dir);
  return system(command);
}

static void test_whole_suite_resolves(void) {
  char csv[128], arguments[1024];
  snprintf(csv, sizeof(csv), "%s/suite.csv", temp_dir);
  snprintf(arguments, sizeof(arguments), "--scale 0.003 --policies default %s/scenarios/suite %s/scenarios/sockets-congestion",
           DYNAMICCL_SOURCE_DIR, DYNAMICCL_SOURCE_DIR);
  CHECK_EQ_INT(run(arguments, csv), 0);
  static row rows[128];
  int n = read_rows(csv, rows, 128);
  CHECK_MSG(n >= 17 + 6, "%d scenarios ran", n);
  for (int i = 0; i < n; i++) CHECK_NEAR(rows[i].x_default, 1.0, 1e-4);
}

static void test_policies_side_by_side(void) {
  char csv[128], arguments[1024];
  snprintf(csv, sizeof(csv), "%s/step.csv", temp_dir);
  snprintf(arguments, sizeof(arguments), "--scale 0.15 --policies default,rules,autoccl,bandit,dqn,oracle %s/scenarios/suite/congestion-step.scenario",
           DYNAMICCL_SOURCE_DIR);
  CHECK_EQ_INT(run(arguments, csv), 0);
  row rows[16];
  int n = read_rows(csv, rows, 16);
  CHECK_EQ_INT(n, 6);
  double x[6] = {0};
  const char* names[6] = {"default", "rules", "autoccl", "bandit", "dqn", "oracle"};
  for (int i = 0; i < n; i++) {
    CHECK_EQ_INT(rows[i].mismatches, 0);
    for (int p = 0; p < 6; p++)
      if (strcmp(rows[i].policy, names[p]) == 0) x[p] = rows[i].x_oracle;
  }
  CHECK_NEAR(x[5], 1.0, 1e-9); /* the oracle is the oracle */
  for (int p = 1; p < 5; p++) CHECK_MSG(x[p] < x[0], "%s %.4f x oracle, NCCL %.4f", names[p], x[p], x[0]);
  /* This short run (15% of the scenario) gives dqn 1.04-1.15x the oracle over seeds 1-6 (NCCL 2.88x):
   * `dccl eval --scale 0.15 --policies dqn --seeds 6 scenarios/suite/congestion-step.scenario`. */
  CHECK_MSG(x[4] < 1.20, "dqn %.4f x oracle", x[4]);
}

/* Runs `dccl eval --policies default` on a scenario file with `text`; returns its exit status and
 * leaves its output in `out`. */
static int run_scenario_text(const char* text, char* out, size_t size) {
  char path[128], csv[128], arguments[512];
  snprintf(path, sizeof(path), "%s/bad.scenario", temp_dir);
  snprintf(csv, sizeof(csv), "%s/bad.csv", temp_dir);
  FILE* f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
  snprintf(arguments, sizeof(arguments), "--policies default,oracle --scale 0.01 %s", path);
  int rc = run(arguments, csv);
  char output[256];
  snprintf(output, sizeof(output), "%s/out.txt", temp_dir);
  f = fopen(output, "r");
  size_t got = f != NULL ? fread(out, 1, size - 1, f) : 0;
  out[got] = '\0';
  if (f != NULL) fclose(f);
  return rc;
}

static void test_malformed_scenario_refused(void) {
  char text[2048];
  CHECK(run_scenario_text("# a scenario\nname = bad\nprofile = pcie-8gpu\nworkload sweep\n", text, sizeof(text)) != 0);
  CHECK_MSG(strstr(text, "bad.scenario:4") != NULL, "message: %s", text);
  CHECK(run_scenario_text("name = bad\nprofile = pcie-8gpu\nworkload = sweep\nnccl = 2.99\n", text, sizeof(text)) != 0);
  CHECK_MSG(strstr(text, "bad.scenario:4: unknown NCCL release '2.99'") != NULL, "message: %s", text);
  /* An older NCCL's ABIs: tuner v5 cannot set chunk sizes, and the oracle does not tune them either. */
  CHECK_EQ_INT(run_scenario_text("name = old\nprofile = pcie-8gpu\nworkload = sweep\nnccl = 2.28\n", text, sizeof(text)), 0);
  CHECK_MSG(strstr(text, "== old (") != NULL, "output: %s", text);
}

/* `dccl train --out FILE` where FILE holds another topology's policy trains, leaves that policy as it is,
 * and fails (exit status 1), rather than discarding its training with status 0; over its own topology's
 * it goes on from it. */
static void test_train_over_another_topology_fails(void) {
  char command[2048], path[128];
  snprintf(path, sizeof(path), "%s/trained.bin", temp_dir);
  snprintf(command, sizeof(command), "%s train --scenario pcie-8gpu,sweep --calls 2000 --quiet --out %s > %s/train.txt 2>&1",
           dccl, path, temp_dir);
  CHECK_EQ_INT(system(command), 0);
  struct stat first, then;
  CHECK(stat(path, &first) == 0);
  snprintf(command, sizeof(command), "%s train --scenario h100-2x8-ib,sweep --calls 2000 --quiet --out %s > %s/train.txt 2>&1",
           dccl, path, temp_dir);
  int status = system(command);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d", status);
  CHECK(stat(path, &then) == 0 && then.st_ino == first.st_ino && then.st_size == first.st_size);
  snprintf(command, sizeof(command), "%s train --scenario pcie-8gpu,sweep --calls 2000 --quiet --out %s > %s/train.txt 2>&1",
           dccl, path, temp_dir);
  CHECK_EQ_INT(system(command), 0);
  CHECK(stat(path, &then) == 0 && then.st_ino != first.st_ino);
}

int main(int argc, char** argv) {
  (void)argc;
  char self[1024];
  snprintf(self, sizeof(self), "%s", argv[0]);
  snprintf(dccl, sizeof(dccl), "%s/../dccl", dirname(self));
  snprintf(temp_dir, sizeof(temp_dir), "/tmp/dccl-test-eval-XXXXXX");
  if (mkdtemp(temp_dir) == NULL) return 1;
  RUN(test_whole_suite_resolves);
  RUN(test_policies_side_by_side);
  RUN(test_malformed_scenario_refused);
  RUN(test_train_over_another_topology_fails);
  char command[256];
  snprintf(command, sizeof(command), "rm -rf %s", temp_dir);
  if (system(command) != 0) return 1;
  TEST_SUMMARY();
}
