/* tests/test_table_text.c: the decision-table text format (parse, report, alternating actions, round
 * trip) and atomic replacement that never loses the previous file. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/text_file.h"
#include "../persist/atomic_file.h"
#include "../persist/table_text.h"
#include "test.h"

static dccl_table table, again;

static void test_parse_and_later_lines_win(void) {
  const char* text =
    "# fixed table\n"
    "allreduce,0,65535,tree/ll\n"
    "allreduce,65536,-1,ring/simple/ch=16/chunk=512K\n"
    "allreduce,1M,1M,ring/ll128\n"
    "allgather,1024,4095,ring/ll/ch=2,2,1\n";
  dccl_table_fill(&table, DCCL_ACTION_NCCL);
  test_log_reset();
  dccl_log_set_sink(test_log_capture);
  CHECK_EQ_INT(dccl_table_text_parse(text, "t", 16, 2, &table, NULL), 0);
  dccl_log_set_sink(NULL);
  CHECK_EQ_INT(dccl_action_algo(dccl_table_get(&table, dccl_cell_for_call(DCCL_COLL_ALLREDUCE, 100, 1, 0))), DCCL_ALGO_TREE);
  dccl_action big = dccl_table_get(&table, dccl_cell_for_call(DCCL_COLL_ALLREDUCE, 1u << 30, 3, 1));
  CHECK_EQ_INT(dccl_action_channels(big), 16);
  CHECK_EQ_INT((int)dccl_action_chunk_bytes(big), 512 * 1024);
  /* line 4 overrode the 1M bin (and reported the widening to a whole bin) */
  CHECK_EQ_INT(dccl_action_proto(dccl_table_get(&table, dccl_cell_for_call(DCCL_COLL_ALLREDUCE, 1500000, 1, 0))),
               DCCL_PROTO_LL128);
  CHECK(strstr(test_log_buffer, "t:4: byte range widened") != NULL);
  /* numPipeOps 2 and regBuff 1 select one cell family only */
  CHECK(!dccl_action_is_nccl(dccl_table_get(&table, dccl_cell_for_call(DCCL_COLL_ALLGATHER, 2048, 2, 1))));
  CHECK(dccl_action_is_nccl(dccl_table_get(&table, dccl_cell_for_call(DCCL_COLL_ALLGATHER, 2048, 1, 1))));
  CHECK(dccl_action_is_nccl(dccl_table_get(&table, dccl_cell_for_call(DCCL_COLL_ALLGATHER, 2048, 2, 0))));
  /* untouched collectives keep NCCL's choice */
  CHECK(dccl_action_is_nccl(dccl_table_get(&table, dccl_cell_for_call(DCCL_COLL_BROADCAST, 2048, 1, 0))));
}

static void test_bad_lines_and_shape_checks(void) {
  const char* text =
    "allreduce,0,100\n"                    /* 1: too few fields */
    "allreduce,0,100,ring/warp\n"          /* 2: bad action */
    "allgather,0,100,tree/ll\n"            /* 3: tree cannot run allgather */
    "allreduce,0,100,nvls_tree/simple\n"   /* 4: NVLS-tree needs 2+ nodes (this shape has 1) */
    "allreduce,500,100,ring/ll\n"          /* 5: inverted range */
    "allgather,0,100,pat/simple\n"         /* 6: PAT needs one rank per node */
    "allreduce,0,-1,ring/ll,0\n"           /* 7: numPipeOps 0 */
    "allreduce,0,-1,ring/ll,1,2\n"         /* 8: regBuff 2 */
    "allreduce,0,100,ring/ll\n"            /* 9: fine */
    "allgather,0,100,nvls/simple/ch=64\n"  /* 10: NVLS takes no channel count */
    "allreduce,0,100,collnet_chain/simple/chunk=128K\n"; /* 11: nor does CollNet a chunk size */
  dccl_table_fill(&table, DCCL_ACTION_NCCL);
  test_log_reset();
  dccl_log_set_sink(test_log_capture);
  CHECK_EQ_INT(dccl_table_text_parse(text, "bad", 8, 1, &table, NULL), 10);
  dccl_log_set_sink(NULL);
  CHECK(strstr(test_log_buffer, "bad:10: nvls takes no channel count") != NULL);
  CHECK(strstr(test_log_buffer, "bad:11: collnet_chain takes no channel count or chunk size") != NULL);
  for (int line = 1; line <= 8; line++) {
    char needle[32];
    snprintf(needle, sizeof(needle), "bad:%d:", line);
    CHECK_MSG(strstr(test_log_buffer, needle) != NULL, "line %d not reported", line);
  }
  CHECK_EQ_INT(dccl_action_proto(dccl_table_get(&table, dccl_cell_for_call(DCCL_COLL_ALLREDUCE, 64, 1, 0))), DCCL_PROTO_LL);
}

