/* tests/test_settings.c: environment parsing with defaults and reported bad values; the README's
 * settings table holds exactly the rows the code documents. */
#include <unistd.h>

#include "../core/settings.h"
#include "../core/text_file.h"
#include "../core/types.h"
#include "test.h"

static void clear_environment(void) {
  for (const dccl_setting_doc* d = dccl_setting_docs; d->name != NULL; d++) unsetenv(d->name);
}

/* Loads the settings with the log captured in test_log_buffer (emptied first). */
static void load_capturing_log(dccl_settings* s) {
  test_log_reset();
  dccl_log_set_sink(test_log_capture);
  dccl_settings_load(s, NULL);
  dccl_log_set_sink(NULL);
}

static void test_defaults(void) {
  clear_environment();
  dccl_settings s;
  dccl_settings_load(&s, NULL);
  CHECK_EQ_INT(s.mode, DCCL_MODE_DEFAULT);
  CHECK_EQ_INT(s.profile, DCCL_PROFILE_AUTO);
  CHECK_EQ_INT((int)s.queue_capacity, 4096);
  CHECK_EQ_INT((int)s.event_pool, 1024);
  CHECK_EQ_INT((int)s.epoch_calls, 64);
  CHECK(s.table_file[0] == '\0' && s.rules_file[0] == '\0' && s.trace_file[0] == '\0');
}

static void test_values_and_rounding(void) {
  clear_environment();
  setenv("DYNAMICCL_MODE", "FIXED", 1);
  setenv("DYNAMICCL_TABLE_FILE", "/tmp/t.table", 1);
  setenv("DYNAMICCL_PROFILE", "off", 1);
  setenv("DYNAMICCL_QUEUE_CAPACITY", "1000", 1);
  setenv("DYNAMICCL_EPOCH_CALLS", "100", 1);
  dccl_settings s;
  dccl_settings_load(&s, NULL);
  CHECK_EQ_INT(s.mode, DCCL_MODE_FIXED);
  CHECK(strcmp(s.table_file, "/tmp/t.table") == 0);
  CHECK_EQ_INT(s.profile, DCCL_PROFILE_OFF);
  CHECK_EQ_INT((int)s.queue_capacity, 1024); /* rounded up to a power of two */
  CHECK_EQ_INT((int)s.epoch_calls, 128);
  load_capturing_log(&s); /* the rounding is said */
  CHECK(strstr(test_log_buffer, "DYNAMICCL_QUEUE_CAPACITY=1000 is rounded up to 1024") != NULL);
  CHECK(strstr(test_log_buffer, "DYNAMICCL_EPOCH_CALLS=100 is rounded up to 128") != NULL);
  CHECK(strstr(test_log_buffer, "DYNAMICCL_EVENT_POOL") == NULL); /* the default, 1024, is one */
  clear_environment();
}

