/* sim/scenario_path.h: finds scenario files (profiles, workloads, conditions) by name. */
#ifndef DYNAMICCL_SIM_SCENARIO_PATH_H
#define DYNAMICCL_SIM_SCENARIO_PATH_H

#include <stddef.h>

/* Resolves `name` to a readable file. A name containing '/' or ending in `extension` is a path;
 * otherwise <dir>/<kind>/<name><extension> is tried for dir in $DYNAMICCL_SCENARIOS, ./scenarios,
 * and <folder of the running program>/../scenarios. Returns 0 and the path, or -1. */
int dccl_scenario_path(const char* kind, const char* name, const char* extension, char* path, size_t size);

/* Finds a scenario file (as dccl_scenario_path) and reads it: malloc'd text, or NULL with a reason.
 * `path` receives the file's path, for messages. */
char* dccl_scenario_read(const char* kind, const char* name, const char* extension, char* path, size_t path_size,
                         char* error, size_t error_size);

/* The scenarios folder found by the same search (for listing). Returns 0 or -1. */
int dccl_scenario_root(char* path, size_t size);

#endif
