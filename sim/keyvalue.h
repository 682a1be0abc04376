/* sim/keyvalue.h: helpers shared by the simulator's text formats: line splitting, trimming, and
 * typed value parsing with readable errors. */
#ifndef DYNAMICCL_SIM_KEYVALUE_H
#define DYNAMICCL_SIM_KEYVALUE_H

#include <stddef.h>

/* Like dccl_next_line (core/text_file.h), but also strips a comment starting at '#'. */
int dccl_next_scenario_line(const char** cursor, char* line, size_t size, int* line_number, int* too_long);

/* Splits "key = value"; returns 0 when the line has that shape. Both are trimmed in place. */
int dccl_split_key_value(char* line, char** key, char** value);

/* The one key of a workload or conditions file: a line that starts with "name" and holds '=' (no
 * collective or event does) is a key line. Returns 1 for "name = value", its value copied into `name`
 * (dccl_copy_text), 0 for any other kind of line (left untouched), -1 for a key line with another key
 * ("names = x": a typo, not the name) or a name that does not fit, which `why` tells. */
int dccl_name_line(char* line, char* name, size_t name_size, char* why, size_t why_size);

/* Copies a name or description into its field; a value that does not fit is refused (`why` says so)
 * rather than cut, which would run the file under a name it does not hold. */
int dccl_copy_text(char* field, size_t field_size, const char* value, const char* what, char* why, size_t why_size);

/* The words a line of a workload or conditions file may hold. */
#define DCCL_LINE_MAX_WORDS 16

/* Whitespace tokenizer: splits `line` in place into at most `max` tokens; returns the count, or -1
 * when the line has more than `max` tokens. */
int dccl_tokenize(char* line, char** tokens, int max);

int dccl_parse_double(const char* text, double* out);
int dccl_parse_int(const char* text, long long low, long long high, long long* out);
/* The longest duration dccl_parse_duration_us accepts: an hour, in microseconds. */
#define DCCL_MAX_DURATION_US 3.6e9

/* Durations: "10us", "2.5ms", "1s", or plain microseconds; at most DCCL_MAX_DURATION_US. */
int dccl_parse_duration_us(const char* text, double* out);

#endif