static void test_bad_values_reported_and_defaulted(void) {
  clear_environment();
  setenv("DYNAMICCL_MODE", "turbo", 1);
  setenv("DYNAMICCL_PROFILE", "maybe", 1);
  setenv("DYNAMICCL_QUEUE_CAPACITY", "12abc", 1);
  setenv("DYNAMICCL_EPOCH_CALLS", "0", 1);
  setenv("DYNAMICCL_EVENT_POOL", "99999999", 1);
  dccl_settings s;
  load_capturing_log(&s);
  CHECK_EQ_INT(s.mode, DCCL_MODE_DEFAULT);
  CHECK_EQ_INT(s.profile, DCCL_PROFILE_AUTO);
  CHECK_EQ_INT((int)s.queue_capacity, 4096);
  CHECK_EQ_INT((int)s.epoch_calls, 64);
  CHECK_EQ_INT((int)s.event_pool, 1024);
  CHECK(strstr(test_log_buffer, "DYNAMICCL_MODE='turbo'") != NULL);
  CHECK(strstr(test_log_buffer, "DYNAMICCL_PROFILE='maybe'") != NULL);
  CHECK(strstr(test_log_buffer, "DYNAMICCL_QUEUE_CAPACITY='12abc'") != NULL);
  CHECK(strstr(test_log_buffer, "DYNAMICCL_EPOCH_CALLS='0'") != NULL);
  CHECK(strstr(test_log_buffer, "DYNAMICCL_EVENT_POOL='99999999'") != NULL);
  clear_environment();
  /* Numbers are plain decimals: no hexadecimal, leading space or '+', which strtod and strtoll take. */
  const char* not_plain[] = {"0x1p-3", " 0.2", "+0.2", "0X.4p0"};
  for (size_t i = 0; i < sizeof(not_plain) / sizeof(not_plain[0]); i++) {
    setenv("DYNAMICCL_EPSILON", not_plain[i], 1);
    setenv("DYNAMICCL_EPOCH_CALLS", not_plain[i][0] == '0' ? "0x40" : not_plain[i][0] == ' ' ? " 128" : "+128", 1);
    load_capturing_log(&s);
    CHECK_MSG(s.epsilon == 0.3 && s.epoch_calls == 64, "'%s' read as %g, %u", not_plain[i], s.epsilon, (unsigned)s.epoch_calls);
    CHECK_MSG(strstr(test_log_buffer, "DYNAMICCL_EPSILON=") != NULL && strstr(test_log_buffer, "DYNAMICCL_EPOCH_CALLS=") != NULL,
              "%s", test_log_buffer);
  }
  setenv("DYNAMICCL_EPSILON", ".25", 1);
  setenv("DYNAMICCL_GUARD_PCT", "2e0", 1);
  load_capturing_log(&s);
  CHECK(s.epsilon == 0.25 && s.guard_pct == 2);
  clear_environment();
}

/* Keywords are read whatever their case, as DYNAMICCL_MODE's always were (DYNAMICCL_AGENT=AutoCCL and
 * DYNAMICCL_COORD=OFF were refused, and OFF was taken for no host). */
static void test_keywords_in_any_case(void) {
  clear_environment();
  setenv("DYNAMICCL_AGENT", "AutoCCL", 1);
  setenv("DYNAMICCL_COORD", "OFF", 1);
  setenv("DYNAMICCL_TRIGGER", "CuSum", 1);
  dccl_settings s;
  load_capturing_log(&s);
  CHECK_EQ_INT(s.agent, 1);
  CHECK(strcmp(s.coordination, "off") == 0);
  CHECK_EQ_INT(s.trigger, DCCL_TRIGGER_CUSUM);
  CHECK_MSG(test_log_buffer[0] == '\0', "warned: %s", test_log_buffer);
  setenv("DYNAMICCL_AGENT", "Bandit", 1);
  setenv("DYNAMICCL_COORD", "Solo", 1);
  load_capturing_log(&s);
  CHECK_EQ_INT(s.agent, 2);
  CHECK(strcmp(s.coordination, "solo") == 0);
  clear_environment();
}

/* NCCL's own buffer variables (they bound the chunk sizes worth trying): read when valid, NCCL's
 * default (0) when unset, -2 or malformed, with a warning for the malformed. */
static void test_nccl_buffer_sizes(void) {
  clear_environment();
  setenv("NCCL_BUFFSIZE", "8388608", 1);
  setenv("NCCL_LL_BUFFSIZE", "-2", 1);
  setenv("NCCL_LL128_BUFFSIZE", "lots", 1);
  dccl_settings s;
  load_capturing_log(&s);
  CHECK(s.nccl_buffer_bytes[2] == 8388608);
  CHECK(s.nccl_buffer_bytes[0] == 0 && s.nccl_buffer_bytes[1] == 0);
  CHECK(strstr(test_log_buffer, "NCCL_LL128_BUFFSIZE='lots'") != NULL);
  CHECK(strstr(test_log_buffer, "NCCL_LL_BUFFSIZE") == NULL);
  unsetenv("NCCL_BUFFSIZE");
  unsetenv("NCCL_LL_BUFFSIZE");
  unsetenv("NCCL_LL128_BUFFSIZE");
  dccl_settings_load(&s, NULL);
  CHECK(s.nccl_buffer_bytes[0] == 0 && s.nccl_buffer_bytes[1] == 0 && s.nccl_buffer_bytes[2] == 0);
  clear_environment();
}

