/* tests/test_atomic_file.c: replacing a file through a temporary file (persist/atomic_file.h) when
 * other writers share the folder: a file already at the temporary name (another process's or host's
 * temporary file) is neither truncated nor renamed over the target, and writers whose names collide,
 * two threads or two processes, each leave a complete file; links are followed, permissions kept,
 * non-regular files never replaced; folders made with their parents; what killed saves left is removed
 * once no save can still be writing it. */
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../persist/atomic_file.h"
#include "test.h"
#include "test_files.h"

static char directory[64];

static void path_in(char* out, size_t size, const char* name) { snprintf(out, size, "%s/%s", directory, name); }

/* The file holds exactly `text`. */
static int holds_text(const char* path, const char* text) {
  size_t size;
  uint8_t* data = test_read_file(path, &size);
  int same = data != NULL && size == strlen(text) && memcmp(data, text, size) == 0;
  free(data);
  return same;
}

/* The file is `size` bytes, all of them `byte`. */
static int holds_only(const char* path, size_t size, uint8_t byte) {
  size_t n;
  uint8_t* data = test_read_file(path, &n);
  int ok = data != NULL && n == size;
  for (size_t i = 0; ok && i < n; i++) ok = data[i] == byte;
  free(data);
  return ok;
}

static int write_text(const char* path, const char* text) { return test_write_file(path, text, strlen(text)); }

/* Entries of the test folder but `name`. */
static int others_in_directory(const char* name) {
  DIR* d = opendir(directory);
  if (d == NULL) return -1;
  int others = 0;
  for (struct dirent* e; (e = readdir(d)) != NULL;)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && strcmp(e->d_name, name) != 0) {
      fprintf(stderr, "  also in the folder: %s\n", e->d_name);
      others++;
    }
  closedir(d);
  return others;
}

/* Suffixes from a list, the last one repeated. */
typedef struct listed_suffixes {
  const uint64_t* values;
  int count, next;
} listed_suffixes;

static uint64_t next_listed(void* context) {
  listed_suffixes* s = context;
  uint64_t value = s->values[s->next < s->count ? s->next : s->count - 1];
  s->next++;
  return value;
}

static void test_temporary_name(void) {
  char name[64];
  CHECK(dccl_temporary_name("/a/policy.bin", 0x0123456789abcdefULL, name, sizeof(name)) == 0);
  CHECK_MSG(strcmp(name, "/a/policy.bin.tmp.0123456789abcdef") == 0, "%s", name);
  CHECK(dccl_temporary_name("/a/policy.bin", 1, name, 20) == -1);
  /* Random suffixes differ between calls and between a process and its fork (another PID namespace
   * or host would reuse a PID, never these 64 bits). */
  uint64_t a = dccl_random_suffix(NULL), b = dccl_random_suffix(NULL);
  CHECK(a != b);
  int pipe_fds[2];
  CHECK(pipe(pipe_fds) == 0);
  pid_t child = fork();
  if (child == 0) {
    uint64_t c = dccl_random_suffix(NULL);
    _exit(write(pipe_fds[1], &c, sizeof(c)) == (ssize_t)sizeof(c) ? 0 : 1);
  }
  uint64_t parent = dccl_random_suffix(NULL), in_child = 0;
  CHECK(read(pipe_fds[0], &in_child, sizeof(in_child)) == (ssize_t)sizeof(in_child));
  waitpid(child, NULL, 0);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  CHECK(parent != in_child);
}

/* Another writer's temporary file sits at the first name this writer draws: it is left as it is (not
 * truncated, not renamed over the target), and the write goes through under the next name. When every
 * name drawn is taken, the write fails with a reason and the target keeps its content. */
static void test_existing_temporary_is_left_alone(void) {
  char target[128], theirs[192];
  path_in(target, sizeof(target), "policy.bin");
  const uint64_t colliding = 0x5eed5eed5eed5eedULL;
  CHECK(dccl_temporary_name(target, colliding, theirs, sizeof(theirs)) == 0);
  CHECK(write_text(target, "the good policy") == 0);
  CHECK(write_text(theirs, "another writer's half-written file") == 0);

  const uint64_t first_taken[] = {colliding, 0x1111};
  listed_suffixes s = {first_taken, 2, 0};
  char error[512] = "";
  CHECK_MSG(dccl_atomic_write_with(target, "new policy", 10, next_listed, &s, error, sizeof(error)) == 0, "%s", error);
  CHECK_EQ_INT(s.next, 2);
  CHECK(holds_text(target, "new policy"));
  CHECK_MSG(holds_text(theirs, "another writer's half-written file"), "the other writer's temporary file was touched");

  const uint64_t always_taken[] = {colliding};
  s = (listed_suffixes){always_taken, 1, 0};
  memset(error, 0, sizeof(error));
  CHECK_EQ_INT(dccl_atomic_write_with(target, "newer policy", 12, next_listed, &s, error, sizeof(error)), -1);
  CHECK_MSG(strstr(error, "taken") != NULL, "reason: %s", error);
  CHECK(s.next > 1 && s.next <= 16);
  CHECK(holds_text(target, "new policy"));
  CHECK(holds_text(theirs, "another writer's half-written file"));
  unlink(theirs);
  CHECK_EQ_INT(others_in_directory("policy.bin"), 0);
  unlink(target);
}

