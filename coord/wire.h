/* coord/wire.h: the messages of the coordination protocol, their encoding and a strict parser.
 *
 * Every message is a 32-byte header followed by a payload of at most DCCL_WIRE_MAX_PAYLOAD bytes,
 * all integers little-endian:
 *   magic u32 "DCCO" | version u16 | type u16 | payload bytes u32 | rank u32 | comm id u64 | token u64
 * The token is derived from the communicator id (and DYNAMICCL_COORD_SECRET when set): a peer that
 * does not know the communicator cannot speak for it. A header with a wrong magic, version, type,
 * length or token, or a payload that does not decode exactly, is rejected; the connection that
 * sent it is closed and nothing it sent is used. */
#ifndef DYNAMICCL_COORD_WIRE_H
#define DYNAMICCL_COORD_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "../core/decision_table.h"
#include "../core/rules.h"

#define DCCL_WIRE_MAGIC 0x4F434344u /* "DCCO" */
#define DCCL_WIRE_VERSION 2 /* 2: RULES */
#define DCCL_WIRE_HEADER_BYTES 32
#define DCCL_WIRE_MAX_PAYLOAD (256u * 1024u)
#define DCCL_WIRE_HOST_MAX 255

typedef enum {
  DCCL_MSG_HELLO = 1,     /* either side, first on a connection: the sender's process key */
  DCCL_MSG_JOIN = 2,      /* worker -> leader: rank, shape, epochs already received */
  DCCL_MSG_DECISIONS = 3, /* leader -> worker: decided epochs and the tables that changed */
  DCCL_MSG_ACK = 4,       /* worker -> leader: epochs received (the leader may forget older ones) */
  DCCL_MSG_BYE = 5,       /* leader -> worker: the leader left; nothing is decided after `decided` */
  DCCL_MSG_REGISTER = 6,  /* leader -> registry: where the leader of a communicator listens (found 0: it left) */
  DCCL_MSG_LOOKUP = 7,    /* worker -> registry: where is the leader of this communicator? */
  DCCL_MSG_ADDRESS = 8,   /* registry -> worker: the answer (found or not yet) */
  DCCL_MSG_REJECT = 9,    /* either side: why a request was refused (then the connection closes) */
  DCCL_MSG_RULES = 10,    /* leader -> worker, before its first table: the leader's rule pins */
  DCCL_MSG_TYPES = 11
} dccl_wire_type;

typedef struct dccl_wire_header {
  uint32_t magic;
  uint16_t version, type;
  uint32_t payload_bytes, rank; /* rank: the worker rank a message is from or for (0: none) */
  uint64_t comm_id, token;
} dccl_wire_header;

/* The token for a communicator id. */
uint64_t dccl_wire_token(uint64_t comm_id, uint64_t secret);

/* Parses a header from the first bytes of a stream. Returns 1 when valid, 0 when fewer than
 * DCCL_WIRE_HEADER_BYTES are available, -1 when invalid (why says what). */
int dccl_wire_parse_header(const uint8_t* bytes, size_t available, dccl_wire_header* header, char* why,
                           size_t why_size);

/* ---- payloads ---- */
typedef struct dccl_wire_hello {
  uint64_t process_key;
} dccl_wire_hello;

typedef struct dccl_wire_join {
  uint32_t rank, n_ranks;
  uint64_t epoch_calls;
  uint64_t received; /* epochs already received (0: none; the leader sends the table of epoch 0 on) */
} dccl_wire_join;

typedef struct dccl_wire_ack {
  uint32_t rank;
  uint64_t received;
} dccl_wire_ack;

/* One changed cell of a table. */
typedef struct dccl_wire_cell {
  uint16_t cell;
  uint8_t explore_mask;
  uint32_t action, explore;
} dccl_wire_cell;

/* DECISIONS: `decided` epochs are decided; `entries` tables changed, in epoch order. An entry
 * either lists the cells that differ from the previous epoch's table, or (full) the cells that
 * differ from the all-NCCL table. */
typedef struct dccl_wire_entry_header {
  uint64_t epoch;
  uint32_t full, cells;
} dccl_wire_entry_header;

typedef struct dccl_wire_address {
  uint32_t found;
  uint16_t port;
  uint64_t process_key;
  char host[DCCL_WIRE_HOST_MAX + 1]; /* a numeric IPv4 or IPv6 address, without brackets (a name would do) */
} dccl_wire_address;

/* ---- writing: a growable-free byte sink over a caller's buffer ---- */
typedef struct dccl_wire_writer {
  uint8_t* bytes;
  size_t capacity, length;
  int overflow; /* set when a write did not fit; the message must not be sent */
} dccl_wire_writer;

