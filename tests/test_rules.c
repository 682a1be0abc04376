/* tests/test_rules.c: NCCL example-tuner CSV parsing, malformed-line reporting, and the compiled
 * per-cell index agreeing with a plain first-match scan; pins that no communicator of the node and rank
 * counts they name can run are rejected. */
#include "../core/rng.h"
#include "../core/rules.h"
#include "test.h"

static dccl_rule_list rules;

static void test_formats_of_8_9_10_fields(void) {
  const char* text =
    "# comment\n"
    "\n"
    "allreduce,0,65536,tree,simple,2,1,-1,-1,1\n"
    "allreduce,65537,1048576,ring,simple,4,4,32,1\n"
    "allreduce,1048577,4294967295,ring,ll128,-1,-1,-1\n"
    "  allgather , 0 , -1 , ring , simple , -1 , 2 , -1  \r\n";
  test_log_reset();
  dccl_log_set_sink(test_log_capture);
  CHECK_EQ_INT(dccl_rules_parse(text, "rules.csv", &rules, NULL), 0);
  CHECK_EQ_INT(rules.count, 4);
  CHECK_EQ_INT(rules.rules[0].reg_buff, 1);
  CHECK_EQ_INT(rules.rules[0].num_pipe_ops, -1);
  CHECK_EQ_INT(rules.rules[0].line, 3);
  CHECK_EQ_INT(rules.rules[1].num_pipe_ops, 1);
  CHECK_EQ_INT(rules.rules[1].reg_buff, -1);
  CHECK_EQ_INT(rules.rules[2].proto, DCCL_PROTO_LL128);
  CHECK_EQ_INT(rules.rules[2].channels, -1);
  CHECK(rules.rules[3].max_bytes == UINT64_MAX);
  CHECK_EQ_INT(rules.rules[3].coll, DCCL_COLL_ALLGATHER);
  dccl_log_set_sink(NULL);
}

static void test_malformed_lines_reported_with_line_numbers(void) {
  const char* text =
    "allreduce,0,100,ring,simple,2,1,-1\n"          /* 1: fine */
    "allreduce,0,100,ring,simple,2,1\n"             /* 2: 7 fields */
    "allfoo,0,100,ring,simple,2,1,-1\n"             /* 3: unknown collective */
    "allreduce,200,100,ring,simple,2,1,-1\n"        /* 4: min > max */
    "allreduce,0,100,ring,turbo,2,1,-1\n"           /* 5: unknown protocol */
    "allreduce,0,100,ring,simple,99,1,-1\n"         /* 6: channels out of range */
    "allreduce,0,100,ring,simple,2,1,-1,1,7\n"      /* 7: regBuff 7 */
    "broadcast,0,32768,tree,simple,-1,1,-1,-1,1\n"  /* 8: tree cannot run broadcast (NCCL's own example has this) */
    "allreduce,0,1e3,ring,simple,2,1,-1\n"          /* 9: not an integer */
    "allreduce,0,100,ring,simple,2,1,-1,1,1,9\n"    /* 10: 11 fields */
    "allreduce,0,100,collnet_direct,simple,64,1,-1\n"; /* 11: CollNet takes no channel count */
  test_log_reset();
  dccl_log_set_sink(test_log_capture);
  CHECK_EQ_INT(dccl_rules_parse(text, "bad.csv", &rules, NULL), 10);
  dccl_log_set_sink(NULL);
  CHECK_EQ_INT(rules.count, 1);
  CHECK(strstr(test_log_buffer, "bad.csv:11: collnet_direct takes no channel count") != NULL);
  for (int line = 2; line <= 11; line++) {
    char needle[32];
    snprintf(needle, sizeof(needle), "bad.csv:%d:", line);
    CHECK_MSG(strstr(test_log_buffer, needle) != NULL, "no report for line %d in:\n%s", line, test_log_buffer);
  }
  CHECK(strstr(test_log_buffer, "bad.csv:1:") == NULL);
  CHECK(strstr(test_log_buffer, "tree/simple can never run broadcast") != NULL);
}

/* A pin is checked against the node and rank counts it names, and rejected with its line when no
 * communicator of those counts can run it: NVLS-tree needs several nodes, PAT one rank per node. */