/* NCCL_ALGO and NCCL_PROTO as NCCL 2.21's parseList reads them (for tuner v2): names in any case, a
 * leading '^' to exclude, unknown names ignored; LL128 off by default, on where a list enables it. */
static void test_nccl_algo_and_proto(void) {
  static const char* const protos[] = {"LL", "LL128", "Simple"};
  CHECK_EQ_INT((int)dccl_nccl_enabled_list("simple,LL", protos, 3, 7), 5);
  CHECK_EQ_INT((int)dccl_nccl_enabled_list("^ll128,unknown", protos, 3, 2), 5);
  CHECK_EQ_INT((int)dccl_nccl_enabled_list("", protos, 3, 2), 2);
  CHECK_EQ_INT((int)dccl_nccl_enabled_list(NULL, protos, 3, 2), 2);
  CHECK_EQ_INT((int)dccl_nccl_enabled_list("LL,,Simple,", protos, 3, 0), 5);
  clear_environment();
  dccl_settings s;
  dccl_settings_load(&s, NULL);
  CHECK_EQ_INT((int)s.nccl_protos_enabled, 1 << DCCL_PROTO_LL | 1 << DCCL_PROTO_SIMPLE);
  CHECK_EQ_INT((int)s.nccl_algos_enabled, 63);
  setenv("NCCL_ALGO", "^Tree,NVLSTree", 1);
  setenv("NCCL_PROTO", "^LL", 1);
  dccl_settings_load(&s, NULL);
  CHECK_EQ_INT((int)s.nccl_algos_enabled, 63 & ~(1 << DCCL_ALGO_TREE) & ~(1 << DCCL_ALGO_NVLS_TREE));
  CHECK_EQ_INT((int)s.nccl_protos_enabled, 1 << DCCL_PROTO_LL128 | 1 << DCCL_PROTO_SIMPLE);
  unsetenv("NCCL_ALGO");
  unsetenv("NCCL_PROTO");
  clear_environment();
}

/* Under torchrun the registry is at MASTER_ADDR:(MASTER_PORT+1). A MASTER_PORT that is not a whole
 * number, or leaves no port after it (65535), is reported, and no registry is derived. */
static void test_registry_from_master_port(void) {
  clear_environment();
  setenv("MASTER_ADDR", "node0", 1);
  setenv("MASTER_PORT", "29500", 1);
  dccl_settings s;
  load_capturing_log(&s);
  CHECK(strcmp(s.coord_registry, "node0:29501") == 0);
  CHECK_MSG(test_log_buffer[0] == '\0', "unexpected log: %s", test_log_buffer);
  setenv("MASTER_PORT", "65534", 1);
  load_capturing_log(&s);
  CHECK(strcmp(s.coord_registry, "node0:65535") == 0);
  const char* bad_ports[] = {"29500x", "", "-1", "0", "65535", "70000", "99999999999999999999"};
  for (size_t i = 0; i < sizeof(bad_ports) / sizeof(bad_ports[0]); i++) {
    setenv("MASTER_PORT", bad_ports[i], 1);
    load_capturing_log(&s);
    char reported[64];
    snprintf(reported, sizeof(reported), "MASTER_PORT='%s'", bad_ports[i]);
    CHECK_MSG(s.coord_registry[0] == '\0', "MASTER_PORT='%s' gave registry %s", bad_ports[i], s.coord_registry);
    CHECK_MSG(strstr(test_log_buffer, reported) != NULL &&
                strstr(test_log_buffer, "no registry is derived from MASTER_ADDR/MASTER_PORT") != NULL,
              "MASTER_PORT='%s' not reported: %s", bad_ports[i], test_log_buffer);
  }
  static char long_address[300];
  memset(long_address, 'a', sizeof(long_address) - 1);
  setenv("MASTER_ADDR", long_address, 1);
  setenv("MASTER_PORT", "29500", 1);
  load_capturing_log(&s);
  CHECK(s.coord_registry[0] == '\0');
  CHECK(strstr(test_log_buffer, "MASTER_ADDR is longer than 255 characters") != NULL);
  unsetenv("MASTER_ADDR");
  unsetenv("MASTER_PORT");
}

