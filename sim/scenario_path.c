/* sim/scenario_path.c: locates scenario files in the usual folders. */
#include "scenario_path.h"

#include "../core/text_file.h"

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int readable(const char* path) { return access(path, R_OK) == 0; }

static int candidate_roots(char roots[3][1024]) {
  int n = 0;
  const char* env = getenv("DYNAMICCL_SCENARIOS");
  if (env != NULL && env[0] != '\0') snprintf(roots[n++], 1024, "%s", env);
  snprintf(roots[n++], 1024, "scenarios");
  char exe[1024];
  ssize_t length = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (length > 0) {
    exe[length] = '\0';
    snprintf(roots[n++], 1024, "%s/../scenarios", dirname(exe));
  }
  return n;
}

int dccl_scenario_path(const char* kind, const char* name, const char* extension, char* path, size_t size) {
  size_t name_length = strlen(name), ext_length = strlen(extension);
  int is_path = strchr(name, '/') != NULL ||
                (name_length > ext_length && strcmp(name + name_length - ext_length, extension) == 0);
  if (is_path) {
    if (!readable(name) || (size_t)snprintf(path, size, "%s", name) >= size) return -1;
    return 0;
  }
  char roots[3][1024];
  int n = candidate_roots(roots);
  for (int i = 0; i < n; i++) {
    if ((size_t)snprintf(path, size, "%s/%s/%s%s", roots[i], kind, name, extension) >= size) continue;
    if (readable(path)) return 0;
  }
  return -1;
}

int dccl_scenario_root(char* path, size_t size) {
  char roots[3][1024];
  int n = candidate_roots(roots);
  for (int i = 0; i < n; i++) {
    char probe[1040];
    if ((size_t)snprintf(probe, sizeof(probe), "%.1020s/profiles", roots[i]) >= sizeof(probe)) continue;
    if (access(probe, R_OK | X_OK) == 0 && (size_t)snprintf(path, size, "%s", roots[i]) < size) return 0;
  }
  return -1;
}

char* dccl_scenario_read(const char* kind, const char* name, const char* extension, char* path, size_t path_size,
                         char* error, size_t error_size) {
  if (dccl_scenario_path(kind, name, extension, path, path_size) != 0) {
    snprintf(error, error_size, "no %.*s '%s' (looked in scenarios/%s/ and as a path)", (int)strlen(kind) - 1, kind,
             name, kind);
    return NULL;
  }
  char reason[256];
  char* text = dccl_read_text_file(path, 1u << 20, reason, sizeof(reason));
  if (text == NULL) snprintf(error, error_size, "cannot read %s: %s", path, reason);
  return text;
}
