/* tests/test_queue.c: the bounded lock-free measurement queue: FIFO order, drop-on-full accounting,
 * and no loss or duplication with concurrent producers and a consumer. */
#include <pthread.h>

#include "../core/measurement_queue.h"
#include "test.h"

static void test_fifo_and_drops(void) {
  dccl_measurement_queue q;
  CHECK(dccl_queue_init(&q, 3) != 0); /* not a power of two */
  CHECK(dccl_queue_init(&q, 8) == 0);
  dccl_measurement m = {0};
  for (int i = 0; i < 10; i++) {
    m.seq = (uint64_t)i;
    int pushed = dccl_queue_push(&q, &m);
    CHECK_EQ_INT(pushed, i < 8);
  }
  CHECK_EQ_INT((int)atomic_load(&q.dropped), 2);
  for (int i = 0; i < 8; i++) {
    CHECK(dccl_queue_pop(&q, &m));
    CHECK_EQ_INT((int)m.seq, i);
  }
  CHECK(!dccl_queue_pop(&q, &m));
  dccl_queue_free(&q);
}

#define PRODUCERS 3
#define PER_PRODUCER 200000

typedef struct concurrent {
  dccl_measurement_queue queue;
  _Atomic int producers_done;
  int producer_index[PRODUCERS];
} concurrent;

static concurrent shared;

static void* produce(void* argument) {
  int id = *(int*)argument;
  dccl_measurement m = {0};
  m.coll = (uint8_t)id;
  for (uint64_t i = 0; i < PER_PRODUCER; i++) {
    m.seq = i;
    while (!dccl_queue_push(&shared.queue, &m)) {
    } /* the test retries; the plugin would count a drop */
  }
  atomic_fetch_add(&shared.producers_done, 1);
  return NULL;
}

static void test_concurrent_producers(void) {
  CHECK(dccl_queue_init(&shared.queue, 1024) == 0);
  pthread_t threads[PRODUCERS];
  for (int i = 0; i < PRODUCERS; i++) {
    shared.producer_index[i] = i;
    pthread_create(&threads[i], NULL, produce, &shared.producer_index[i]);
  }
  uint64_t next[PRODUCERS] = {0};
  int out_of_order = 0;
  uint64_t received = 0;
  dccl_measurement m;
  while (received < (uint64_t)PRODUCERS * PER_PRODUCER) {
    if (!dccl_queue_pop(&shared.queue, &m)) continue;
    if (m.coll >= PRODUCERS || m.seq != next[m.coll]) out_of_order = 1;
    else next[m.coll]++;
    received++;
  }
  for (int i = 0; i < PRODUCERS; i++) pthread_join(threads[i], NULL);
  CHECK(!out_of_order); /* per producer, order is preserved; nothing lost or duplicated */
  CHECK(!dccl_queue_pop(&shared.queue, &m));
  dccl_queue_free(&shared.queue);
}

int main(void) {
  RUN(test_fifo_and_drops);
  RUN(test_concurrent_producers);
  TEST_SUMMARY();
}