/* Does an INFO line (no NCCL logger, no sink) reach stderr? */
static int info_line_reaches_stderr(void) {
  FILE* captured = tmpfile();
  if (captured == NULL) return -1;
  fflush(stderr);
  int saved_stderr = dup(STDERR_FILENO);
  dup2(fileno(captured), STDERR_FILENO);
  DCCL_INFO(NULL, "stderr probe");
  fflush(stderr);
  dup2(saved_stderr, STDERR_FILENO);
  close(saved_stderr);
  rewind(captured);
  char text[256];
  size_t n = fread(text, 1, sizeof(text) - 1, captured);
  text[n] = '\0';
  fclose(captured);
  return strstr(text, "stderr probe") != NULL;
}

/* DYNAMICCL_LOG_STDERR is read whole: 1 sends log lines to stderr, 0 does not, and anything else
 * ("10", "1 ", "yes") is reported when the settings are read and counts as 0. */
static void test_log_stderr_read_whole(void) {
  clear_environment();
  CHECK_EQ_INT(info_line_reaches_stderr(), 0);
  setenv("DYNAMICCL_LOG_STDERR", "1", 1);
  CHECK_EQ_INT(info_line_reaches_stderr(), 1);
  dccl_settings s;
  load_capturing_log(&s);
  CHECK_MSG(test_log_buffer[0] == '\0', "unexpected log: %s", test_log_buffer);
  setenv("DYNAMICCL_LOG_STDERR", "0", 1);
  CHECK_EQ_INT(info_line_reaches_stderr(), 0);
  const char* bad_values[] = {"10", "1 ", "yes", "01"};
  for (size_t i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]); i++) {
    setenv("DYNAMICCL_LOG_STDERR", bad_values[i], 1);
    CHECK_MSG(info_line_reaches_stderr() == 0, "DYNAMICCL_LOG_STDERR='%s' sent INFO lines to stderr", bad_values[i]);
    load_capturing_log(&s);
    char reported[64];
    snprintf(reported, sizeof(reported), "DYNAMICCL_LOG_STDERR='%s' is not 0 or 1", bad_values[i]);
    CHECK_MSG(strstr(test_log_buffer, reported) != NULL, "not reported: %s", test_log_buffer);
  }
  clear_environment();
}

/* DYNAMICCL_SEED=0 is a seed like any other; unset or malformed (reported), the seed is derived. */
static void test_seed_zero_is_explicit(void) {
  clear_environment();
  dccl_settings s;
  dccl_settings_load(&s, NULL);
  CHECK_EQ_INT(s.seed_given, 0);
  setenv("DYNAMICCL_SEED", "0", 1);
  dccl_settings_load(&s, NULL);
  CHECK_EQ_INT(s.seed_given, 1);
  CHECK(s.seed == 0);
  setenv("DYNAMICCL_SEED", "9223372036854775807", 1);
  dccl_settings_load(&s, NULL);
  CHECK(s.seed_given == 1 && s.seed == 9223372036854775807ULL);
  const char* bad_seeds[] = {"-1", "7x", "9223372036854775808"};
  for (size_t i = 0; i < sizeof(bad_seeds) / sizeof(bad_seeds[0]); i++) {
    setenv("DYNAMICCL_SEED", bad_seeds[i], 1);
    load_capturing_log(&s);
    CHECK_MSG(s.seed_given == 0, "DYNAMICCL_SEED='%s' taken as a seed", bad_seeds[i]);
    char reported[96];
    snprintf(reported, sizeof(reported), "DYNAMICCL_SEED='%s' is not an integer", bad_seeds[i]);
    CHECK_MSG(strstr(test_log_buffer, reported) != NULL && strstr(test_log_buffer, "the seed is derived") != NULL,
              "not reported: %s", test_log_buffer);
  }
  clear_environment();
}