/* Two writers of 8 MiB each (threads), whose first names collide as those of two hosts or PID
 * namespaces could: both succeed, and the target is always one of them, whole. */
enum { BIG = 8 << 20, ROUNDS = 8 };
typedef struct writer_job {
  const char* target;
  uint8_t byte;
  pthread_barrier_t* start;
  int rc;
  char error[512];
} writer_job;

static uint64_t colliding_then_random(void* context) {
  int* calls = context;
  return (*calls)++ == 0 ? 0xC0111DEULL : dccl_random_suffix(NULL);
}

static void* write_big(void* argument) {
  writer_job* job = argument;
  uint8_t* data = malloc(BIG);
  if (data == NULL) {
    job->rc = -2;
    return NULL;
  }
  memset(data, job->byte, BIG);
  int calls = 0;
  pthread_barrier_wait(job->start);
  job->rc = dccl_atomic_write_with(job->target, data, BIG, colliding_then_random, &calls, job->error,
                                   sizeof(job->error));
  free(data);
  return NULL;
}

static void test_concurrent_writers_in_threads(void) {
  char target[128];
  path_in(target, sizeof(target), "shared.bin");
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, 2);
  int incomplete = 0;
  for (int round = 0; round < ROUNDS; round++) {
    writer_job jobs[2] = {{target, 'A', &start, -9, ""}, {target, 'B', &start, -9, ""}};
    pthread_t threads[2];
    for (int i = 0; i < 2; i++) pthread_create(&threads[i], NULL, write_big, &jobs[i]);
    for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < 2; i++) CHECK_MSG(jobs[i].rc == 0, "round %d, writer %c: %s", round, jobs[i].byte, jobs[i].error);
    incomplete += !holds_only(target, BIG, 'A') && !holds_only(target, BIG, 'B');
  }
  pthread_barrier_destroy(&start);
  CHECK_MSG(incomplete == 0, "%d of %d rounds left a mixed or partial file", incomplete, ROUNDS);
  CHECK_EQ_INT(others_in_directory("shared.bin"), 0);
  unlink(target);
}

/* The same with two processes and the default (random) names. */
static void test_concurrent_writers_in_processes(void) {
  char target[128];
  path_in(target, sizeof(target), "shared.bin");
  uint8_t* data = malloc(BIG);
  CHECK(data != NULL);
  if (data == NULL) return;
  fflush(NULL);
  pid_t children[2];
  for (int i = 0; i < 2; i++) {
    children[i] = fork();
    if (children[i] == 0) {
      memset(data, 'P' + i, BIG);
      char error[512];
      int failed = 0;
      for (int round = 0; round < ROUNDS; round++) failed += dccl_atomic_write(target, data, BIG, error, sizeof(error)) != 0;
      _exit(failed == 0 ? 0 : 1);
    }
  }
  for (int i = 0; i < 2; i++) {
    int status = -1;
    CHECK(children[i] > 0 && waitpid(children[i], &status, 0) == children[i]);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer process %d failed (status %d)", i, status);
  }
  free(data);
  CHECK(holds_only(target, BIG, 'P') || holds_only(target, BIG, 'Q'));
  CHECK_EQ_INT(others_in_directory("shared.bin"), 0);
  unlink(target);
}

/* A symbolic link's target is replaced, the link kept (a policy shared through a link stays shared), also
 * through a chain of links, relative and absolute, and where the last target does not exist yet; the
 * replaced file keeps its permissions; a link loop is refused. */
