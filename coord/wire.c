/* coord/wire.c: encodes and strictly decodes coordination messages (see wire.h). */
#include "wire.h"

#include <stdio.h>
#include <string.h>

#include "../core/rng.h"

uint64_t dccl_wire_token(uint64_t comm_id, uint64_t secret) {
  return dccl_mix64(dccl_mix64(comm_id ^ 0x44796e616d49434cULL) ^ secret);
}

static uint16_t read_u16(const uint8_t* p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t read_u32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t read_u64(const uint8_t* p) { return (uint64_t)read_u32(p) | ((uint64_t)read_u32(p + 4) << 32); }

int dccl_wire_parse_header(const uint8_t* bytes, size_t available, dccl_wire_header* h, char* why, size_t why_size) {
  if (available < DCCL_WIRE_HEADER_BYTES) return 0;
  h->magic = read_u32(bytes);
  h->version = read_u16(bytes + 4);
  h->type = read_u16(bytes + 6);
  h->payload_bytes = read_u32(bytes + 8);
  h->rank = read_u32(bytes + 12);
  h->comm_id = read_u64(bytes + 16);
  h->token = read_u64(bytes + 24);
  if (h->magic != DCCL_WIRE_MAGIC) {
    snprintf(why, why_size, "not a DynamICCL message (magic %08x)", h->magic);
    return -1;
  }
  if (h->version != DCCL_WIRE_VERSION) {
    snprintf(why, why_size, "protocol version %u, this build speaks %u", h->version, DCCL_WIRE_VERSION);
    return -1;
  }
  if (h->type == 0 || h->type >= DCCL_MSG_TYPES) {
    snprintf(why, why_size, "unknown message type %u", h->type);
    return -1;
  }
  if (h->payload_bytes > DCCL_WIRE_MAX_PAYLOAD) {
    snprintf(why, why_size, "message of %u bytes exceeds the %u-byte limit", h->payload_bytes, DCCL_WIRE_MAX_PAYLOAD);
    return -1;
  }
  return 1;
}

/* ---- writer ---- */
void dccl_wire_writer_init(dccl_wire_writer* w, uint8_t* buffer, size_t capacity) {
  w->bytes = buffer;
  w->capacity = capacity;
  w->length = 0;
  w->overflow = 0;
}

static void put_bytes(dccl_wire_writer* w, const uint8_t* p, size_t n) {
  if (w->overflow || w->capacity - w->length < n) {
    w->overflow = 1;
    return;
  }
  memcpy(w->bytes + w->length, p, n);
  w->length += n;
}
void dccl_wire_put_u16(dccl_wire_writer* w, uint16_t v) {
  uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
  put_bytes(w, b, 2);
}
void dccl_wire_put_u32(dccl_wire_writer* w, uint32_t v) {
  uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  put_bytes(w, b, 4);
}
void dccl_wire_put_u64(dccl_wire_writer* w, uint64_t v) {
  dccl_wire_put_u32(w, (uint32_t)v);
  dccl_wire_put_u32(w, (uint32_t)(v >> 32));
}

size_t dccl_wire_begin(dccl_wire_writer* w, dccl_wire_type type, uint32_t rank, uint64_t comm_id, uint64_t token) {
  size_t at = w->length;
  dccl_wire_put_u32(w, DCCL_WIRE_MAGIC);
  dccl_wire_put_u16(w, DCCL_WIRE_VERSION);
  dccl_wire_put_u16(w, (uint16_t)type);
  dccl_wire_put_u32(w, 0);
  dccl_wire_put_u32(w, rank);
  dccl_wire_put_u64(w, comm_id);
  dccl_wire_put_u64(w, token);
  return at;
}

int dccl_wire_end(dccl_wire_writer* w, size_t at) {
  if (w->overflow || w->length - at < DCCL_WIRE_HEADER_BYTES) return -1;
  size_t payload = w->length - at - DCCL_WIRE_HEADER_BYTES;
  if (payload > DCCL_WIRE_MAX_PAYLOAD) return -1;
  uint8_t* p = w->bytes + at + 8;
  p[0] = (uint8_t)payload;
  p[1] = (uint8_t)(payload >> 8);
  p[2] = (uint8_t)(payload >> 16);
  p[3] = (uint8_t)(payload >> 24);
  return 0;
}

void dccl_wire_put_hello(dccl_wire_writer* w, const dccl_wire_hello* hello) { dccl_wire_put_u64(w, hello->process_key); }
void dccl_wire_put_join(dccl_wire_writer* w, const dccl_wire_join* join) {
  dccl_wire_put_u32(w, join->rank);
  dccl_wire_put_u32(w, join->n_ranks);
  dccl_wire_put_u64(w, join->epoch_calls);
  dccl_wire_put_u64(w, join->received);
}
void dccl_wire_put_ack(dccl_wire_writer* w, const dccl_wire_ack* ack) {
  dccl_wire_put_u32(w, ack->rank);
  dccl_wire_put_u64(w, ack->received);
}
void dccl_wire_put_entry_header(dccl_wire_writer* w, const dccl_wire_entry_header* e) {
  dccl_wire_put_u64(w, e->epoch);
  dccl_wire_put_u32(w, e->full);
  dccl_wire_put_u32(w, e->cells);
}
void dccl_wire_put_cell(dccl_wire_writer* w, const dccl_wire_cell* c) {
  dccl_wire_put_u16(w, c->cell);
  uint8_t mask = c->explore_mask;
  put_bytes(w, &mask, 1);
  dccl_wire_put_u32(w, c->action);
  dccl_wire_put_u32(w, c->explore);
}
void dccl_wire_put_text(dccl_wire_writer* w, const char* text) {
  size_t n = strlen(text);
  if (n > DCCL_WIRE_HOST_MAX) n = DCCL_WIRE_HOST_MAX;
  dccl_wire_put_u16(w, (uint16_t)n);
  put_bytes(w, (const uint8_t*)text, n);
}
void dccl_wire_put_address(dccl_wire_writer* w, const dccl_wire_address* a) {
  dccl_wire_put_u32(w, a->found);
  dccl_wire_put_u16(w, a->port);
  dccl_wire_put_u64(w, a->process_key);
  dccl_wire_put_text(w, a->host);
}

_Static_assert(DCCL_WIRE_RULE_BYTES == 4 + 8 + 8 + 8 * 4, "one rule's bytes on the wire");
_Static_assert(4 + DCCL_MAX_RULES * DCCL_WIRE_RULE_BYTES <= DCCL_WIRE_MAX_PAYLOAD, "every rule list fits a message");

void dccl_wire_put_rules(dccl_wire_writer* w, const dccl_rule* rules, int count) {
  dccl_wire_put_u32(w, (uint32_t)count);
  for (int i = 0; i < count; i++) {
    const dccl_rule* rule = &rules[i];
    dccl_wire_put_u32(w, (uint32_t)rule->coll);
    dccl_wire_put_u64(w, rule->min_bytes);
    dccl_wire_put_u64(w, rule->max_bytes);
    int32_t fields[8] = {rule->algo, rule->proto, rule->channels, rule->n_nodes, rule->n_ranks, rule->num_pipe_ops,
                         rule->reg_buff, rule->line};
    for (int k = 0; k < 8; k++) dccl_wire_put_u32(w, (uint32_t)fields[k]);
  }
}

/* ---- reader ---- */
void dccl_wire_reader_init(dccl_wire_reader* r, const uint8_t* payload, size_t length) {
  r->bytes = payload;
  r->length = length;
  r->offset = 0;
}
static int take(dccl_wire_reader* r, size_t n, const uint8_t** p) {
  if (r->length - r->offset < n) return -1;
  *p = r->bytes + r->offset;
  r->offset += n;
  return 0;
}
int dccl_wire_get_u16(dccl_wire_reader* r, uint16_t* v) {
  const uint8_t* p;
  if (take(r, 2, &p) != 0) return -1;
  *v = read_u16(p);
  return 0;
}
int dccl_wire_get_u32(dccl_wire_reader* r, uint32_t* v) {
  const uint8_t* p;
  if (take(r, 4, &p) != 0) return -1;
  *v = read_u32(p);
  return 0;
}
int dccl_wire_get_u64(dccl_wire_reader* r, uint64_t* v) {
  const uint8_t* p;
  if (take(r, 8, &p) != 0) return -1;
  *v = read_u64(p);
  return 0;
}

int dccl_wire_get_hello(dccl_wire_reader* r, dccl_wire_hello* hello) {
  return dccl_wire_get_u64(r, &hello->process_key) == 0 && dccl_wire_at_end(r) ? 0 : -1;
}
int dccl_wire_get_join(dccl_wire_reader* r, dccl_wire_join* j) {
  if (dccl_wire_get_u32(r, &j->rank) || dccl_wire_get_u32(r, &j->n_ranks) || dccl_wire_get_u64(r, &j->epoch_calls) ||
      dccl_wire_get_u64(r, &j->received) || !dccl_wire_at_end(r))
    return -1;
  return j->n_ranks >= 2 && j->rank >= 1 && j->rank < j->n_ranks && j->epoch_calls >= 1 ? 0 : -1;
}
int dccl_wire_get_ack(dccl_wire_reader* r, dccl_wire_ack* a) {
  return dccl_wire_get_u32(r, &a->rank) == 0 && dccl_wire_get_u64(r, &a->received) == 0 && dccl_wire_at_end(r) ? 0
                                                                                                                 : -1;
}
/* Text: a u16 length and that many bytes, no NUL inside. */
static int get_text(dccl_wire_reader* r, char* text, size_t size) {
  uint16_t n;
  const uint8_t* p;
  if (dccl_wire_get_u16(r, &n) != 0 || n > DCCL_WIRE_HOST_MAX || (size_t)n >= size || take(r, n, &p) != 0) return -1;
  if (memchr(p, '\0', n) != NULL) return -1;
  memcpy(text, p, n);
  text[n] = '\0';
  return 0;
}
int dccl_wire_get_text(dccl_wire_reader* r, char* text, size_t size) {
  return get_text(r, text, size) == 0 && dccl_wire_at_end(r) ? 0 : -1;
}
int dccl_wire_get_address(dccl_wire_reader* r, dccl_wire_address* a) {
  if (dccl_wire_get_u32(r, &a->found) || dccl_wire_get_u16(r, &a->port) || dccl_wire_get_u64(r, &a->process_key) ||
      get_text(r, a->host, sizeof(a->host)) || !dccl_wire_at_end(r) || a->found > 1)
    return -1;
  return 0;
}

int dccl_wire_get_entry_header(dccl_wire_reader* r, dccl_wire_entry_header* e) {
  if (dccl_wire_get_u64(r, &e->epoch) || dccl_wire_get_u32(r, &e->full) || dccl_wire_get_u32(r, &e->cells)) return -1;
  if (e->full > 1 || e->cells > DCCL_TABLE_CELLS) return -1;
  if ((r->length - r->offset) / DCCL_WIRE_CELL_BYTES < e->cells) return -1;
  return 0;
}
int dccl_wire_get_cell(dccl_wire_reader* r, dccl_wire_cell* c) {
  const uint8_t* p;
  if (dccl_wire_get_u16(r, &c->cell) || take(r, 1, &p) || dccl_wire_get_u32(r, &c->action) ||
      dccl_wire_get_u32(r, &c->explore))
    return -1;
  c->explore_mask = p[0];
  if (c->cell >= DCCL_TABLE_CELLS) return -1;
  if (!dccl_action_is_nccl(c->action) && !(dccl_action_well_formed(c->action) && dccl_action_resources_valid(c->action)))
    return -1;
  if (!dccl_action_is_nccl(c->explore) && !(dccl_action_well_formed(c->explore) && dccl_action_resources_valid(c->explore)))
    return -1;
  return 0;
}

int dccl_wire_get_rules(const uint8_t* payload, size_t length, dccl_rule* rules, int* count, char* why,
                        size_t why_size) {
  dccl_wire_reader r;
  dccl_wire_reader_init(&r, payload, length);
  uint32_t n;
  if (dccl_wire_get_u32(&r, &n) != 0 || n > DCCL_MAX_RULES || length - r.offset != (size_t)n * DCCL_WIRE_RULE_BYTES) {
    snprintf(why, why_size, "rules message of %zu bytes holds no whole number of at most %d rules", length,
             DCCL_MAX_RULES);
    return -1;
  }
  for (uint32_t i = 0; i < n; i++) { /* the length is checked: no read below fails */
    dccl_rule rule;
    uint32_t coll, fields[8];
    dccl_wire_get_u32(&r, &coll);
    dccl_wire_get_u64(&r, &rule.min_bytes);
    dccl_wire_get_u64(&r, &rule.max_bytes);
    for (int k = 0; k < 8; k++) dccl_wire_get_u32(&r, &fields[k]);
    rule.coll = (int32_t)coll;
    rule.algo = (int32_t)fields[0];
    rule.proto = (int32_t)fields[1];
    rule.channels = (int32_t)fields[2];
    rule.n_nodes = (int32_t)fields[3];
    rule.n_ranks = (int32_t)fields[4];
    rule.num_pipe_ops = (int32_t)fields[5];
    rule.reg_buff = (int32_t)fields[6];
    rule.line = (int32_t)fields[7];
    if (dccl_rule_check(&rule, why, why_size) != 0) return -1;
    if (rules != NULL) rules[i] = rule;
  }
  *count = (int)n;
  return 0;
}

int dccl_wire_check_decisions(const uint8_t* payload, size_t length, char* why, size_t why_size) {
  dccl_wire_reader r;
  dccl_wire_reader_init(&r, payload, length);
  uint64_t decided;
  uint32_t entries;
  if (dccl_wire_get_u64(&r, &decided) || dccl_wire_get_u32(&r, &entries)) {
    snprintf(why, why_size, "decisions message truncated");
    return -1;
  }
  if (entries > DCCL_WIRE_MAX_ENTRIES) {
    snprintf(why, why_size, "decisions message of %u entries (at most %u)", entries, DCCL_WIRE_MAX_ENTRIES);
    return -1;
  }
  uint64_t previous = 0;
  for (uint32_t i = 0; i < entries; i++) {
    dccl_wire_entry_header e;
    if (dccl_wire_get_entry_header(&r, &e) != 0) {
      snprintf(why, why_size, "decisions entry %u malformed or truncated", i);
      return -1;
    }
    if (e.epoch >= decided || (i > 0 && e.epoch <= previous)) {
      snprintf(why, why_size, "decisions entry %u for epoch %llu out of order (decided %llu)", i,
               (unsigned long long)e.epoch, (unsigned long long)decided);
      return -1;
    }
    previous = e.epoch;
    for (uint32_t k = 0; k < e.cells; k++) {
      dccl_wire_cell c;
      if (dccl_wire_get_cell(&r, &c) != 0) {
        snprintf(why, why_size, "decisions entry %u: cell %u malformed", i, k);
        return -1;
      }
    }
  }
  if (!dccl_wire_at_end(&r)) {
    snprintf(why, why_size, "decisions message has %zu bytes left over", r.length - r.offset);
    return -1;
  }
  return (int)entries;
}

int dccl_wire_parse_stream(const uint8_t* bytes, size_t size) {
  size_t at = 0;
  int messages = 0;
  while (at < size) {
    dccl_wire_header h;
    char why[160];
    if (dccl_wire_parse_header(bytes + at, size - at, &h, why, sizeof(why)) != 1) break;
    if (size - at - DCCL_WIRE_HEADER_BYTES < h.payload_bytes) break;
    const uint8_t* payload = bytes + at + DCCL_WIRE_HEADER_BYTES;
    dccl_wire_reader r;
    dccl_wire_reader_init(&r, payload, h.payload_bytes);
    union {
      dccl_wire_hello hello;
      dccl_wire_join join;
      dccl_wire_ack ack;
      dccl_wire_address address;
      char text[DCCL_WIRE_HOST_MAX + 1];
    } u;
    int valid = -1;
    uint64_t decided;
    switch (h.type) {
      case DCCL_MSG_HELLO: valid = dccl_wire_get_hello(&r, &u.hello); break;
      case DCCL_MSG_JOIN: valid = dccl_wire_get_join(&r, &u.join); break;
      case DCCL_MSG_ACK: valid = dccl_wire_get_ack(&r, &u.ack); break;
      case DCCL_MSG_DECISIONS: valid = dccl_wire_check_decisions(payload, h.payload_bytes, why, sizeof(why)) < 0 ? -1 : 0; break;
      case DCCL_MSG_BYE: valid = dccl_wire_get_u64(&r, &decided) == 0 && dccl_wire_at_end(&r) ? 0 : -1; break;
      case DCCL_MSG_LOOKUP: valid = 0; break;
      case DCCL_MSG_REGISTER:
      case DCCL_MSG_ADDRESS: valid = dccl_wire_get_address(&r, &u.address); break;
      case DCCL_MSG_REJECT: valid = dccl_wire_get_text(&r, u.text, sizeof(u.text)); break;
      case DCCL_MSG_RULES: {
        int count;
        valid = dccl_wire_get_rules(payload, h.payload_bytes, NULL, &count, why, sizeof(why));
        break;
      }
      default: break;
    }
    if (valid != 0) break;
    at += DCCL_WIRE_HEADER_BYTES + h.payload_bytes;
    messages++;
  }
  return messages;
}