/* The exploration floor cannot exceed the initial rate: DYNAMICCL_EPSILON=0 means no exploration
 * (beyond races), not the default floor's 1%; a floor above the rate is reported and lowered to it. */
static void test_epsilon_floor_at_most_epsilon(void) {
  clear_environment();
  setenv("DYNAMICCL_EPSILON", "0", 1);
  dccl_settings s;
  load_capturing_log(&s);
  CHECK(s.epsilon == 0 && s.epsilon_min == 0);
  CHECK(strstr(test_log_buffer, "DYNAMICCL_EPSILON_MIN=0.01 is above DYNAMICCL_EPSILON=0") != NULL);
  setenv("DYNAMICCL_EPSILON", "0.2", 1);
  setenv("DYNAMICCL_EPSILON_MIN", "0.5", 1);
  load_capturing_log(&s);
  CHECK(s.epsilon == 0.2 && s.epsilon_min == 0.2);
  CHECK(strstr(test_log_buffer, "DYNAMICCL_EPSILON_MIN=0.5 is above DYNAMICCL_EPSILON=0.2") != NULL);
  setenv("DYNAMICCL_EPSILON_MIN", "0.2", 1);
  load_capturing_log(&s);
  CHECK(s.epsilon == 0.2 && s.epsilon_min == 0.2);
  CHECK_MSG(test_log_buffer[0] == '\0', "unexpected log: %s", test_log_buffer);
  clear_environment();
}

static void test_overlong_path_ignored(void) {
  clear_environment();
  static char long_path[DCCL_PATH_MAX + 10];
  memset(long_path, 'a', sizeof(long_path) - 1);
  long_path[sizeof(long_path) - 1] = '\0';
  setenv("DYNAMICCL_RULES_FILE", long_path, 1);
  dccl_settings s;
  load_capturing_log(&s);
  CHECK(s.rules_file[0] == '\0');
  clear_environment();
}

/* Every documented variable has its row in the README's table, with the same default and meaning, and
 * the table names no other. */
static void test_readme_documents_every_setting(void) {
  char error[256];
  char* readme = dccl_read_text_file(DYNAMICCL_SOURCE_DIR "/README.md", 1 << 20, error, sizeof(error));
  CHECK_MSG(readme != NULL, "README.md: %s", error);
  if (readme == NULL) return;
  int documented = 0;
  for (const dccl_setting_doc* d = dccl_setting_docs; d->name != NULL; d++) {
    char row[2048];
    snprintf(row, sizeof(row), "| `%s` | %s | %s |\n", d->name, d->default_value, d->meaning);
    CHECK_MSG(strstr(readme, row) != NULL, "README lacks the settings row for %s, or it differs from core/settings.c's:\n%s",
              d->name, row);
    documented++;
  }
  int rows = 0;
  for (const char* p = readme; (p = strstr(p, "| `DYNAMICCL_")) != NULL; p++) rows++;
  CHECK_EQ_INT(rows, documented);
  free(readme);
}

/* Registry addresses: host:port, or [IPv6 address]:port; an IPv6 address without brackets is
 * ambiguous and refused. */
