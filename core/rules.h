/* core/rules.h: hard pins from a rule file in NCCL's example-tuner CSV format.
 *
 *   collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]]
 *
 * -1 means "any" (for min_bytes/max_bytes: no bound); channels -1 keeps NCCL's count. Lines starting
 * with '#' and blank lines are skipped; malformed lines are reported with their line number and
 * skipped. As in NCCL's example tuner the first matching rule whose (algorithm, protocol) entry is not
 * ignored in the cost table wins. Pins override every policy.
 *
 * At communicator init the rules matching its nNodes/nRanks are compiled into an index by decision-
 * table cell, so that getCollInfo only examines the few rules that can match its cell. */
#ifndef DYNAMICCL_CORE_RULES_H
#define DYNAMICCL_CORE_RULES_H

#include <stdint.h>

#include "action.h"
#include "decision_table.h"
#include "log.h"

#define DCCL_MAX_RULES 1024

typedef struct dccl_rule {
  int coll;
  uint64_t min_bytes, max_bytes; /* inclusive */
  int algo, proto;
  int channels;     /* -1: NCCL's */
  int n_nodes;      /* -1: any */
  int n_ranks;      /* -1: any */
  int num_pipe_ops; /* -1: any */
  int reg_buff;     /* -1: any */
  int line;         /* line number in the file, for messages */
} dccl_rule;

typedef struct dccl_rule_list {
  int count;
  dccl_rule rules[DCCL_MAX_RULES];
} dccl_rule_list;

/* Parses rule text. Malformed lines are reported through `logger` (with `source` and line number)
 * and skipped. Returns the number of lines rejected. */
int dccl_rules_parse(const char* text, const char* source, dccl_rule_list* out, const dccl_logger* logger);
/* Checks a decoded rule (fields in range, a shape some communicator has, a pair NCCL can run there):
 * 0, or -1 with why. The parser applies it to every line; the coordination wire to rules it receives. */
int dccl_rule_check(const dccl_rule* rule, char* why, size_t why_size);
/* Reads and parses a file. Returns -1 when the file cannot be read (reported), else lines rejected. */
int dccl_rules_load(const char* path, dccl_rule_list* out, const dccl_logger* logger);

/* Rules of one communicator, indexed by decision-table cell. */
typedef struct dccl_pin_set {
  int count;                            /* rules kept for this communicator */
  dccl_rule* rules;                     /* [count], file order */
  uint16_t* cell_rules;                 /* rule indices, grouped by cell */
  uint32_t cell_start[DCCL_TABLE_CELLS + 1];
} dccl_pin_set;

/* Keeps the rules matching n_nodes/n_ranks. Allocates; 0 on success, -1 on allocation failure. */
int dccl_pins_compile(dccl_pin_set* pins, const dccl_rule_list* rules, int n_nodes, int n_ranks);
void dccl_pins_free(dccl_pin_set* pins);

/* Does `rule` match this call? (collective, size, pipelined ops, registration) */
static inline int dccl_rule_matches(const dccl_rule* rule, int coll, uint64_t bytes, int num_pipe_ops, int reg_buff) {
  return rule->coll == coll && bytes >= rule->min_bytes && bytes <= rule->max_bytes &&
         (rule->num_pipe_ops < 0 || rule->num_pipe_ops == num_pipe_ops) &&
         (rule->reg_buff < 0 || rule->reg_buff == reg_buff);
}

/* Iteration over the candidate rules of a cell: for (i = begin; i < end; i++) pins->rules[pins->cell_rules[i]]. */
static inline void dccl_pins_candidates(const dccl_pin_set* pins, int cell, uint32_t* begin, uint32_t* end) {
  *begin = pins->cell_start[cell];
  *end = pins->cell_start[cell + 1];
}

#endif