/* `A|B` lines alternate two actions call by call (B on odd-numbered calls), `A||B` lines in blocks of
 * four calls; a later plain line over the same cells ends the alternation; a bad second action is
 * reported like a bad first one. */
static void test_alternating_actions(void) {
  const char* text =
    "allreduce,0,-1,ring/simple/ch=1|nccl\n"
    "allreduce,1M,1M,tree/simple\n"
    "allgather,0,-1,nccl|ring/ll\n"
    "reducescatter,0,-1,ring/ll|ring/warp\n" /* bad second action */
    "reducescatter,1M,1M,pat/simple/ch=1||nccl\n"
    "reducescatter,2M,2M,ring/simple||ring/warp\n"; /* bad second action after || */
  dccl_table_fill(&table, DCCL_ACTION_NCCL);
  test_log_reset();
  dccl_log_set_sink(test_log_capture);
  CHECK_EQ_INT(dccl_table_text_parse(text, "alt", 2, 2, &table, NULL), 2);
  dccl_log_set_sink(NULL);
  CHECK(strstr(test_log_buffer, "alt:4: bad action 'ring/warp'") != NULL);
  CHECK(strstr(test_log_buffer, "alt:6: bad action 'ring/warp'") != NULL);
  int blocks = dccl_cell_for_call(DCCL_COLL_REDUCESCATTER, 1u << 20, 1, 0);
  dccl_action pat1 = dccl_action_make(DCCL_ALGO_PAT, DCCL_PROTO_SIMPLE, 1, 0);
  for (uint32_t call = 0; call < 24; call++)
    CHECK_MSG(dccl_table_action(&table, blocks, call) == ((call / 4) % 2 ? DCCL_ACTION_NCCL : pat1), "block call %u", call);
  int cell = dccl_cell_for_call(DCCL_COLL_ALLREDUCE, 4096, 1, 0);
  dccl_action ring1 = dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 1, 0);
  for (uint32_t call = 0; call < 16; call++)
    CHECK_MSG(dccl_table_action(&table, cell, call) == (call % 2 ? DCCL_ACTION_NCCL : ring1), "call %u", call);
  int plain = dccl_cell_for_call(DCCL_COLL_ALLREDUCE, 1u << 20, 1, 0);
  for (uint32_t call = 0; call < 8; call++)
    CHECK_EQ_INT(dccl_action_algo(dccl_table_action(&table, plain, call)), DCCL_ALGO_TREE);
  int gather = dccl_cell_for_call(DCCL_COLL_ALLGATHER, 1u << 16, 2, 1);
  CHECK(dccl_action_is_nccl(dccl_table_action(&table, gather, 0)));
  CHECK_EQ_INT(dccl_action_proto(dccl_table_action(&table, gather, 1)), DCCL_PROTO_LL);
  CHECK(dccl_action_is_nccl(dccl_table_action(&table, dccl_cell_for_call(DCCL_COLL_REDUCESCATTER, 4096, 1, 0), 1)));

  /* The format writes the alternation back, and reads it the same. */
  char* written = dccl_table_text_format(&table);
  CHECK(written != NULL && strstr(written, "allreduce,0,1048575,ring/simple/ch=1|nccl") != NULL);
  CHECK(written != NULL && strstr(written, "allgather,0,-1,nccl|ring/ll") != NULL);
  CHECK(written != NULL && strstr(written, "reducescatter,1048576,2097151,pat/simple/ch=1||nccl") != NULL);
  dccl_table_fill(&again, DCCL_ACTION_NCCL);
  CHECK_EQ_INT(dccl_table_text_parse(written, "again", 2, 2, &again, NULL), 0);
  for (int c = 0; c < DCCL_TABLE_CELLS; c++)
    for (uint32_t call = 0; call < 8; call++)
      CHECK_MSG(dccl_table_action(&table, c, call) == dccl_table_action(&again, c, call), "cell %d call %u", c, call);
  free(written);
}