static void test_host_port_addresses(void) {
  char host[64];
  uint16_t port = 0;
  CHECK(dccl_parse_host_port("node-1:29501", host, sizeof(host), &port) == 0 && strcmp(host, "node-1") == 0 && port == 29501);
  CHECK(dccl_parse_host_port("10.0.0.1:80", host, sizeof(host), &port) == 0 && strcmp(host, "10.0.0.1") == 0 && port == 80);
  CHECK(dccl_parse_host_port("[::1]:29501", host, sizeof(host), &port) == 0 && strcmp(host, "::1") == 0 && port == 29501);
  CHECK(dccl_parse_host_port("[fe80::1%eth0]:7", host, sizeof(host), &port) == 0 && strcmp(host, "fe80::1%eth0") == 0);
  const char* refused[] = {"::1:29501", "[::1]", "[::1]29501", "[]:80", ":80", "host", "host:", "host:0", "host:65536",
                           "host:-1", "host:+80", "host:80x", "[::1:80", "[[]:2", "[a[b]:80", "a[b:80", "a]b:80",
                           "node 1:80", " node1:80", "node1 :80", "node\t1:80", "node\n1:80", "[::1 ]:80", NULL};
  for (int i = 0; refused[i] != NULL; i++)
    CHECK_MSG(dccl_parse_host_port(refused[i], host, sizeof(host), &port) != 0, "'%s' accepted", refused[i]);
  CHECK(dccl_parse_host_port("a-rather-long-host-name:80", host, 8, &port) != 0); /* does not fit */
  /* Written back as it is read: brackets around a host with a colon only. */
  char address[80];
  dccl_format_host_port(address, sizeof(address), "node-1", 29501);
  CHECK(strcmp(address, "node-1:29501") == 0);
  dccl_format_host_port(address, sizeof(address), "fe80::1%eth0", 7);
  CHECK(strcmp(address, "[fe80::1%eth0]:7") == 0);
  CHECK(dccl_parse_host_port(address, host, sizeof(host), &port) == 0 && strcmp(host, "fe80::1%eth0") == 0 && port == 7);
}

/* DYNAMICCL_COORD is kept as the service reads it: a port written with leading zeros made an address
 * longer than the settings hold, and the cut text named another port (here 2 instead of 29500). */
static void test_registry_port_with_leading_zeros(void) {
  clear_environment();
  unsetenv("MASTER_ADDR");
  unsetenv("MASTER_PORT");
  dccl_settings s;
  char address[400], host[DCCL_HOST_MAX + 1], expected[300];
  uint16_t port = 0;
  memset(address, 'h', 250);
  snprintf(address + 250, sizeof(address) - 250, ":%040d", 29500); /* 291 characters */
  setenv("DYNAMICCL_COORD", address, 1);
  load_capturing_log(&s);
  CHECK(dccl_parse_host_port(s.coord_registry, host, sizeof(host), &port) == 0);
  CHECK_MSG(port == 29500, "the registry '%s' has port %u", s.coord_registry, (unsigned)port);
  snprintf(expected, sizeof(expected), "%.250s:29500", address);
  CHECK(strcmp(s.coord_registry, expected) == 0);
  setenv("DYNAMICCL_COORD", "[::1]:007", 1);
  load_capturing_log(&s);
  CHECK(strcmp(s.coord_registry, "[::1]:7") == 0);
  unsetenv("DYNAMICCL_COORD");
  clear_environment();
}

/* DYNAMICCL_COORD takes [IPv6 address]:port (and refuses the ambiguous form with a warning); an IPv6
 * MASTER_ADDR, with brackets or without, makes [address]:(MASTER_PORT+1). */