static void test_links_followed_and_permissions_kept(void) {
  char target[128], first[128], second[128], absolute[160], error[256];
  path_in(target, sizeof(target), "shared-target.bin");
  path_in(first, sizeof(first), "link-1.bin");
  path_in(second, sizeof(second), "link-2.bin");
  CHECK(write_text(target, "old") == 0);
  CHECK(chmod(target, 0600) == 0);
  CHECK(symlink("shared-target.bin", second) == 0); /* relative to the link's folder */
  snprintf(absolute, sizeof(absolute), "%s", second);
  CHECK(symlink(absolute, first) == 0); /* absolute */
  CHECK_MSG(dccl_atomic_write(first, "new", 3, error, sizeof(error)) == 0, "%s", error);
  struct stat st;
  CHECK(lstat(first, &st) == 0 && S_ISLNK(st.st_mode));
  CHECK(lstat(second, &st) == 0 && S_ISLNK(st.st_mode));
  CHECK(holds_text(target, "new"));
  CHECK(stat(target, &st) == 0 && (st.st_mode & 07777) == 0600);
  char resolved[256];
  CHECK(dccl_resolve_links(first, resolved, sizeof(resolved), error, sizeof(error)) == 0 && strcmp(resolved, target) == 0);
  unlink(target); /* dangling: the save creates the target */
  CHECK_MSG(dccl_atomic_write(first, "again", 5, error, sizeof(error)) == 0, "%s", error);
  CHECK(holds_text(target, "again"));
  CHECK(lstat(first, &st) == 0 && S_ISLNK(st.st_mode));
  unlink(first);
  unlink(second);
  unlink(target);
  char loop_a[128], loop_b[128];
  path_in(loop_a, sizeof(loop_a), "loop-a");
  path_in(loop_b, sizeof(loop_b), "loop-b");
  CHECK(symlink("loop-b", loop_a) == 0 && symlink("loop-a", loop_b) == 0);
  error[0] = '\0';
  CHECK(dccl_atomic_write(loop_a, "x", 1, error, sizeof(error)) == -1);
  CHECK_MSG(strstr(error, "symbolic links") != NULL, "reason: %s", error);
  unlink(loop_a);
  unlink(loop_b);
  CHECK_EQ_INT(others_in_directory(""), 0);
}

/* A path that is no regular file (a FIFO, a folder) is never replaced; nothing is left behind. */
static void test_non_regular_file_not_replaced(void) {
  char fifo[128], folder[128], error[256];
  path_in(fifo, sizeof(fifo), "a-fifo");
  path_in(folder, sizeof(folder), "a-folder");
  CHECK(mkfifo(fifo, 0644) == 0);
  CHECK(mkdir(folder, 0755) == 0);
  error[0] = '\0';
  CHECK(dccl_atomic_write(fifo, "x", 1, error, sizeof(error)) == -1);
  CHECK_MSG(strstr(error, "not a regular file") != NULL, "reason: %s", error);
  struct stat st;
  CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
  CHECK(dccl_atomic_write(folder, "x", 1, error, sizeof(error)) == -1);
  CHECK(lstat(folder, &st) == 0 && S_ISDIR(st.st_mode));
  unlink(fifo);
  rmdir(folder);
  CHECK_EQ_INT(others_in_directory(""), 0);
}

/* What saves killed mid-write left beside a file (its link's target) is removed once it is older than
 * any save in progress; a save in progress (a fresh temporary file), another file's temporary files,
 * names that only look alike, and folders stay. */