static void test_format_round_trip(void) {
  dccl_table_fill(&table, DCCL_ACTION_NCCL);
  dccl_table_set_range(&table, DCCL_COLL_ALLREDUCE, 0, 15, dccl_action_make(DCCL_ALGO_TREE, DCCL_PROTO_LL, 2, 0));
  dccl_table_set_range(&table, DCCL_COLL_ALLREDUCE, 16, DCCL_SIZE_BINS - 1,
                       dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 0, 19));
  dccl_table_set(&table, dccl_cell_index(DCCL_COLL_ALLGATHER, 20, 2, 1), dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_LL128, 8, 0));
  char* text = dccl_table_text_format(&table);
  CHECK(text != NULL);
  dccl_table_fill(&again, DCCL_ACTION_NCCL);
  CHECK_EQ_INT(dccl_table_text_parse(text, "roundtrip", 16, 2, &again, NULL), 0);
  for (int cell = 0; cell < DCCL_TABLE_CELLS; cell++)
    CHECK_MSG(dccl_table_get(&table, cell) == dccl_table_get(&again, cell), "cell %d differs", cell);
  free(text);
}

/* An all-NCCL table is written as the header alone. The first write into the empty buffer used to do
 * pointer arithmetic on its null data pointer (undefined; clang's -fsanitize=undefined stops there). */
static void test_format_of_an_empty_table(void) {
  dccl_table_fill(&table, DCCL_ACTION_NCCL);
  char* text = dccl_table_text_format(&table);
  CHECK(text != NULL && strcmp(text, "# DynamICCL decision table\n"
                                     "# collective,min_bytes,max_bytes,action[,numPipeOps[,regBuff]]\n") == 0);
  dccl_table_fill(&again, dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_LL, 0, 0));
  CHECK(text != NULL && dccl_table_text_parse(text, "empty", 8, 1, &again, NULL) == 0);
  CHECK(dccl_action_proto(dccl_table_get(&again, 0)) == DCCL_PROTO_LL); /* nothing to overwrite */
  free(text);
}

static void test_atomic_save_keeps_old_file_on_failure(void) {
  char dir[] = "/tmp/dccl-test-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[256], error[256];
  snprintf(path, sizeof(path), "%s/policy.table", dir);
  dccl_table_fill(&table, DCCL_ACTION_NCCL);
  dccl_table_set_range(&table, DCCL_COLL_ALLREDUCE, 0, 47, dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_LL, 0, 0));
  CHECK(dccl_table_text_save(path, &table, error, sizeof(error)) == 0);
  char* before = dccl_read_text_file(path, 1 << 20, error, sizeof(error));
  CHECK(before != NULL && strstr(before, "allreduce,0,-1,ring/ll") != NULL);
  /* A save that cannot write its temporary file (a file size limit of 16 bytes, which binds root too)
   * fails and leaves the old file intact. */
  struct rlimit limit, tiny;
  CHECK(getrlimit(RLIMIT_FSIZE, &limit) == 0);
  tiny = limit;
  tiny.rlim_cur = 16;
  void (*previous)(int) = signal(SIGXFSZ, SIG_IGN);
  CHECK(setrlimit(RLIMIT_FSIZE, &tiny) == 0);
  dccl_table_set_range(&table, DCCL_COLL_ALLREDUCE, 0, 47, dccl_action_make(DCCL_ALGO_TREE, DCCL_PROTO_LL, 0, 0));
  CHECK(dccl_table_text_save(path, &table, error, sizeof(error)) != 0);
  CHECK(setrlimit(RLIMIT_FSIZE, &limit) == 0);
  signal(SIGXFSZ, previous);
  CHECK_MSG(strstr(error, "cannot write") != NULL, "%s", error);
  char* after = dccl_read_text_file(path, 1 << 20, error, sizeof(error));
  CHECK(after != NULL && before != NULL && strcmp(before, after) == 0);
  free(before);
  free(after);
  /* A later save succeeds and replaces the content. */
  CHECK(dccl_table_text_save(path, &table, error, sizeof(error)) == 0);
  after = dccl_read_text_file(path, 1 << 20, error, sizeof(error));
  CHECK(after != NULL && strstr(after, "allreduce,0,-1,tree/ll") != NULL);
  free(after);
  /* No temporary files are left behind either way. */
  DIR* d = opendir(dir);
  CHECK(d != NULL);
  for (struct dirent* e; d != NULL && (e = readdir(d)) != NULL;)
    CHECK_MSG(e->d_name[0] == '.' || strcmp(e->d_name, "policy.table") == 0, "left behind: %s", e->d_name);
  if (d != NULL) closedir(d);
  unlink(path);
  rmdir(dir);
}