static void test_pins_impossible_on_the_counts_they_name(void) {
  const char* text =
    "allreduce,0,-1,nvls_tree,simple,-1,1,-1\n"  /* 1: one node */
    "allreduce,0,-1,nvls_tree,simple,-1,2,-1\n"  /* 2: fine */
    "allreduce,0,-1,nvls_tree,simple,-1,-1,1\n"  /* 3: one rank, so one node */
    "allreduce,0,-1,nvls_tree,simple,-1,-1,16\n" /* 4: fine (16 ranks may span nodes) */
    "allgather,0,-1,pat,simple,-1,1,-1\n"        /* 5: one node */
    "allgather,0,-1,pat,simple,-1,4,-1\n"        /* 6: fine (4 ranks on 4 nodes) */
    "allgather,0,-1,pat,simple,-1,-1,8\n"        /* 7: fine (8 nodes of one rank) */
    "allgather,0,-1,pat,simple,-1,2,8\n"         /* 8: 4 ranks per node */
    "allgather,0,-1,pat,simple,-1,-1,-1\n"       /* 9: fine */
    "allreduce,0,-1,nvls_tree,simple,-1,-1,-1\n" /* 10: fine */
    "allreduce,0,-1,ring,simple,-1,4,2\n"        /* 11: fewer ranks than nodes */
    "allreduce,0,-1,ring,ll,-1,1,-1\n";          /* 12: fine */
  test_log_reset();
  dccl_log_set_sink(test_log_capture);
  CHECK_EQ_INT(dccl_rules_parse(text, "shape.csv", &rules, NULL), 5);
  dccl_log_set_sink(NULL);
  CHECK_EQ_INT(rules.count, 7);
  const int rejected[] = {1, 3, 5, 8, 11};
  for (int line = 1, r = 0; line <= 12; line++) {
    char needle[32];
    snprintf(needle, sizeof(needle), "shape.csv:%d:", line);
    int expected = r < 5 && rejected[r] == line;
    r += expected;
    CHECK_MSG((strstr(test_log_buffer, needle) != NULL) == expected, "line %d %s in:\n%s", line,
              expected ? "not reported" : "reported", test_log_buffer);
  }
  CHECK(strstr(test_log_buffer, "shape.csv:1: nvls_tree/simple can never run allreduce on 1 node;") != NULL);
  CHECK(strstr(test_log_buffer, "shape.csv:3: nvls_tree/simple can never run allreduce with 1 rank;") != NULL);
  CHECK(strstr(test_log_buffer, "shape.csv:8: pat/simple can never run allgather on 2 nodes with 8 ranks;") != NULL);
  CHECK(strstr(test_log_buffer, "shape.csv:11: nRanks 2 is fewer than nNodes 4") != NULL);
}

static void test_unreadable_file(void) {
  test_log_reset();
  dccl_log_set_sink(test_log_capture);
  CHECK_EQ_INT(dccl_rules_load("/nonexistent/rules.csv", &rules, NULL), -1);
  dccl_log_set_sink(NULL);
  CHECK(strstr(test_log_buffer, "cannot read rules file /nonexistent/rules.csv") != NULL);
  CHECK_EQ_INT(rules.count, 0);
}

/* First match wins, pins for other shapes are dropped at compile time, and the per-cell index finds
 * exactly what a linear scan finds, on random rules and random calls. */
static void test_compiled_index_matches_linear_scan(void) {
  dccl_rng rng;
  dccl_rng_seed(&rng, 7);
  for (int trial = 0; trial < 20; trial++) {
    rules.count = 0;
    int n = 1 + (int)dccl_rng_below(&rng, 40);
    for (int i = 0; i < n; i++) {
      dccl_rule* r = &rules.rules[rules.count++];
      memset(r, 0, sizeof(*r));
      r->coll = (int)dccl_rng_below(&rng, 5);
      uint64_t a = dccl_rng_below(&rng, 1ULL << (4 + dccl_rng_below(&rng, 30)));
      uint64_t b = a + dccl_rng_below(&rng, 1ULL << (4 + dccl_rng_below(&rng, 30)));
      r->min_bytes = a;
      r->max_bytes = dccl_rng_below(&rng, 8) == 0 ? UINT64_MAX : b;
      r->algo = DCCL_ALGO_RING;
      r->proto = (int)dccl_rng_below(&rng, 3);
      r->channels = -1;
      r->n_nodes = dccl_rng_below(&rng, 4) == 0 ? 3 : -1;
      r->n_ranks = -1;
      r->num_pipe_ops = dccl_rng_below(&rng, 3) == 0 ? 1 + (int)dccl_rng_below(&rng, 6) : -1;
      r->reg_buff = dccl_rng_below(&rng, 3) == 0 ? (int)dccl_rng_below(&rng, 2) : -1;
      r->line = i + 1;
    }
    dccl_pin_set pins;
    CHECK(dccl_pins_compile(&pins, &rules, 2, 16) == 0);
    for (int q = 0; q < 2000; q++) {
      int coll = (int)dccl_rng_below(&rng, 5);
      uint64_t bytes = dccl_rng_below(&rng, 1ULL << (1 + dccl_rng_below(&rng, 40)));
      int pipe = 1 + (int)dccl_rng_below(&rng, 8), reg = (int)dccl_rng_below(&rng, 2);
      int expected = -1;
      for (int i = 0; i < rules.count && expected < 0; i++) {
        const dccl_rule* r = &rules.rules[i];
        if (r->n_nodes >= 0 && r->n_nodes != 2) continue;
        if (dccl_rule_matches(r, coll, bytes, pipe, reg)) expected = r->line;
      }
      int found = -1;
      uint32_t begin, end;
      dccl_pins_candidates(&pins, dccl_cell_for_call(coll, bytes, pipe, reg), &begin, &end);
      for (uint32_t i = begin; i < end && found < 0; i++) {
        const dccl_rule* r = &pins.rules[pins.cell_rules[i]];
        if (dccl_rule_matches(r, coll, bytes, pipe, reg)) found = r->line;
      }
      CHECK_MSG(found == expected, "trial %d: coll %d bytes %llu pipe %d reg %d: index %d, scan %d", trial, coll,
                (unsigned long long)bytes, pipe, reg, found, expected);
    }
    dccl_pins_free(&pins);
  }
}

int main(void) {
  RUN(test_formats_of_8_9_10_fields);
  RUN(test_malformed_lines_reported_with_line_numbers);
  RUN(test_pins_impossible_on_the_counts_they_name);
  RUN(test_unreadable_file);
  RUN(test_compiled_index_matches_linear_scan);
  TEST_SUMMARY();
}