static void test_stale_temporaries_removed(void) {
  char target[128], link[128], stale[192], fresh[192], other[192], folder[192], link_named[192];
  path_in(target, sizeof(target), "policy.bin");
  path_in(link, sizeof(link), "shared.bin");
  CHECK(write_text(target, "the good policy") == 0);
  CHECK(symlink("policy.bin", link) == 0);
  CHECK(dccl_temporary_name(target, 0x0123456789abcdefULL, stale, sizeof(stale)) == 0);
  CHECK(dccl_temporary_name(target, 0x1111111111111111ULL, fresh, sizeof(fresh)) == 0);
  CHECK(dccl_temporary_name(target, 0x2222222222222222ULL, folder, sizeof(folder)) == 0);
  CHECK(dccl_temporary_name(link, 0x3333333333333333ULL, link_named, sizeof(link_named)) == 0);
  path_in(other, sizeof(other), "policy-other.bin.tmp.0123456789abcdef");
  const char* lookalikes[] = {"policy.bin.tmp.0123", "policy.bin.tmp.0123456789abcdef0", "policy.bin.tmp.0123456789ABCDEF",
                              "policy.bin.tmp.0123456789abcdeg", "xpolicy.bin.tmp.0123456789abcdef"};
  enum { LOOKALIKES = sizeof(lookalikes) / sizeof(lookalikes[0]) };
  char lookalike[LOOKALIKES][192];
  CHECK(write_text(stale, "half a policy") == 0 && write_text(fresh, "a save in progress") == 0);
  CHECK(write_text(other, "half of another") == 0 && write_text(link_named, "not a save's") == 0);
  CHECK(mkdir(folder, 0755) == 0);
  for (int i = 0; i < LOOKALIKES; i++) {
    path_in(lookalike[i], sizeof(lookalike[i]), lookalikes[i]);
    CHECK(write_text(lookalike[i], "x") == 0 && test_age_file(lookalike[i], 7200) == 0);
  }
  CHECK(test_age_file(stale, 7200) == 0 && test_age_file(other, 7200) == 0 && test_age_file(folder, 7200) == 0 &&
        test_age_file(link_named, 7200) == 0 && test_age_file(fresh, 60) == 0);
  char error[512] = "";
  CHECK_MSG(dccl_remove_stale_temporaries(link, DCCL_STALE_TEMPORARY_SECONDS, error, sizeof(error)) == 1, "%s", error);
  CHECK_MSG(access(stale, F_OK) != 0, "%s was left", stale);
  CHECK(holds_text(fresh, "a save in progress") && holds_text(other, "half of another"));
  CHECK(holds_text(link_named, "not a save's") && holds_text(target, "the good policy"));
  struct stat st;
  CHECK(stat(folder, &st) == 0 && S_ISDIR(st.st_mode));
  for (int i = 0; i < LOOKALIKES; i++) CHECK_MSG(holds_text(lookalike[i], "x"), "%s was removed", lookalike[i]);
  CHECK_EQ_INT(dccl_remove_stale_temporaries(target, DCCL_STALE_TEMPORARY_SECONDS, error, sizeof(error)), 0);
  CHECK_EQ_INT(dccl_remove_stale_temporaries(target, 30, error, sizeof(error)), 1); /* the fresh one, aged 60 s */
  char missing[192];
  path_in(missing, sizeof(missing), "no-such-folder/policy.bin");
  memset(error, 0, sizeof(error));
  CHECK_EQ_INT(dccl_remove_stale_temporaries(missing, DCCL_STALE_TEMPORARY_SECONDS, error, sizeof(error)), -1);
  CHECK_MSG(strstr(error, "no-such-folder") != NULL, "reason: %s", error);
  rmdir(folder);
  unlink(other);
  unlink(link_named);
  unlink(link);
  for (int i = 0; i < LOOKALIKES; i++) unlink(lookalike[i]);
  CHECK_EQ_INT(others_in_directory("policy.bin"), 0);
  unlink(target);
}

/* A folder and its missing parents are made; a file in the way is reported. */
static void test_ensure_directory(void) {
  char nested[160], parent[128], file[128], error[256];
  path_in(parent, sizeof(parent), "a");
  snprintf(nested, sizeof(nested), "%s/b/c/", parent);
  CHECK_MSG(dccl_ensure_directory(nested, error, sizeof(error)) == 0, "%s", error);
  struct stat st;
  CHECK(stat(nested, &st) == 0 && S_ISDIR(st.st_mode));
  CHECK_MSG(dccl_ensure_directory(nested, error, sizeof(error)) == 0, "again: %s", error); /* exists already */
  path_in(file, sizeof(file), "a/b/c/file");
  CHECK(write_text(file, "x") == 0);
  char below[192];
  snprintf(below, sizeof(below), "%s/d", file);
  error[0] = '\0';
  CHECK(dccl_ensure_directory(below, error, sizeof(error)) == -1 && error[0] != '\0');
  CHECK(dccl_ensure_directory(file, error, sizeof(error)) == -1);
  CHECK_MSG(strstr(error, "not a folder") != NULL, "reason: %s", error);
  test_remove_tree(parent);
}

int main(void) {
  snprintf(directory, sizeof(directory), "/tmp/dccl_atomic_test_XXXXXX");
  if (mkdtemp(directory) == NULL) return 1;
  RUN(test_temporary_name);
  RUN(test_existing_temporary_is_left_alone);
  RUN(test_concurrent_writers_in_threads);
  RUN(test_concurrent_writers_in_processes);
  RUN(test_links_followed_and_permissions_kept);
  RUN(test_non_regular_file_not_replaced);
  RUN(test_ensure_directory);
  RUN(test_stale_temporaries_removed);
  rmdir(directory);
  TEST_SUMMARY();
}
