/* persist/table_text.h: the decision-table text format (the `fixed` policy's file).
 *
 *   # comment
 *   collective,min_bytes,max_bytes,action[,numPipeOps[,regBuff]]
 *   allreduce,0,65535,tree/ll
 *   allreduce,65536,-1,ring/simple/ch=16/chunk=512K
 *
 * Byte bounds are inclusive, -1 as max means no bound. The action is "nccl" or
 * algorithm/protocol[/ch=N][/chunk=SIZE]. numPipeOps and regBuff (-1 = any) select the table's
 * pipelined-ops bucket and registration flag. An entry covers every size bin its range touches
 * (bins are powers of two); later lines overwrite earlier ones. Cells no line covers keep NCCL's
 * choice. Lines that are malformed or name an action this communicator can never run are reported
 * with their line number and skipped. */
#ifndef DYNAMICCL_PERSIST_TABLE_TEXT_H
#define DYNAMICCL_PERSIST_TABLE_TEXT_H

#include <stddef.h>

#include "../core/decision_table.h"
#include "../core/log.h"

/* Parses into `table` (which the caller initialises). Returns the number of lines rejected. */
int dccl_table_text_parse(const char* text, const char* source, int n_ranks, int n_nodes, dccl_table* table,
                          const dccl_logger* logger);
/* Reads a file; -1 when unreadable (reported), else the number of lines rejected. */
int dccl_table_text_load(const char* path, int n_ranks, int n_nodes, dccl_table* table, const dccl_logger* logger);

/* Text for a table, with runs of equal cells merged into byte ranges; malloc'd, NULL on failure. */
char* dccl_table_text_format(const dccl_table* table);
/* Writes the text atomically; 0 on success, -1 with a reason in `error`. */
int dccl_table_text_save(const char* path, const dccl_table* table, char* error, size_t error_size);

#endif
