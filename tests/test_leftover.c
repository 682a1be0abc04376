/* tests/test_leftover.c: the per-cell estimates of what an action leaves to the next call, and what it
 * is charged: the work left behind where calls run back to back, nothing for an application's waits. */
#include "../agents/leftover.h"

#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "test_files.h"

/* tests/leftover_sequence.txt, replayed: every charge as the file says, the whole difference (or the
 * shrunk one in a DCCL_LEFTOVER_SHRINK build). bench/gpu/summarize.py --self-test replays the same file
 * through its copy of the rule. */
static void test_the_shared_sequence(void) {
  size_t size;
  char* text = (char*)test_read_file(DYNAMICCL_SOURCE_DIR "/tests/leftover_sequence.txt", &size);
  CHECK(text != NULL);
  if (text == NULL) return;
  dccl_leftover_cell cell = {0};
  int charges = 0;
  char* save = NULL;
  for (char* line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
    unsigned action, times = 1;
    double span_us, excess_us, whole, shrunk;
    if (line[0] == '#' || strspn(line, " \t") == strlen(line)) continue;
    if (strcmp(line, "cell") == 0) {
      cell = (dccl_leftover_cell){0};
    } else if (sscanf(line, "add %u %lf %lf %u", &action, &span_us, &excess_us, &times) >= 3) {
      for (unsigned i = 0; i < times; i++) dccl_leftover_add(&cell, action, span_us, excess_us);
    } else if (sscanf(line, "charge %u %lf %lf", &action, &whole, &shrunk) == 3) {
#ifdef DCCL_LEFTOVER_SHRINK
      double expected = shrunk;
#else
      double expected = whole;
#endif
      double charge = dccl_leftover_charge(&cell, action);
      CHECK_MSG(fabs(charge - expected) < 1e-5, "line '%s': charge %.6f", line, charge);
      charges++;
    } else {
      CHECK_MSG(0, "unreadable line '%s'", line);
    }
  }
  CHECK_MSG(charges >= 15, "%d charges checked", charges);
  free(text);
}

#ifndef DCCL_LEFTOVER_SHRINK /* the shrunk build (tests/test_leftover_shrunk) checks the sequence only */