static void test_ipv6_registry_settings(void) {
  clear_environment();
  unsetenv("MASTER_ADDR");
  unsetenv("MASTER_PORT");
  dccl_settings s;
  setenv("DYNAMICCL_COORD", "[::1]:29500", 1);
  load_capturing_log(&s);
  CHECK(strcmp(s.coord_registry, "[::1]:29500") == 0 && test_log_buffer[0] == '\0');
  setenv("DYNAMICCL_COORD", "fd00::2:29500", 1);
  load_capturing_log(&s);
  CHECK(s.coord_registry[0] == '\0' && strcmp(s.coordination, "auto") == 0);
  CHECK(strstr(test_log_buffer, "[IPv6 address]:port") != NULL);
  unsetenv("DYNAMICCL_COORD");
  setenv("MASTER_PORT", "29500", 1);
  const char* addresses[][2] = {{"::1", "[::1]:29501"}, {"[fd00::2]", "[fd00::2]:29501"}, {"10.0.0.1", "10.0.0.1:29501"},
                                {"node-1", "node-1:29501"}};
  for (int i = 0; i < 4; i++) {
    setenv("MASTER_ADDR", addresses[i][0], 1);
    dccl_settings_load(&s, NULL);
    CHECK_MSG(strcmp(s.coord_registry, addresses[i][1]) == 0, "MASTER_ADDR=%s: '%s'", addresses[i][0], s.coord_registry);
  }
  unsetenv("MASTER_ADDR");
  unsetenv("MASTER_PORT");
  clear_environment();
}

/* The settings refuse what the coordination service could not parse: a host longer than DCCL_HOST_MAX in
 * DYNAMICCL_COORD (it fitted the settings' own buffer), and a MASTER_ADDR making a malformed address. */
static void test_registry_address_fits_the_service(void) {
  clear_environment();
  unsetenv("MASTER_ADDR");
  unsetenv("MASTER_PORT");
  dccl_settings s;
  char address[DCCL_HOST_MAX + 16], host[DCCL_HOST_MAX + 1];
  uint16_t port;
  memset(address, 'h', DCCL_HOST_MAX + 1);
  snprintf(address + DCCL_HOST_MAX + 1, sizeof(address) - DCCL_HOST_MAX - 1, ":80");
  CHECK(strlen(address) < sizeof(s.coord_registry));
  setenv("DYNAMICCL_COORD", address, 1);
  load_capturing_log(&s);
  CHECK_MSG(s.coord_registry[0] == '\0', "a %d-character host accepted", DCCL_HOST_MAX + 1);
  address[DCCL_HOST_MAX] = ':'; /* DCCL_HOST_MAX characters: accepted, and parsed as the service does */
  snprintf(address + DCCL_HOST_MAX + 1, sizeof(address) - DCCL_HOST_MAX - 1, "80");
  setenv("DYNAMICCL_COORD", address, 1);
  load_capturing_log(&s);
  CHECK(strcmp(s.coord_registry, address) == 0);
  CHECK(dccl_parse_host_port(s.coord_registry, host, sizeof(host), &port) == 0 && port == 80);
  unsetenv("DYNAMICCL_COORD");
  setenv("MASTER_ADDR", "[::1", 1);
  setenv("MASTER_PORT", "29500", 1);
  load_capturing_log(&s);
  CHECK_MSG(s.coord_registry[0] == '\0', "MASTER_ADDR=[::1 made '%s'", s.coord_registry);
  CHECK(strstr(test_log_buffer, "makes no registry address") != NULL);
  unsetenv("MASTER_ADDR");
  unsetenv("MASTER_PORT");
  clear_environment();
}

int main(void) {
  RUN(test_defaults);
  RUN(test_values_and_rounding);
  RUN(test_bad_values_reported_and_defaulted);
  RUN(test_nccl_buffer_sizes);
  RUN(test_nccl_algo_and_proto);
  RUN(test_registry_from_master_port);
  RUN(test_log_stderr_read_whole);
  RUN(test_seed_zero_is_explicit);
  RUN(test_keywords_in_any_case);
  RUN(test_epsilon_floor_at_most_epsilon);
  RUN(test_overlong_path_ignored);
  RUN(test_host_port_addresses);
  RUN(test_ipv6_registry_settings);
  RUN(test_registry_address_fits_the_service);
  RUN(test_registry_port_with_leading_zeros);
  RUN(test_readme_documents_every_setting);
  TEST_SUMMARY();
}