void dccl_wire_writer_init(dccl_wire_writer* w, uint8_t* buffer, size_t capacity);
void dccl_wire_put_u16(dccl_wire_writer* w, uint16_t v);
void dccl_wire_put_u32(dccl_wire_writer* w, uint32_t v);
void dccl_wire_put_u64(dccl_wire_writer* w, uint64_t v);
/* Starts a message (header with a zero length); dccl_wire_end fills the length. Returns the offset
 * of the message in the writer. */
size_t dccl_wire_begin(dccl_wire_writer* w, dccl_wire_type type, uint32_t rank, uint64_t comm_id, uint64_t token);
/* Returns 0, or -1 if the message overflowed the buffer or DCCL_WIRE_MAX_PAYLOAD. */
int dccl_wire_end(dccl_wire_writer* w, size_t message_offset);

void dccl_wire_put_hello(dccl_wire_writer* w, const dccl_wire_hello* hello);
void dccl_wire_put_join(dccl_wire_writer* w, const dccl_wire_join* join);
void dccl_wire_put_ack(dccl_wire_writer* w, const dccl_wire_ack* ack);
void dccl_wire_put_entry_header(dccl_wire_writer* w, const dccl_wire_entry_header* entry);
void dccl_wire_put_cell(dccl_wire_writer* w, const dccl_wire_cell* cell);
void dccl_wire_put_address(dccl_wire_writer* w, const dccl_wire_address* address);
/* RULES: a u32 count, then each rule's fields (collective, min and max bytes, algorithm, protocol,
 * channels, nodes, ranks, pipelined ops, registration, line), -1 written as 0xFFFFFFFF. */
void dccl_wire_put_rules(dccl_wire_writer* w, const dccl_rule* rules, int count);
/* REJECT and REGISTER carry text / an address; BYE and DECISIONS start with `decided`. */
void dccl_wire_put_text(dccl_wire_writer* w, const char* text);

/* ---- reading: bounds-checked, each returns -1 past the end ---- */
typedef struct dccl_wire_reader {
  const uint8_t* bytes;
  size_t length, offset;
} dccl_wire_reader;

void dccl_wire_reader_init(dccl_wire_reader* r, const uint8_t* payload, size_t length);
int dccl_wire_get_u16(dccl_wire_reader* r, uint16_t* v);
int dccl_wire_get_u32(dccl_wire_reader* r, uint32_t* v);
int dccl_wire_get_u64(dccl_wire_reader* r, uint64_t* v);
/* Exactly the payload of one message type, nothing left over; -1 on any malformation. */
int dccl_wire_get_hello(dccl_wire_reader* r, dccl_wire_hello* hello);
int dccl_wire_get_join(dccl_wire_reader* r, dccl_wire_join* join);
int dccl_wire_get_ack(dccl_wire_reader* r, dccl_wire_ack* ack);
int dccl_wire_get_address(dccl_wire_reader* r, dccl_wire_address* address);
int dccl_wire_get_text(dccl_wire_reader* r, char* text, size_t size);
/* DECISIONS, entry by entry: the header of the next entry (checks that its cells fit), then its cells
 * (each checked: cell index in range, well-formed actions). */
int dccl_wire_get_entry_header(dccl_wire_reader* r, dccl_wire_entry_header* entry);
int dccl_wire_get_cell(dccl_wire_reader* r, dccl_wire_cell* cell);
/* A whole RULES payload: the count (at most DCCL_MAX_RULES, and exactly that many rules' bytes), then
 * each rule, checked as a rule file's lines are (dccl_rule_check). The rules go to `rules` (NULL: only
 * checked), their number to *count; -1 with why on any malformation. */
int dccl_wire_get_rules(const uint8_t* payload, size_t length, dccl_rule* rules, int* count, char* why,
                        size_t why_size);
static inline int dccl_wire_at_end(const dccl_wire_reader* r) { return r->offset == r->length; }

/* Validates a whole DECISIONS payload without applying it: at most DCCL_WIRE_MAX_ENTRIES entries, in
 * increasing epoch order below `decided`, cells in range, nothing left over. Returns the number of
 * entries, or -1 (why says). */
int dccl_wire_check_decisions(const uint8_t* payload, size_t length, char* why, size_t why_size);

/* Parses a byte stream as consecutive messages, decoding every payload fully, until the first
 * invalid or incomplete one; returns the number of valid messages. The fuzz target
 * (tests/fuzz_wire.c) and the parser tests drive it. */
int dccl_wire_parse_stream(const uint8_t* bytes, size_t size);

/* Entries in one DECISIONS message: a worker's inbox takes a message whole, so it must hold this many
 * at once (a message it could never take would stall its connection for good). */
#define DCCL_WIRE_MAX_ENTRIES 4096u
#define DCCL_WIRE_CELL_BYTES 11
#define DCCL_WIRE_ENTRY_BYTES 16
#define DCCL_WIRE_RULE_BYTES 52

#endif