static void test_atomic_write_into_missing_directory(void) {
  char error[256];
  CHECK(dccl_atomic_write("/nonexistent-dir/x", "abc", 3, error, sizeof(error)) != 0);
  CHECK(strstr(error, "cannot create") != NULL);
}

static void test_read_text_file_limits(void) {
  char path[] = "/tmp/dccl-text-XXXXXX", error[256];
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  CHECK(write(fd, "abc\0def", 7) == 7);
  close(fd);
  CHECK(dccl_read_text_file(path, 100, error, sizeof(error)) == NULL);
  CHECK(strstr(error, "NUL") != NULL);
  fd = open(path, O_WRONLY | O_TRUNC);
  CHECK(write(fd, "0123456789", 10) == 10);
  close(fd);
  CHECK(dccl_read_text_file(path, 9, error, sizeof(error)) == NULL);
  char* ok = dccl_read_text_file(path, 10, error, sizeof(error));
  CHECK(ok != NULL && strcmp(ok, "0123456789") == 0);
  free(ok);
  unlink(path);
}

/* The writer of a FIFO: its last line comes 50 ms after the first, then it closes. */
static void* finish_writing(void* fd) {
  nanosleep(&(struct timespec){0, 50000000L}, NULL);
  if (write(*(int*)fd, "ring/ll\n", 8) != 8) {}
  close(*(int*)fd);
  return NULL;
}

/* Text may come through a pipe (`<(...)`, a FIFO, /dev/stdin): read to its end once its writer writes;
 * with no writer it reads as empty at once (the plugin's init never waits on it); /dev/null is empty.
 * Binary files (policies) take regular files only. A folder is refused. */
static void test_text_through_a_pipe(void) {
  char folder[] = "/tmp/dccl-fifo-XXXXXX", fifo[64], error[256];
  CHECK(mkdtemp(folder) != NULL);
  snprintf(fifo, sizeof(fifo), "%s/table", folder);
  CHECK(mkfifo(fifo, 0600) == 0);
  int write_end = open(fifo, O_RDWR); /* a writer before the reader opens (O_RDWR does not wait on Linux) */
  CHECK(write_end >= 0 && write(write_end, "allreduce,0,-1,", 15) == 15);
  pthread_t writer;
  pthread_create(&writer, NULL, finish_writing, &write_end);
  char* text = dccl_read_text_file(fifo, 1 << 20, error, sizeof(error)); /* to the writer's close */
  pthread_join(writer, NULL);
  CHECK_MSG(text != NULL && strcmp(text, "allreduce,0,-1,ring/ll\n") == 0, "read: %s", text != NULL ? text : error);
  free(text);
  text = dccl_read_text_file(fifo, 1 << 20, error, sizeof(error)); /* no writer */
  CHECK_MSG(text != NULL && text[0] == '\0', "%s", text != NULL ? text : error);
  free(text);
  size_t length;
  CHECK(dccl_read_file(fifo, 1 << 20, &length, error, sizeof(error)) == NULL && strstr(error, "not a regular file") != NULL);
  text = dccl_read_text_file("/dev/null", 100, error, sizeof(error));
  CHECK(text != NULL && text[0] == '\0');
  free(text);
  CHECK(dccl_read_text_file(folder, 100, error, sizeof(error)) == NULL && strstr(error, "not a regular file") != NULL);
  unlink(fifo);
  rmdir(folder);
}

int main(void) {
  RUN(test_parse_and_later_lines_win);
  RUN(test_bad_lines_and_shape_checks);
  RUN(test_alternating_actions);
  RUN(test_format_round_trip);
  RUN(test_format_of_an_empty_table);
  RUN(test_atomic_save_keeps_old_file_on_failure);
  RUN(test_atomic_write_into_missing_directory);
  RUN(test_read_text_file_limits);
  RUN(test_text_through_a_pipe);
  TEST_SUMMARY();
}