/* A seedable uniform draw in [0, 1) for noisy samples (xorshift64*). */
static double uniform(uint64_t* state) {
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return (double)((*state * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* Adds n samples of an action: span_us, and excess_us plus uniform noise of +- jitter_us. */
static void add_samples(dccl_leftover_cell* cell, uint32_t action, int n, double span_us, double excess_us,
                        double jitter_us, uint64_t* rng) {
  for (int i = 0; i < n; i++) {
    double noise = rng != NULL ? (2 * uniform(rng) - 1) * jitter_us : 0;
    dccl_leftover_add(cell, action, span_us, excess_us + noise > 0 ? excess_us + noise : 0);
  }
}

/* The action's estimate in the cell (NULL: not tracked). */
static const dccl_leftover_estimate* estimate_of(const dccl_leftover_cell* cell, uint32_t action) {
  for (int i = 0; i < DCCL_LEFTOVER_ACTIONS; i++)
    if (cell->actions[i].count > 0 && cell->actions[i].action == action) return &cell->actions[i];
  return NULL;
}

/* Whether the cell tracks the action. */
static int find_entry(const dccl_leftover_cell* cell, uint32_t action) { return estimate_of(cell, action) != NULL; }

/* What the action's mean excess exceeds the other's. */
static double excess_difference(const dccl_leftover_cell* cell, uint32_t action, uint32_t other) {
  return estimate_of(cell, action)->excess_us.mean - estimate_of(cell, other)->excess_us.mean;
}

static const uint32_t ring = 1u << 16 | 2u << 8 | 2, tree = 0u << 16 | 2u << 8 | 2, tree_ll = 0u << 16 | 0u << 8 | 2;

static void test_work_left_behind_is_charged_back_to_back(void) {
  /* Tree/Simple on 2 channels over sockets (docs/results/gpu): spans 1,100 us, the next kernel starts
   * 550 us after its end; ring spans 1,650 and is followed at once (5 us). */
  dccl_leftover_cell cell = {0};
  uint64_t rng = 7;
  add_samples(&cell, tree, 10, 1100, 550, 20, &rng);
  CHECK_NEAR(dccl_leftover_charge(&cell, tree), 0, 0); /* no level yet: tree is the only action */
  add_samples(&cell, ring, 3, 1650, 5, 2, &rng);
  CHECK_NEAR(dccl_leftover_charge(&cell, tree), 0, 0); /* ring has 3 samples, tree sets the level */
  add_samples(&cell, ring, 1, 1650, 5, 2, &rng);
  double charge = dccl_leftover_charge(&cell, tree);
  /* The whole difference of the means, 545 us give or take the jitter's (sd 11.5 / sqrt(10)): far
   * beyond twice its standard error, and not shrunk by it (tree leaves a quarter more or less behind
   * from call to call on the GPU testbed; a shrunk charge has it cheaper than it is). */
  CHECK_MSG(charge > 535 && charge < 555, "charge %.1f us", charge);
  CHECK_NEAR(charge, excess_difference(&cell, tree, ring), 1e-9);
  CHECK_NEAR(dccl_leftover_charge(&cell, ring), 0, 0); /* the level is never charged */
  /* More samples narrow the difference's noise. */
  add_samples(&cell, tree, 54, 1100, 550, 20, &rng);
  add_samples(&cell, ring, 60, 1650, 5, 2, &rng);
  charge = dccl_leftover_charge(&cell, tree);
  CHECK_MSG(charge > 540 && charge < 550, "charge %.1f us", charge);
  /* An action with one sample is not charged: its variance is unknown. With two, it is. */
  add_samples(&cell, tree_ll, 1, 900, 300, 0, NULL);
  CHECK_NEAR(dccl_leftover_charge(&cell, tree_ll), 0, 0);
  add_samples(&cell, tree_ll, 1, 900, 300, 0, NULL);
  charge = dccl_leftover_charge(&cell, tree_ll);
  CHECK_NEAR(charge, excess_difference(&cell, tree_ll, ring), 1e-9);
  CHECK_MSG(charge > 290 && charge < 300, "charge %.1f us", charge);
  /* An action no sample named is charged nothing. */
  CHECK_NEAR(dccl_leftover_charge(&cell, 3u << 16), 0, 0);
}

static void test_equal_excess_is_not_charged(void) {
  /* Two actions with the same excess distribution (a wide jitter), 8 and 30 samples: noise beyond
   * twice the standard error of the difference is charged in some 8% of draws (Student's t with few
   * samples; 15 of these 200), 7 us or so each time: 0.52 us on average against an excess of 20 and
   * spans of 150-200. */
  uint64_t rng = 11;
  int charged = 0;
  double total = 0;
  for (int trial = 0; trial < 200; trial++) {
    dccl_leftover_cell cell = {0};
    add_samples(&cell, ring, 30, 200, 20, 15, &rng);
    add_samples(&cell, tree, 8, 150, 20, 15, &rng);
    double charge = dccl_leftover_charge(&cell, tree) + dccl_leftover_charge(&cell, ring);
    charged += charge > 0;
    total += charge;
  }
  printf("equal excess: %d of 200 trials charged, %.2f us a charge, %.2f us on average over all trials\n", charged,
         charged > 0 ? total / charged : 0, total / 200);
  CHECK_MSG(charged <= 20, "%d of 200 trials charged", charged);
  CHECK_MSG(total / 200 < 0.8, "mean charge %.2f us", total / 200);
}

static void test_application_waits_are_not_charged(void) {
  /* Compute of 400 us between collectives of 20-30 us: every action's excess is the wait (counted up
   * to 4 spans), the level action waits 4 spans, and nothing is charged, not even the action whose
   * excess is larger. */
  dccl_leftover_cell cell = {0};
  add_samples(&cell, ring, 20, 30, 400, 0, NULL);
  add_samples(&cell, tree, 20, 20, 440, 0, NULL);
  CHECK_NEAR(cell.actions[0].excess_us.mean, 120, 1e-9); /* counted up to 4 spans */
  CHECK_NEAR(dccl_leftover_charge(&cell, ring), 0, 0);
  CHECK_NEAR(dccl_leftover_charge(&cell, tree), 0, 0);
  /* A wait of half the level's span or less is taken for calls back to back. */
  dccl_leftover_cell short_waits = {0};
  add_samples(&short_waits, ring, 20, 100, 50, 0, NULL);
  add_samples(&short_waits, tree, 20, 80, 80, 0, NULL);
  CHECK_NEAR(dccl_leftover_charge(&short_waits, tree), 30, 1e-9);
  /* Past half its span (60 us for 40 of 60 samples: 170 / 3), tree, 20 us faster, is charged only beyond
   * what a wait ending at a set time would give it: 80 - 170 / 3 - 20. */
  add_samples(&short_waits, ring, 40, 100, 60, 0, NULL);
  CHECK_NEAR(dccl_leftover_charge(&short_waits, tree), 80 - 170.0 / 3 - 20, 1e-9);
  /* Past a whole span: the calls wait on the application, nothing charged. */
  add_samples(&short_waits, ring, 64, 100, 150, 0, NULL);
  CHECK(short_waits.actions[0].excess_us.mean > 100);
  CHECK_NEAR(dccl_leftover_charge(&short_waits, tree), 0, 0);
}

static void test_a_set_time_wait_is_not_charged(void) {
  /* The application's next call is due 80 us after each call starts (its compute on another stream),
   * and no action leaves anything behind: ring runs 50 us and waits 30, tree runs 30 and waits 50. The
   * level (ring) waits more than half its span, and tree's longer wait is what it saves: nothing is
   * charged, and tree costs its span. */
  uint64_t rng = 7;
  dccl_leftover_cell set_time = {0};
  for (int i = 0; i < 40; i++) {
    double ring_span = 50 + 4 * (uniform(&rng) - 0.5), tree_span = 30 + 4 * (uniform(&rng) - 0.5);
    dccl_leftover_add(&set_time, ring, ring_span, 80 - ring_span);
    dccl_leftover_add(&set_time, tree, tree_span, 80 - tree_span);
  }
  CHECK_NEAR(dccl_leftover_charge(&set_time, tree), 0, 0);
  /* A gap of 30 us after every call instead (the same for both), and tree, now 40 us, leaves 25 behind:
   * charged 25 less the 10 it saves, 15, it still costs more than ring (55 against 50), as its stream
   * time does (65 against 50). Nothing charged there, it would cost 40 (the warm start's blind spot,
   * docs/agents.md). */
  dccl_leftover_cell fixed_gap = {0};
  add_samples(&fixed_gap, ring, 40, 50, 30, 2, &rng);
  add_samples(&fixed_gap, tree, 40, 40, 55, 2, &rng);
  double charge = dccl_leftover_charge(&fixed_gap, tree);
  CHECK_MSG(charge > 14 && charge < 16, "charge %.2f", charge);
}

static void test_an_outlier_counts_at_most_four_spans(void) {
  /* A compute phase of 2 ms after one call in 64 of the level action: counted as 400 us, it moves the
   * level's mean by 6.25 us, not 31, and the difference's standard error to 6.2; an action leaving 40
   * us behind is still charged 33.75 (nothing, were the 2 ms counted whole: its standard error 31). */
  dccl_leftover_cell cell = {0};
  add_samples(&cell, ring, 63, 100, 0, 0, NULL);
  add_samples(&cell, ring, 1, 100, 2000, 0, NULL);
  add_samples(&cell, tree, 64, 80, 40, 0, NULL);
  CHECK_NEAR(cell.actions[0].excess_us.mean, 400.0 / 64, 1e-9);
  double charge = dccl_leftover_charge(&cell, tree);
  CHECK_NEAR(charge, 40 - 400.0 / 64, 1e-9);
}

static void test_bad_samples_and_room(void) {
  dccl_leftover_cell cell = {0};
  dccl_leftover_add(&cell, ring, 100, NAN);
  dccl_leftover_add(&cell, ring, 100, -1);
  dccl_leftover_add(&cell, ring, INFINITY, 5);
  dccl_leftover_add(&cell, ring, -3, 5);
  for (int i = 0; i < DCCL_LEFTOVER_ACTIONS; i++) CHECK_EQ_INT(cell.actions[i].count, 0);
  /* The window: counts stop at DCCL_LEFTOVER_WINDOW, and later samples weigh 1 / window. */
  add_samples(&cell, ring, 100, 100, 10, 0, NULL);
  CHECK_EQ_INT(cell.actions[0].count, DCCL_LEFTOVER_WINDOW);
  dccl_leftover_add(&cell, ring, 100, 74);
  CHECK_NEAR(cell.actions[0].excess_us.mean, 11, 1e-9);
  /* Eight actions tracked; a ninth takes the place of the least recently sampled (ring, sampled first,
   * whose mean excess is above the others': not the level). */
  for (uint32_t a = 1; a < DCCL_LEFTOVER_ACTIONS; a++) add_samples(&cell, ring + a, a < 3 ? 2 : 10, 100, 10, 0, NULL);
  dccl_leftover_add(&cell, ring + 100, 100, 10);
  CHECK(find_entry(&cell, ring + 100) && !find_entry(&cell, ring) && find_entry(&cell, ring + 1));
  /* The level is never the one to go, however long since it ran: here every action has 64 samples and
   * ring, the level (no excess), ran first; newcomers take the least recently sampled others' places,
   * and the next newcomer does not push out the last. */
  dccl_leftover_cell full = {0};
  for (int round = 0; round < 64; round++)
    for (uint32_t a = 0; a < DCCL_LEFTOVER_ACTIONS; a++) dccl_leftover_add(&full, ring + a, 100, a == 0 ? 0 : 40);
  dccl_leftover_add(&full, tree, 100, 40);
  dccl_leftover_add(&full, tree_ll, 100, 40);
  CHECK(find_entry(&full, ring) && find_entry(&full, tree) && find_entry(&full, tree_ll));
  CHECK(!find_entry(&full, ring + 1) && !find_entry(&full, ring + 2) && find_entry(&full, ring + 3));
  CHECK_MSG(dccl_leftover_charge(&full, ring + 3) > 35, "charge %.1f", dccl_leftover_charge(&full, ring + 3));
}
#endif

int main(void) {
  RUN(test_the_shared_sequence);
#ifndef DCCL_LEFTOVER_SHRINK
  RUN(test_work_left_behind_is_charged_back_to_back);
  RUN(test_equal_excess_is_not_charged);
  RUN(test_application_waits_are_not_charged);
  RUN(test_a_set_time_wait_is_not_charged);
  RUN(test_an_outlier_counts_at_most_four_spans);
  RUN(test_bad_samples_and_room);
#endif
  TEST_SUMMARY();
}
