/* coord/service.c: the per-process coordination service: one thread, its sockets, and the leader and
 * worker sessions of every coordinated communicator in the process (see coordinator.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../core/clock.h"
#include "../core/grow.h"
#include "../core/rng.h"
#include "../core/settings.h"
#include "coordinator.h"
#include "history.h"
#include "transport.h"
#include "wire.h"

#define MAX_REGISTRY 1024
/* A connection's buffers start at BUFFER_INITIAL bytes and double on demand up to these caps: the input
 * buffer to hold the longest message, the output buffer while a peer reads slowly. (At full size from
 * the start, a leader of a 1024-rank job, ~1023 connections, held 1.3 GB.) One page holds every message
 * but DECISIONS, and DECISIONS of up to ~360 changed cells; a full table (DCCL_TABLE_CELLS cells, 21 KB)
 * grows its connection's buffers to 32 KiB. An empty buffer that grew to BUFFER_SHRINK_FROM or more (a
 * backlog) goes back to BUFFER_INITIAL; smaller ones keep their size, so that steady traffic does not
 * reallocate at every message. */
#define IN_CAPACITY (DCCL_WIRE_HEADER_BYTES + DCCL_WIRE_MAX_PAYLOAD)
#define OUT_CAPACITY (1u << 20)
#define BUFFER_INITIAL 4096u
#define BUFFER_SHRINK_FROM (64u * 1024u)
#define HISTORY_ENTRIES 8192
#define HISTORY_CELLS (1u << 16)
/* A worker's inbox starts with room for one full table, all a frozen leader's worker ever gets, and
 * doubles on demand up to INBOX_ENTRIES entries and INBOX_CELLS cells (1 MB at full size). */
#define INBOX_ENTRIES 8192u
#define INBOX_CELLS (1u << 16)
#define INBOX_INITIAL_ENTRIES 64u
_Static_assert(INBOX_ENTRIES >= DCCL_WIRE_MAX_ENTRIES && INBOX_CELLS >= DCCL_WIRE_MAX_PAYLOAD / DCCL_WIRE_CELL_BYTES,
               "an empty inbox must take any valid DECISIONS message whole");
#define INBOX_INITIAL_CELLS 2048u
#define POLL_NS 200000L                /* service period while a session is busy (see session_needs) */
#define IDLE_POLL_NS 20000000L         /* longest wait when none is: its timers (retries, hello deadlines) */
#define ACTIVE_NS 20000000ULL          /* a session that follows its hot path polls this long after it moved: its
                                        * hot path rings the bell (a write) at most once per ACTIVE_NS */
#define RETRY_NS 5000000ULL            /* between attempts to reach a leader or the registry */
#define REFUSED_RETRY_NS (100 * RETRY_NS) /* a worker refused by its leader, or refusing it, tries again after */
#define REGISTRY_BACKOFF_MAX_NS 1000000000ULL /* the registry's retry delay doubles from RETRY_NS to this */
#define LEAVE_NS 2000000000ULL         /* a leaving leader waits this long for its workers */
#define REREGISTER_NS 1000000000ULL    /* a leader the registry refused tries again after this long */
#define ACCEPT_PAUSE_NS 50000000ULL    /* out of file descriptors: listeners rest this long between accepts */
#define REGISTRY_LINGER_NS 1000000000ULL /* a registry connection nothing needs closes after this long */
#define HELLO_TIMEOUT_NS 5000000000ULL /* a connection whose peer has not said hello by then is closed */

typedef struct connection {
  int fd;
  int connecting; /* TCP connect in progress */
  int initiated;  /* we connected (else accepted) */
  int to_registry;
  int closing;
  int released; /* closed on purpose: nothing in this process needs it any more */
  int silent;   /* closed because its peer said no hello in time */
  uint64_t peer_key; /* 0 until the peer's HELLO */
  uint64_t opened_ns; /* when it was made or accepted: the peer's HELLO is due within the hello timeout */
  uint8_t* in;
  size_t in_length, in_capacity;
  int input_stalled; /* a whole message waits for room (a worker's inbox, memory): retried every round */
  uint32_t watched;  /* the events the service's epoll set waits for on it (EPOLLIN, EPOLLOUT) */
  uint8_t* out;
  size_t out_length, out_capacity;
} connection;

typedef struct worker_link { /* the leader's view of one worker rank */
  connection* conn;
  uint64_t sent, acked;
  int need_full;
  int joined;   /* the worker has joined at least once */
  int released; /* frozen leader: the worker has the table and was told nothing changes any more */
  int rules_sent; /* the leader's pins are on their way to this worker (sent first on each join) */
} worker_link;

typedef struct inbox_entry {
  uint64_t epoch;
  uint32_t first, cells, full;
} inbox_entry;

struct dccl_coord_session {
  int leader;
  dccl_coord_options options;
  uint64_t token;
  char local_name[64];
  char leader_name[384];
  dccl_coord_stats stats;
  /* leader */
  int listener;
  pthread_mutex_t history_lock; /* history and the commits that feed it */
  dccl_history* history; /* the tables it decided, until every worker has them */
  worker_link* links; /* [n_ranks] */
  int registered;                /* its REGISTER is sent on the registry connection (and not refused) */
  int registration_refused;      /* the registry refused it once: warned */
  uint64_t register_retry_at_ns; /* after a refusal */
  int leaving, done;
  uint64_t leave_started_ns, final_decided;
  uint64_t started_ns; /* when it started leading */
  /* Both roles: the store's epochs entered and decided as the thread last saw them, and when they last
   * moved. A session that follows its hot path is polled for ACTIVE_NS after that, then rung (the bell). */
  uint64_t seen_entered, seen_decided, moved_ns;
  int bell_armed; /* the thread armed its store's bell before this wait */
  enum { ABSENCE_WATCHED, ABSENCE_WARNED, ABSENCE_SETTLED } absence; /* of workers that have not joined */
  /* worker */
  connection* conn;
  int joined, looking_up;
  uint64_t retry_at_ns;
  uint64_t received;
  int leader_gone;
  int rules_received; /* rank 0's pins are in force: its tables may be run */
  inbox_entry* inbox; /* a ring of inbox_capacity entries */
  uint32_t inbox_head, inbox_count, inbox_capacity;
  dccl_wire_cell* inbox_cells;
  uint32_t inbox_cells_used, inbox_cells_capacity;
};

_Static_assert(INBOX_INITIAL_CELLS * DCCL_WIRE_CELL_BYTES >= 12 + DCCL_WIRE_ENTRY_BYTES + DCCL_TABLE_CELLS * DCCL_WIRE_CELL_BYTES,
               "a worker's first inbox holds one full table (its DECISIONS payload, counted as cells)");
_Static_assert(INBOX_CELLS * DCCL_WIRE_CELL_BYTES >= DCCL_WIRE_MAX_PAYLOAD, "a full inbox holds any one DECISIONS");
#define POWER_OF_TWO(n) ((n) != 0 && ((n) & ((n) - 1)) == 0)
_Static_assert(INBOX_ENTRIES % INBOX_INITIAL_ENTRIES == 0 && POWER_OF_TWO(INBOX_ENTRIES / INBOX_INITIAL_ENTRIES),
               "the inbox ring, doubling from its first size, reaches its cap exactly");

typedef struct registry_entry {
  uint64_t comm_id;
  connection* owner;
  dccl_wire_address address;
} registry_entry;

static struct {
  pthread_mutex_t lock;
  pthread_cond_t changed;
  pthread_t thread;
  int running, stop;
  /* Both tables grow on demand: connections up to what the process may open (RLIMIT_NOFILE). */
  dccl_coord_session** sessions;
  int session_count;
  uint32_t session_capacity;
  connection** connections;
  int connection_count;
  uint32_t connection_capacity;
  int out_of_files_warned;
  uint64_t hello_timeout_ns; /* HELLO_TIMEOUT_NS unless a test set another */
  int silent_peer_warned;
  uint64_t accept_paused_until_ns; /* out of file descriptors: pending connections wait in the backlog */
  uint64_t process_key, secret;
  pid_t key_pid; /* the process the key was made for (a forked child makes its own) */
  dccl_logger logger; /* process-wide messages: a copy of the first session's, which its communicator frees */
  int wake[2]; /* a pipe: written to wake the thread from an idle wait (a session added or leaving, a bell) */
  uint64_t idle_period_ns; /* IDLE_POLL_NS unless a test set another */
  int epoll;   /* the connections, each registered once: a round costs the ready ones, not all of them */
  int tcp_listener;
  uint16_t tcp_port;
  char registry[288];
  int registry_listener;
  connection* registry_conn;
  uint64_t registry_retry_at_ns, registry_backoff_ns;
  uint64_t registry_needed_at_ns; /* when something in this process last needed the registry connection */
  int registry_foreign_warned; /* something at the registry's address that does not speak the protocol */
  registry_entry registry_entries[MAX_REGISTRY];
  int registry_count;
  dccl_rng rng;
  uint64_t connections_made, rejected;
  uint64_t rounds; /* of the thread's loop */
  size_t buffer_bytes;   /* the connections' input and output buffers, all together */
  size_t largest_output; /* the largest output buffer a connection has had since the service started */
} service = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER, .tcp_listener = -1,
             .registry_listener = -1, .wake = {-1, -1}, .epoll = -1};

/* The process has no file descriptor left (RLIMIT_NOFILE, or the system's table): `what` failed. Warned
 * once; the peers, or this process, try again and get through once descriptors are free. */
static void warn_out_of_files(const char* what, int error) {
  if (service.out_of_files_warned) return;
  service.out_of_files_warned = 1;
  struct rlimit limit = {0, 0};
  getrlimit(RLIMIT_NOFILE, &limit);
  DCCL_WARN(&service.logger,
            "coordination: %s: %s (open-file limit RLIMIT_NOFILE %llu, hard limit %llu; %d coordination connections "
            "open); the ranks concerned retry until descriptors are free: raise the limit (ulimit -n) for "
            "communicators of this many processes",
            what, strerror(error), (unsigned long long)limit.rlim_cur, (unsigned long long)limit.rlim_max,
            service.connection_count);
}

/* Whether a failed socket() or accept() ran out of file descriptors; warns once if so. */
static int out_of_files(const char* what) {
  int error = errno;
  if (error != EMFILE && error != ENFILE) return 0;
  warn_out_of_files(what, error);
  return 1;
}

/* ---- connections ---- */
/* Resizes a connection's input or output buffer to `capacity` bytes, keeping its contents up to that
 * size; 0, or -1 when out of memory (the buffer unchanged). */
static int resize_buffer(uint8_t** buffer, size_t* capacity, size_t new_capacity) {
  uint8_t* resized = realloc(*buffer, new_capacity);
  if (resized == NULL) return -1;
  service.buffer_bytes = service.buffer_bytes - *capacity + new_capacity;
  *buffer = resized;
  *capacity = new_capacity;
  return 0;
}

/* Doubles a connection's output buffer, up to OUT_CAPACITY; -1 at the cap or out of memory: no room
 * now, the writer tries again once the peer has read (as at the cap). */
static int grow_output(connection* c) {
  if (c->out_capacity >= OUT_CAPACITY) return -1;
  size_t doubled = 2 * c->out_capacity < OUT_CAPACITY ? 2 * c->out_capacity : OUT_CAPACITY;
  if (resize_buffer(&c->out, &c->out_capacity, doubled) != 0) return -1;
  if (c->out_capacity > service.largest_output) service.largest_output = c->out_capacity;
  return 0;
}

/* Grows a connection's input buffer, doubling, until it holds a message of `message_bytes` (at most
 * IN_CAPACITY, as the parser ensures); -1 when out of memory: the rest of the message stays unread until
 * a later try succeeds. */
static int grow_input(connection* c, size_t message_bytes) {
  size_t grown = c->in_capacity;
  while (grown < message_bytes && grown < IN_CAPACITY) grown = 2 * grown < IN_CAPACITY ? 2 * grown : IN_CAPACITY;
  return grown == c->in_capacity ? 0 : resize_buffer(&c->in, &c->in_capacity, grown);
}

/* An empty buffer that grew large for a backlog goes back to its first size (kept as is if that fails). */
static void shrink_if_empty(uint8_t** buffer, size_t length, size_t* capacity) {
  if (length == 0 && *capacity >= BUFFER_SHRINK_FROM) resize_buffer(buffer, capacity, BUFFER_INITIAL);
}

/* A connection's memory (its descriptor is closed apart). */
static void free_connection(connection* c) {
  if (c == NULL) return;
  free(c->in);
  free(c->out);
  free(c);
}

static connection* add_connection(int fd, int initiated, int connecting) {
  if (dccl_grow_array((void**)&service.connections, &service.connection_capacity, (uint32_t)service.connection_count + 1,
                      UINT32_MAX, sizeof(connection*)) != 0) {
    close(fd);
    return NULL;
  }
  connection* c = calloc(1, sizeof(connection));
  if (c != NULL) {
    c->in = malloc(BUFFER_INITIAL);
    c->out = malloc(BUFFER_INITIAL);
    c->watched = EPOLLIN | (connecting ? EPOLLOUT : 0);
  }
  struct epoll_event watch = {.events = c != NULL ? c->watched : 0, .data.ptr = c};
  if (c == NULL || c->in == NULL || c->out == NULL || epoll_ctl(service.epoll, EPOLL_CTL_ADD, fd, &watch) != 0) {
    free_connection(c);
    close(fd);
    return NULL;
  }
  c->in_capacity = c->out_capacity = BUFFER_INITIAL;
  service.buffer_bytes += 2 * BUFFER_INITIAL;
  if (BUFFER_INITIAL > service.largest_output) service.largest_output = BUFFER_INITIAL;
  c->fd = fd;
  c->initiated = initiated;
  c->connecting = connecting;
  c->opened_ns = dccl_monotonic_ns();
  service.connections[service.connection_count++] = c;
  service.connections_made++;
  return c;
}

/* The registry connection closed or could not be made: the next attempt waits, twice as long each
 * time up to REGISTRY_BACKOFF_MAX_NS, until the registry answers a hello. */
static void back_off_from_registry(uint64_t now) {
  if (service.registry_backoff_ns < RETRY_NS) service.registry_backoff_ns = RETRY_NS;
  service.registry_retry_at_ns = now + service.registry_backoff_ns;
  service.registry_backoff_ns *= 2;
  if (service.registry_backoff_ns > REGISTRY_BACKOFF_MAX_NS) service.registry_backoff_ns = REGISTRY_BACKOFF_MAX_NS;
}

static void registry_connection_closed(const connection* c, uint64_t now) {
  service.registry_conn = NULL;
  if (c->released) { /* the next need connects at once */
    service.registry_retry_at_ns = 0;
    return;
  }
  back_off_from_registry(now);
  /* Connected, then closed, sent garbage or stayed silent without a hello: not a DynamICCL registry. */
  if (!c->connecting && c->peer_key == 0 && !service.stop && !service.registry_foreign_warned) {
    service.registry_foreign_warned = 1;
    DCCL_WARN(&service.logger,
              "coordination: %s accepts connections but %s: it does not speak DynamICCL's protocol (another service "
              "on that port? DYNAMICCL_COORD or MASTER_PORT+1 must name a free port on the registry's host)%s; "
              "retrying with backoff up to %.0f s",
              service.registry, c->silent ? "says nothing" : "answered no hello",
              c->silent ? ", or the process hosting the registry hangs" : "", REGISTRY_BACKOFF_MAX_NS / 1e9);
  }
}

/* A peer that has not said hello by the deadline (something else at that address, a port scanner, or a
 * process that hangs) would hold its connection, and on the registry's address this process's only
 * registry connection, forever: the connection is closed, and the peers this process needs are tried
 * again. A peer that connected here and stays silent is warned about once; a silent registry gets the
 * registry's own warning; a leader's process that does not answer (stopped, or stalled by a loaded
 * machine) only an INFO line: its waiting workers say so through their wait error. */
static void read_input(connection* c, uint64_t now);

static void close_if_silent(connection* c, uint64_t now) {
  uint64_t timeout = service.hello_timeout_ns != 0 ? service.hello_timeout_ns : HELLO_TIMEOUT_NS;
  if (c->peer_key != 0 || c->closing || now < c->opened_ns + timeout) return; /* (`now` may predate c) */
  if (!c->connecting) read_input(c, now); /* a hello that arrived since the last poll counts */
  if (c->peer_key != 0 || c->closing) return;
  c->closing = 1;
  c->silent = 1;
  if (c->to_registry) return;
  char peer[DCCL_WIRE_HOST_MAX + 16];
  dccl_transport_peer_name(c->fd, peer, sizeof(peer));
  if (c->initiated) {
    DCCL_INFO(&service.logger, "coordination: a leader's process (%s) said no hello within %.1f s; connecting again",
              peer, timeout / 1e9);
    return;
  }
  if (service.silent_peer_warned) return;
  service.silent_peer_warned = 1;
  DCCL_WARN(&service.logger,
            "coordination: closed a connection from %s that said no hello within %.1f s (not a DynamICCL process, or "
            "one that hangs); further such connections are closed without a warning",
            peer, timeout / 1e9);
}

/* Registry: the entries connection `c` registered, all of them (it closed) or `comm_id`'s (its leader
 * left). */
static void forget_registrations(const connection* c, int every_comm, uint64_t comm_id) {
  for (int i = 0; i < service.registry_count;)
    if (service.registry_entries[i].owner == c && (every_comm || service.registry_entries[i].comm_id == comm_id))
      service.registry_entries[i] = service.registry_entries[--service.registry_count];
    else
      i++;
}

static void close_connection(connection* c, uint64_t now) {
  for (int i = 0; i < service.session_count; i++) {
    dccl_coord_session* s = service.sessions[i];
    if (s->leader) {
      for (int r = 0; r < s->options.n_ranks; r++)
        if (s->links[r].conn == c) s->links[r].conn = NULL;
      if (c->to_registry) s->registered = 0;
    } else {
      if (s->conn == c) {
        s->conn = NULL;
        s->joined = 0;
        if (s->retry_at_ns < now + RETRY_NS / 5) s->retry_at_ns = now + RETRY_NS / 5; /* (a refusal's is later) */
      }
      if (c->to_registry) s->looking_up = 0;
    }
  }
  forget_registrations(c, 1, 0);
  if (service.registry_conn == c) registry_connection_closed(c, now);
  for (int i = 0; i < service.connection_count; i++)
    if (service.connections[i] == c) {
      service.connections[i] = service.connections[--service.connection_count];
      break;
    }
  epoll_ctl(service.epoll, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  service.buffer_bytes -= c->in_capacity + c->out_capacity;
  free_connection(c);
}

static void flush(connection* c) {
  size_t done = 0;
  while (done < c->out_length) {
    ssize_t n = send(c->fd, c->out + done, c->out_length - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += (size_t)n;
    } else {
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) c->closing = 1;
      break;
    }
  }
  memmove(c->out, c->out + done, c->out_length - done);
  c->out_length -= done;
  shrink_if_empty(&c->out, c->out_length, &c->out_capacity);
}

/* A writer over the free part of a connection's output buffer; commit with finish(). A message that does
 * not fit is written again after grow_output(). */
static void writer_for(connection* c, dccl_wire_writer* w) {
  dccl_wire_writer_init(w, c->out + c->out_length, c->out_capacity - c->out_length);
}
static size_t finish(connection* c, dccl_wire_writer* w, dccl_coord_stats* stats) {
  if (w->overflow || w->length == 0) return 0;
  c->out_length += w->length;
  if (stats != NULL) {
    stats->messages_sent++;
    stats->bytes_sent += w->length;
  }
  return w->length;
}

static uint64_t token_of(uint64_t comm_id) { return dccl_wire_token(comm_id, service.secret); }

/* Queues one message; 0 when the output buffer has no room for it (full at OUT_CAPACITY, or out of
 * memory to grow it). */
static int send_simple(connection* c, dccl_wire_type type, uint32_t rank, uint64_t comm_id, const void* payload,
                       dccl_coord_stats* stats) {
  for (;;) {
    dccl_wire_writer w;
    writer_for(c, &w);
    size_t at = dccl_wire_begin(&w, type, rank, comm_id, token_of(comm_id));
    switch (type) {
      case DCCL_MSG_HELLO: dccl_wire_put_hello(&w, payload); break;
      case DCCL_MSG_JOIN: dccl_wire_put_join(&w, payload); break;
      case DCCL_MSG_ACK: dccl_wire_put_ack(&w, payload); break;
      case DCCL_MSG_BYE: dccl_wire_put_u64(&w, *(const uint64_t*)payload); break;
      case DCCL_MSG_REGISTER:
      case DCCL_MSG_ADDRESS: dccl_wire_put_address(&w, payload); break;
      case DCCL_MSG_REJECT: dccl_wire_put_text(&w, payload); break;
      case DCCL_MSG_RULES: { /* payload: a pin set, or NULL for none */
        const dccl_pin_set* pins = payload;
        dccl_wire_put_rules(&w, pins != NULL ? pins->rules : NULL, pins != NULL ? pins->count : 0);
        break;
      }
      default: break;
    }
    if (dccl_wire_end(&w, at) == 0) return finish(c, &w, stats) > 0;
    if (grow_output(c) != 0) return 0;
  }
}

static void send_hello(connection* c) {
  dccl_wire_hello hello = {service.process_key};
  send_simple(c, DCCL_MSG_HELLO, 0, 0, &hello, NULL);
}

/* ---- sessions ---- */
static dccl_coord_session* find_session(int leader, uint64_t comm_id, uint32_t rank) {
  for (int i = 0; i < service.session_count; i++) {
    dccl_coord_session* s = service.sessions[i];
    if (s->leader == leader && s->options.comm_id == comm_id && (leader || (uint32_t)s->options.rank == rank) &&
        !(leader && s->done))
      return s;
  }
  return NULL;
}

static void reject(connection* c, const dccl_wire_header* h, const char* why) {
  service.rejected++;
  DCCL_WARN(&service.logger, "coordination: rejected a %u message for comm %016llx: %s", h->type,
            (unsigned long long)h->comm_id, why);
  send_simple(c, DCCL_MSG_REJECT, h->rank, h->comm_id, why, NULL);
}

/* Worker `s` (NULL: none here) refuses what its leader sent on `c` and closes the connection; it joins
 * again only after REFUSED_RETRY_NS, or the leader would send the same message again at once. */
static void refuse_leader_message(dccl_coord_session* s, connection* c, const dccl_wire_header* h, const char* why) {
  reject(c, h, why);
  c->closing = 1;
  if (s != NULL && s->conn == c) s->retry_at_ns = dccl_monotonic_ns() + REFUSED_RETRY_NS;
}

/* Leader: a worker joins (or rejoins) a communicator this process leads. */
static void on_join(connection* c, const dccl_wire_header* h, dccl_wire_reader* r) {
  dccl_wire_join join;
  char why[160];
  if (dccl_wire_get_join(r, &join) != 0 || join.rank != h->rank) {
    reject(c, h, "malformed join");
    return;
  }
  dccl_coord_session* s = find_session(1, h->comm_id, 0);
  if (s == NULL || s->done) { /* a leader still leaving serves a late worker its last table */
    reject(c, h, "this process does not lead that communicator (any more)");
    return;
  }
  if ((int)join.n_ranks != s->options.n_ranks || join.epoch_calls != s->options.epoch_calls) {
    snprintf(why, sizeof(why), "rank %u has %u ranks and %llu calls per epoch, the leader %d and %llu (settings differ between ranks?)",
             join.rank, join.n_ranks, (unsigned long long)join.epoch_calls, s->options.n_ranks,
             (unsigned long long)s->options.epoch_calls);
    reject(c, h, why);
    s->stats.rejected++;
    return;
  }
  worker_link* link = &s->links[join.rank];
  link->conn = c;
  link->sent = join.received;
  if (join.received > link->acked) link->acked = join.received;
  link->need_full = 1;
  link->joined = 1;
  link->released = 0;
  link->rules_sent = 0;
  s->stats.connections++;
}

/* Worker: rank 0's pins, which this rank runs instead of its own rule file, put in place before its
 * first table may be run. Returns 0 when they cannot be taken yet (out of memory: the message stays in
 * the input buffer and is tried again), 1 when taken or refused. */
static int on_rules(connection* c, const dccl_wire_header* h, const uint8_t* payload) {
  dccl_coord_session* s = find_session(0, h->comm_id, h->rank);
  dccl_rule_list* list = malloc(sizeof(dccl_rule_list));
  if (list == NULL) return 0;
  char why[256];
  int valid = dccl_wire_get_rules(payload, h->payload_bytes, list->rules, &list->count, why, sizeof(why)) == 0;
  int taken = 1;
  if (!valid) {
    refuse_leader_message(s, c, h, why);
  } else if (s != NULL && s->conn == c && !s->rules_received) { /* the same rules again after a reconnection: kept */
    dccl_pin_set* pins = s->options.pins;
    if (pins == NULL || list->count == 0) {
      s->rules_received = 1;
    } else if (dccl_pins_compile(pins, list, s->options.n_nodes, s->options.n_ranks) == 0) {
      s->rules_received = 1;
      DCCL_INFO(s->options.logger, "coordination: rank %d runs rank 0's %d rule pin%s", s->options.rank, pins->count,
                pins->count == 1 ? "" : "s");
    } else {
      taken = 0;
    }
    if (taken) s->stats.messages_received++;
  }
  free(list);
  return taken;
}

static void on_ack(const dccl_wire_header* h, dccl_wire_reader* r) {
  dccl_wire_ack ack;
  dccl_coord_session* s = find_session(1, h->comm_id, 0);
  if (s == NULL || dccl_wire_get_ack(r, &ack) != 0 || ack.rank == 0 || (int)ack.rank >= s->options.n_ranks) return;
  s->stats.messages_received++;
  if (ack.received > s->links[ack.rank].acked) s->links[ack.rank].acked = ack.received;
}

/* Worker: drops the cells of the entries the store has taken (those before the oldest entry's). */
static void compact_inbox_cells(dccl_coord_session* s) {
  if (s->inbox_count == 0) {
    s->inbox_head = 0;
    s->inbox_cells_used = 0;
    return;
  }
  uint32_t first = s->inbox[s->inbox_head].first;
  if (first == 0) return;
  memmove(s->inbox_cells, s->inbox_cells + first, (s->inbox_cells_used - first) * sizeof(dccl_wire_cell));
  s->inbox_cells_used -= first;
  for (uint32_t i = 0; i < s->inbox_count; i++) s->inbox[(s->inbox_head + i) % s->inbox_capacity].first -= first;
}

/* Worker: room in the inbox for `entries` more entries and `cells` more cells: the cells the store has
 * taken are dropped first, then the arrays double, up to INBOX_ENTRIES and INBOX_CELLS. -1 when there is
 * no room now (at the caps, or out of memory): the message waits until the store has taken entries. */
static int make_inbox_room(dccl_coord_session* s, uint32_t entries, uint32_t cells) {
  if (s->inbox_count + entries > INBOX_ENTRIES) return -1;
  if (s->inbox_cells_capacity - s->inbox_cells_used < cells) compact_inbox_cells(s);
  if (dccl_grow_array((void**)&s->inbox_cells, &s->inbox_cells_capacity, s->inbox_cells_used + cells, INBOX_CELLS,
                      sizeof(dccl_wire_cell)) != 0)
    return -1;
  if (s->inbox_count + entries > s->inbox_capacity) {
    uint32_t capacity = s->inbox_capacity;
    while (capacity < s->inbox_count + entries) capacity *= 2;
    inbox_entry* grown = malloc(capacity * sizeof(inbox_entry));
    if (grown == NULL) return -1;
    /* The ring, oldest entry first, at the start of the larger one. */
    for (uint32_t i = 0; i < s->inbox_count; i++) grown[i] = s->inbox[(s->inbox_head + i) % s->inbox_capacity];
    free(s->inbox);
    s->inbox = grown;
    s->inbox_capacity = capacity;
    s->inbox_head = 0;
  }
  return 0;
}

/* Worker: decided epochs and changed tables from the leader. Returns 0 when it could not be taken
 * yet (inbox full: the message stays in the input buffer), 1 when taken or refused. */
static int on_decisions(connection* c, const dccl_wire_header* h, const uint8_t* payload) {
  dccl_coord_session* s = find_session(0, h->comm_id, h->rank);
  char why[160];
  int entries = dccl_wire_check_decisions(payload, h->payload_bytes, why, sizeof(why));
  if (entries < 0) {
    refuse_leader_message(s, c, h, why);
    return 1;
  }
  if (s == NULL || s->conn != c) return 1; /* a session that left, or a stale connection */
  if (make_inbox_room(s, (uint32_t)entries, h->payload_bytes / DCCL_WIRE_CELL_BYTES) != 0) return 0;
  dccl_wire_reader r;
  dccl_wire_reader_init(&r, payload, h->payload_bytes);
  uint64_t decided;
  uint32_t count;
  dccl_wire_get_u64(&r, &decided);
  dccl_wire_get_u32(&r, &count);
  for (uint32_t i = 0; i < count; i++) {
    dccl_wire_entry_header e;
    dccl_wire_get_entry_header(&r, &e);
    int keep = e.epoch >= s->received;
    inbox_entry* slot = &s->inbox[(s->inbox_head + s->inbox_count) % s->inbox_capacity];
    if (keep) *slot = (inbox_entry){e.epoch, s->inbox_cells_used, e.cells, e.full};
    for (uint32_t k = 0; k < e.cells; k++) {
      dccl_wire_cell cell;
      dccl_wire_get_cell(&r, &cell);
      if (keep) s->inbox_cells[s->inbox_cells_used++] = cell;
    }
    if (keep) {
      s->inbox_count++;
      s->stats.changes++;
    }
  }
  s->stats.messages_received++;
  s->stats.bytes_received += DCCL_WIRE_HEADER_BYTES + h->payload_bytes;
  if (decided > s->received) {
    s->stats.epochs += decided - s->received;
    s->received = decided;
  }
  dccl_wire_ack ack = {(uint32_t)s->options.rank, s->received};
  size_t before = c->out_length;
  send_simple(c, DCCL_MSG_ACK, ack.rank, s->options.comm_id, &ack, NULL);
  s->stats.messages_sent++;
  s->stats.bytes_sent += c->out_length - before;
  if (s->options.drop_probability > 0 && dccl_rng_uniform(&service.rng) < s->options.drop_probability)
    c->closing = 1; /* testing: a dropped connection, to be re-established */
  return 1;
}

static void start_connection_to(dccl_coord_session* s, const dccl_wire_address* a, uint64_t now);

static void on_address(const dccl_wire_header* h, dccl_wire_reader* r, uint64_t now) {
  dccl_wire_address a;
  dccl_coord_session* s = find_session(0, h->comm_id, h->rank);
  if (s == NULL || dccl_wire_get_address(r, &a) != 0) return;
  s->looking_up = 0;
  if (!a.found) {
    s->retry_at_ns = now + RETRY_NS; /* the leader has not registered yet */
    return;
  }
  start_connection_to(s, &a, now);
}

/* Registry: a leader says where it listens (found 1), or that it left (found 0). */
static void on_register(connection* c, const dccl_wire_header* h, dccl_wire_reader* r) {
  dccl_wire_address a;
  if (dccl_wire_get_address(r, &a) != 0) {
    reject(c, h, "malformed registration");
    c->closing = 1;
    return;
  }
  if (!a.found) {
    forget_registrations(c, 0, h->comm_id);
    return;
  }
  for (int i = 0; i < service.registry_count; i++)
    if (service.registry_entries[i].comm_id == h->comm_id) {
      service.registry_entries[i].owner = c;
      service.registry_entries[i].address = a;
      return;
    }
  if (service.registry_count == MAX_REGISTRY) {
    reject(c, h, "the registry is full");
    return;
  }
  service.registry_entries[service.registry_count++] = (registry_entry){h->comm_id, c, a};
}

static void on_lookup(connection* c, const dccl_wire_header* h) {
  dccl_wire_address answer;
  memset(&answer, 0, sizeof(answer));
  for (int i = 0; i < service.registry_count; i++)
    if (service.registry_entries[i].comm_id == h->comm_id) answer = service.registry_entries[i].address;
  /* A leader that reached the registry over loopback runs on the registry's machine and registered a
   * loopback address, which no other machine reaches (a registry named by the machine's own name,
   * 127.0.1.1 on Debian): the asker gets the address it reached the registry at, an address of the
   * same machine, where the leader listens too (on every interface). */
  if (answer.found && dccl_transport_is_loopback(answer.host)) {
    char reached[sizeof(answer.host)];
    if (dccl_transport_local_address(c->fd, reached, sizeof(reached)) == 0) memcpy(answer.host, reached, sizeof(reached));
  }
  send_simple(c, DCCL_MSG_ADDRESS, h->rank, h->comm_id, &answer, NULL);
}

/* Whether a worker session may use connection `other` to the process with key `peer`: one we made,
 * or one the peer made when our key is the lower (the peer keeps the connections it made, we give up
 * ours: a rule both sides apply alike, so they never both give up theirs). Never the accepted end of
 * a connection to ourselves. */
static int may_share(const connection* other, uint64_t peer) {
  if (other->initiated) return 1;
  return peer != service.process_key && service.process_key < peer;
}

/* After a HELLO: one connection per pair of processes. A second one to a process we already talk to
 * hands its sessions over and closes. */
static void on_hello(connection* c, dccl_wire_reader* r) {
  dccl_wire_hello hello;
  if (dccl_wire_get_hello(r, &hello) != 0 || hello.process_key == 0) {
    c->closing = 1;
    return;
  }
  c->peer_key = hello.process_key;
  if (!c->initiated) {
    send_hello(c);
    return;
  }
  if (c->to_registry) {
    service.registry_backoff_ns = 0; /* a registry answered: the next loss retries quickly again */
    return;
  }
  for (int i = 0; i < service.connection_count; i++) {
    connection* other = service.connections[i];
    if (other != c && !other->closing && !other->to_registry && other->peer_key == c->peer_key &&
        may_share(other, c->peer_key)) {
      for (int k = 0; k < service.session_count; k++)
        if (!service.sessions[k]->leader && service.sessions[k]->conn == c) service.sessions[k]->conn = other;
      c->closing = 1;
      return;
    }
  }
}

/* The registry refused a request: a leader's registration (full), or anything else it found wrong. A
 * refused leader tries again later; until it is registered, its workers go on looking it up. */
static void on_registry_refusal(const dccl_wire_header* h, const char* why, uint64_t now) {
  dccl_coord_session* s = find_session(1, h->comm_id, 0);
  if (s == NULL) {
    DCCL_WARN(&service.logger, "coordination: the registry at %s refused a request for comm %016llx: %s",
              service.registry, (unsigned long long)h->comm_id, why);
    return;
  }
  s->registered = 0;
  s->register_retry_at_ns = now + REREGISTER_NS;
  if (!s->registration_refused)
    DCCL_WARN(s->options.logger,
              "coordination: the registry at %s refused to register the leader of comm %016llx: %s; its workers "
              "cannot find it and wait (with an error every DYNAMICCL_COORD_TIMEOUT_S); trying again every second",
              service.registry, (unsigned long long)s->options.comm_id, why);
  s->registration_refused = 1;
}

/* Handles every complete message in a connection's input buffer, and makes room for the next one. */
static void handle_input(connection* c, uint64_t now) {
  size_t at = 0, incomplete_bytes = 0;
  c->input_stalled = 0;
  while (!c->closing) {
    dccl_wire_header h;
    char why[160];
    int parsed = dccl_wire_parse_header(c->in + at, c->in_length - at, &h, why, sizeof(why));
    if (parsed == 0) break;
    if (parsed < 0) {
      service.rejected++;
      if (!(c->to_registry && c->peer_key == 0)) /* else warned once in registry_connection_closed */
        DCCL_WARN(&service.logger, "coordination: closing a connection that sent an invalid message: %s", why);
      c->closing = 1;
      break;
    }
    if (c->in_length - at < DCCL_WIRE_HEADER_BYTES + h.payload_bytes) {
      incomplete_bytes = DCCL_WIRE_HEADER_BYTES + h.payload_bytes;
      break;
    }
    const uint8_t* payload = c->in + at + DCCL_WIRE_HEADER_BYTES;
    dccl_wire_reader r;
    dccl_wire_reader_init(&r, payload, h.payload_bytes);
    if (h.type != DCCL_MSG_HELLO && h.token != token_of(h.comm_id)) {
      service.rejected++;
      DCCL_WARN(&service.logger, "coordination: closing a connection that sent a message with a wrong token for comm %016llx",
                (unsigned long long)h.comm_id);
      c->closing = 1;
      break;
    }
    if (h.type != DCCL_MSG_HELLO && c->peer_key == 0) {
      service.rejected++;
      DCCL_WARN(&service.logger, "coordination: closing a connection that skipped its hello");
      c->closing = 1;
      break;
    }
    switch (h.type) {
      case DCCL_MSG_HELLO: on_hello(c, &r); break;
      case DCCL_MSG_JOIN: on_join(c, &h, &r); break;
      case DCCL_MSG_ACK: on_ack(&h, &r); break;
      case DCCL_MSG_DECISIONS:
        if (!on_decisions(c, &h, payload)) {
          c->input_stalled = 1;
          goto stalled;
        }
        break;
      case DCCL_MSG_RULES:
        if (!on_rules(c, &h, payload)) {
          c->input_stalled = 1;
          goto stalled;
        }
        break;
      case DCCL_MSG_BYE: {
        dccl_coord_session* s = find_session(0, h.comm_id, h.rank);
        uint64_t final_decided;
        if (s != NULL && dccl_wire_get_u64(&r, &final_decided) == 0 && dccl_wire_at_end(&r)) s->leader_gone = 1;
        break;
      }
      case DCCL_MSG_REGISTER:
        if (service.registry_listener >= 0) on_register(c, &h, &r);
        break;
      case DCCL_MSG_LOOKUP:
        if (service.registry_listener >= 0) on_lookup(c, &h);
        break;
      case DCCL_MSG_ADDRESS: on_address(&h, &r, now); break;
      case DCCL_MSG_REJECT: {
        char text[DCCL_WIRE_HOST_MAX + 1] = "(unreadable reason)";
        dccl_wire_get_text(&r, text, sizeof(text));
        if (c->to_registry) {
          on_registry_refusal(&h, text, now);
          break;
        }
        dccl_coord_session* s = find_session(0, h.comm_id, h.rank);
        DCCL_WARN(s != NULL ? s->options.logger : &service.logger, "coordination: the leader of comm %016llx refused rank %u: %s",
                  (unsigned long long)h.comm_id, h.rank, text);
        if (s != NULL) {
          s->joined = 0;
          s->retry_at_ns = now + REFUSED_RETRY_NS;
        }
        break;
      }
      default: break;
    }
    at += DCCL_WIRE_HEADER_BYTES + h.payload_bytes;
  }
stalled:
  memmove(c->in, c->in + at, c->in_length - at);
  c->in_length -= at;
  /* A message longer than the buffer: it grows to hold it (out of memory: the service loop, which calls
   * this for every connection, tries again; the buffer being full, nothing more is read meanwhile). */
  if (incomplete_bytes > c->in_capacity) c->input_stalled = grow_input(c, incomplete_bytes) != 0;
  else shrink_if_empty(&c->in, c->in_length, &c->in_capacity);
}

static void read_input(connection* c, uint64_t now) {
  while (c->in_length < c->in_capacity && !c->closing) {
    ssize_t n = recv(c->fd, c->in + c->in_length, c->in_capacity - c->in_length, MSG_DONTWAIT);
    if (n > 0) {
      c->in_length += (size_t)n;
      handle_input(c, now);
    } else {
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) c->closing = 1;
      break;
    }
  }
}

/* ---- leader work ---- */
static void ensure_registry(uint64_t now) {
  if (service.registry_conn != NULL || now < service.registry_retry_at_ns) return;
  char host[DCCL_WIRE_HOST_MAX + 1];
  uint16_t port;
  if (dccl_parse_host_port(service.registry, host, sizeof(host), &port) != 0) return;
  int fd = dccl_transport_connect_tcp(host, port);
  if (fd < 0) out_of_files("cannot connect to the coordination registry");
  connection* c = fd >= 0 ? add_connection(fd, 1, 1) : NULL;
  if (c == NULL) {
    back_off_from_registry(now);
    return;
  }
  c->to_registry = 1;
  service.registry_conn = c;
  service.registry_needed_at_ns = now;
  send_hello(c);
}

/* Whether this process needs its registry connection: a leader keeps its registration there (the
 * registry forgets the leaders of a connection that closes), a worker looks its leader up there until
 * it has joined it. */
static int registry_needed(void) {
  for (int i = 0; i < service.session_count; i++) {
    const dccl_coord_session* s = service.sessions[i];
    if (s->options.registry[0] == '\0') continue;
    if (s->leader ? !s->done : !s->leader_gone && (!s->joined || s->looking_up)) return 1;
  }
  return 0;
}

/* A process that leads nothing through the registry closes its registry connection once its workers
 * have joined their leaders (after REGISTRY_LINGER_NS, for communicators created in a row): else the
 * registry's host holds a connection from every process of the job for the job's whole life. A worker
 * that loses its leader connects to the registry again. */
static void release_registry_if_unneeded(uint64_t now) {
  connection* rc = service.registry_conn;
  if (rc == NULL) return;
  if (registry_needed() || rc->connecting || rc->peer_key == 0 || rc->out_length > 0) {
    service.registry_needed_at_ns = now;
    return;
  }
  if (now - service.registry_needed_at_ns < REGISTRY_LINGER_NS) return;
  rc->released = 1;
  rc->closing = 1;
}

/* Leader: tells the registry where it listens (`found` 1), or that it left (0). */
static void send_registration(dccl_coord_session* s, connection* rc, uint32_t found) {
  dccl_wire_address a;
  memset(&a, 0, sizeof(a));
  a.found = found;
  if (found) {
    a.port = service.tcp_port;
    a.process_key = service.process_key;
    if (dccl_transport_local_address(rc->fd, a.host, sizeof(a.host)) != 0) strcpy(a.host, "127.0.0.1");
  }
  send_simple(rc, DCCL_MSG_REGISTER, 0, s->options.comm_id, &a, &s->stats);
}

static void register_leader(dccl_coord_session* s, uint64_t now) {
  if (s->options.registry[0] == '\0' || s->registered || now < s->register_retry_at_ns) return;
  ensure_registry(now);
  connection* rc = service.registry_conn;
  if (rc == NULL || rc->connecting) return;
  send_registration(s, rc, 1);
  s->registered = 1;
}

/* A leaving leader's entry goes from the registry now, not when its process's registry connection
 * closes: a process that makes and ends many communicators would fill the registry. */
static void unregister_leader(dccl_coord_session* s) {
  connection* rc = service.registry_conn;
  if (s->registered && rc != NULL && !rc->closing) send_registration(s, rc, 0);
  s->registered = 0;
}

/* Leader: the ranks it serves, 1 .. expected_ranks - 1 (all but those a test runs without). */
static int expected_ranks(const dccl_coord_session* s) {
  int present = s->options.present_ranks;
  return present > 0 && present < s->options.n_ranks ? present : s->options.n_ranks;
}

/* Leader: names the workers that have not joined once absent_warning_seconds have passed, and says
 * when the last of them joins. Whoever does not follow rank 0 runs other choices, and NCCL hangs at the
 * first call they disagree on: this line, in rank 0's log, says why. */
static void warn_of_absent_workers(dccl_coord_session* s, uint64_t now) {
  double patience = s->options.absent_warning_seconds;
  if (patience <= 0 || s->absence == ABSENCE_SETTLED || now - s->started_ns < (uint64_t)(patience * 1e9)) return;
  int expected = expected_ranks(s), first_absent = 0;
  for (int rank = 1; rank < expected && first_absent == 0; rank++)
    if (!s->links[rank].joined) first_absent = rank;
  if (first_absent == 0) { /* all joined: said so if they were named before; nothing more to watch */
    if (s->absence == ABSENCE_WARNED)
      DCCL_INFO(s->options.logger, "coordination: every rank of comm %016llx has joined rank 0 now",
                (unsigned long long)s->options.comm_id);
    s->absence = ABSENCE_SETTLED;
    return;
  }
  if (s->absence == ABSENCE_WARNED) return;
  s->absence = ABSENCE_WARNED;
  char ranks[160] = "";
  size_t used = 0;
  int absent = 0;
  for (int rank = first_absent; rank < expected; rank++) {
    if (s->links[rank].joined) continue;
    if (++absent <= 8 && used < sizeof(ranks))
      used += (size_t)snprintf(ranks + used, sizeof(ranks) - used, "%s%d", absent > 1 ? ", " : "", rank);
  }
  if (absent > 8 && used < sizeof(ranks)) snprintf(ranks + used, sizeof(ranks) - used, " and %d more", absent - 8);
  int unregistered = s->options.registry[0] != '\0' && !s->registered;
  DCCL_WARN(s->options.logger,
            "coordination: rank 0 of comm %016llx leads, but %d of its %d other ranks (%s) %s not joined in %.1f s: a "
            "rank that does not follow rank 0 (another DYNAMICCL_MODE, no DYNAMICCL_RULES_FILE where rank 0 has one, "
            "no profiler plugin, DYNAMICCL_COORD=off) runs choices of its own, and ranks that disagree hang NCCL; "
            "give every rank the same DYNAMICCL_ settings and plugins. Or they cannot reach rank 0 (DYNAMICCL_COORD, "
            "the network)%s",
            (unsigned long long)s->options.comm_id, absent, expected - 1, ranks, absent == 1 ? "has" : "have", patience,
            unregistered ? ": rank 0 is not registered at the registry yet" : "");
}

static void leader_work(dccl_coord_session* s, uint64_t now) {
  if (!s->leaving) register_leader(s, now);
  warn_of_absent_workers(s, now); /* (a leaving leader waits for them too) */
  pthread_mutex_lock(&s->history_lock);
  uint64_t decided = dccl_table_store_decided(s->options.store);
  uint64_t oldest = UINT64_MAX;
  int all_sent = 1;
  for (int rank = 1; rank < expected_ranks(s); rank++) {
    worker_link* link = &s->links[rank];
    if (link->acked < oldest) oldest = link->acked;
    connection* c = link->conn;
    if (link->released) continue;
    if (c == NULL || c->closing || c->peer_key == 0) {
      /* A leaving leader waits (up to LEAVE_NS) for a worker still connecting, one that has not joined
       * yet, or one between connections that has not acknowledged every decided epoch: each would wait
       * for the leader's tables for ever. */
      if (s->leaving && (c != NULL || !link->joined || link->acked < decided)) all_sent = 0;
      continue;
    }
    if (!link->rules_sent && /* its pins go before any table */
        !(link->rules_sent = send_simple(c, DCCL_MSG_RULES, (uint32_t)rank, s->options.comm_id, s->options.pins, &s->stats))) {
      all_sent = 0;
      continue;
    }
    while (link->sent < decided) { /* (a full table, too, needs a decided epoch to describe) */
      dccl_wire_writer w;
      int64_t stated;
      /* As many changes as fit; when not even the next one does, the buffer grows (up to OUT_CAPACITY)
       * and the message is written again. */
      for (;;) {
        writer_for(c, &w);
        stated = dccl_history_write(s->history, &w, (uint32_t)rank, s->options.comm_id, s->token, link->sent,
                                    link->need_full, decided);
        int progress = stated > 0 && ((uint64_t)stated > link->sent || link->need_full);
        if (stated < 0 || progress || grow_output(c) != 0) break;
      }
      if (stated < 0) {
        DCCL_WARN(s->options.logger,
                  "coordination: rank %d of comm %016llx resumes from epoch %llu, which the leader no longer keeps; it "
                  "cannot follow safely and will wait",
                  rank, (unsigned long long)s->options.comm_id, (unsigned long long)link->sent);
        link->conn = NULL;
        break;
      }
      /* No room now (nothing written, or not even the next change fits): the rest when there is. */
      if (stated == 0 || ((uint64_t)stated <= link->sent && !link->need_full) || finish(c, &w, &s->stats) == 0) break;
      link->sent = (uint64_t)stated;
      link->need_full = 0;
    }
    /* Frozen: the whole table is on its way and will never change, so the worker may run it on alone. */
    if (s->options.frozen && link->conn == c && link->sent > 0 && !link->need_full &&
        send_simple(c, DCCL_MSG_BYE, (uint32_t)rank, s->options.comm_id, &link->sent, &s->stats))
      link->released = 1;
    if (link->sent < decided || c->out_length > 0) all_sent = 0;
  }
  dccl_history_forget(s->history, oldest != UINT64_MAX ? oldest : decided); /* (no worker: all of it) */
  pthread_mutex_unlock(&s->history_lock);
  if (s->leaving && !s->done && (all_sent || now - s->leave_started_ns > LEAVE_NS)) {
    for (int rank = 1; rank < s->options.n_ranks; rank++)
      if (s->links[rank].conn != NULL && !s->links[rank].released) send_simple(s->links[rank].conn, DCCL_MSG_BYE, (uint32_t)rank, s->options.comm_id, &decided, &s->stats);
    unregister_leader(s);
    for (int i = 0; i < service.connection_count; i++) flush(service.connections[i]);
    if (s->listener >= 0) close(s->listener);
    s->listener = -1;
    s->final_decided = decided;
    s->done = 1;
    pthread_cond_broadcast(&service.changed);
  }
}

/* ---- worker work ---- */
static void start_connection_to(dccl_coord_session* s, const dccl_wire_address* a, uint64_t now) {
  for (int i = 0; i < service.connection_count; i++) {
    connection* c = service.connections[i];
    if (!c->closing && !c->to_registry && c->peer_key == a->process_key && may_share(c, a->process_key)) {
      s->conn = c; /* one connection per pair of processes */
      return;
    }
  }
  int fd = dccl_transport_connect_tcp(a->host, a->port);
  if (fd < 0) {
    out_of_files("cannot connect to a leader");
    s->retry_at_ns = now + RETRY_NS;
    return;
  }
  connection* c = add_connection(fd, 1, 1);
  if (c == NULL) return;
  s->conn = c;
  send_hello(c);
}

static void find_leader(dccl_coord_session* s, uint64_t now) {
  if (s->options.registry[0] == '\0') {
    int fd = dccl_transport_connect_local(s->local_name);
    if (fd < 0) {
      out_of_files("cannot connect to a leader");
      s->retry_at_ns = now + RETRY_NS; /* nobody listens yet, or no file descriptor left */
      return;
    }
    connection* c = add_connection(fd, 1, 0);
    if (c == NULL) return;
    s->conn = c;
    send_hello(c);
    return;
  }
  ensure_registry(now);
  connection* rc = service.registry_conn;
  if (rc == NULL || rc->connecting || s->looking_up) return;
  send_simple(rc, DCCL_MSG_LOOKUP, (uint32_t)s->options.rank, s->options.comm_id, "", &s->stats);
  s->looking_up = 1;
}

static void apply_cell(dccl_table* t, const dccl_wire_cell* c) {
  dccl_table_set(t, c->cell, c->action);
  dccl_table_set_explore(t, c->cell, c->explore, c->explore_mask);
}

/* Moves what arrived into the store: the changed tables, each exactly at its epoch, and the limit up
 * to which the hot path may go on with the same table. */
static void feed_store(dccl_coord_session* s) {
  if (!s->rules_received) return; /* no table runs before rank 0's pins are in force */
  dccl_table_store* store = s->options.store;
  while (s->inbox_count > 0) {
    inbox_entry* e = &s->inbox[s->inbox_head];
    uint64_t decided = dccl_table_store_decided(store);
    if (e->epoch > decided) break;
    if (e->epoch < decided) { /* cannot happen: epochs are only decided from the inbox */
      DCCL_WARN(s->options.logger, "coordination: a table for epoch %llu arrived after it was decided; ignored",
                (unsigned long long)e->epoch);
    } else {
      dccl_table* t = dccl_table_store_begin(store);
      if (t == NULL) break; /* the hot path has not entered the previous epoch yet */
      if (e->full) dccl_table_fill(t, DCCL_ACTION_NCCL);
      else dccl_table_copy(t, dccl_table_store_latest(store));
      for (uint32_t k = 0; k < e->cells; k++) apply_cell(t, &s->inbox_cells[e->first + k]);
      if (dccl_table_store_commit(store, t, NULL) != 0) break;
    }
    s->inbox_head = (s->inbox_head + 1) % s->inbox_capacity;
    s->inbox_count--;
  }
  if (s->inbox_count == 0 || s->inbox[s->inbox_head].first > s->inbox_cells_capacity / 2) compact_inbox_cells(s);
  uint64_t limit = s->inbox_count > 0 ? s->inbox[s->inbox_head].epoch : s->received;
  if (s->leader_gone && s->inbox_count == 0) limit = UINT64_MAX; /* nothing will change any more */
  dccl_table_store_allow(store, limit);
}

static void worker_work(dccl_coord_session* s, uint64_t now) {
  if (!s->leader_gone) {
    if (s->conn == NULL && now >= s->retry_at_ns) find_leader(s, now);
    connection* c = s->conn;
    if (c != NULL && !c->closing && !c->connecting && c->peer_key != 0 && !s->joined && now >= s->retry_at_ns) {
      dccl_wire_join join = {(uint32_t)s->options.rank, (uint32_t)s->options.n_ranks, s->options.epoch_calls, s->received};
      send_simple(c, DCCL_MSG_JOIN, join.rank, s->options.comm_id, &join, &s->stats);
      s->joined = 1;
      s->stats.connections++;
    }
  }
  feed_store(s);
}

/* ---- the thread ---- */
/* What the service thread polls besides the epoll set of connections: the listeners and the wake pipe. */
typedef struct poll_set {
  struct pollfd* fds;
  int count;
  uint32_t capacity;
} poll_set;

static void poll_for(poll_set* set, int fd, short events) {
  if (dccl_grow_array((void**)&set->fds, &set->capacity, (uint32_t)set->count + 1, UINT32_MAX, sizeof(struct pollfd)) != 0)
    return; /* out of memory: not polled this time */
  set->fds[set->count++] = (struct pollfd){fd, events, 0};
}

/* What a session needs of the thread:
 *  - SESSION_BUSY: a round every POLL_NS, for its timers or for messages that wait for no event: a
 *    leader registering, leaving, or serving a worker its frozen table; a worker finding or joining its
 *    leader;
 *  - SESSION_FOLLOWS: its hot path's progress (a learning leader's decided epochs go to its workers; a
 *    worker commits each received table once its hot path entered the epoch before): a round every
 *    POLL_NS for ACTIVE_NS after the store last moved, then none until the store's bell rings;
 *  - SESSION_IDLE: only its connections' events. A frozen or fixed communicator whose workers have the
 *    table costs the thread nothing: at 200 us the loop kept a leader process at 7% of a core with one
 *    connection, 61% with 1000. */
typedef enum { SESSION_IDLE, SESSION_FOLLOWS, SESSION_BUSY } session_need;

static session_need session_needs(const dccl_coord_session* s) {
  if (!s->leader) {
    if (s->leader_gone) return s->inbox_count > 0 ? SESSION_FOLLOWS : SESSION_IDLE;
    return s->conn == NULL || !s->joined ? SESSION_BUSY : SESSION_FOLLOWS;
  }
  if (s->leaving || (s->options.registry[0] != '\0' && !s->registered)) return SESSION_BUSY;
  if (!s->options.frozen) return SESSION_FOLLOWS;
  for (int rank = 1; rank < expected_ranks(s); rank++)
    if (s->links[rank].conn != NULL && !s->links[rank].released) return SESSION_BUSY;
  return SESSION_IDLE;
}

/* Whether the store moved since the thread last looked (entered, decided): notes when. */
static int store_moved(dccl_coord_session* s, uint64_t entered, uint64_t decided, uint64_t now) {
  if (entered == s->seen_entered && decided == s->seen_decided) return 0;
  s->seen_entered = entered;
  s->seen_decided = decided;
  s->moved_ns = now;
  return 1;
}

/* Called with the lock held, before the wait: how long the thread may wait for an event. POLL_NS while a
 * session is busy, a connection is being made or holds a message waiting for room, or a session that
 * follows its hot path moved within ACTIVE_NS; else the idle period, with the bells of the sessions that
 * follow their hot paths armed (unless one moved meanwhile). */
static long service_period(uint64_t now) {
  int busy = 0;
  for (int i = 0; i < service.connection_count && !busy; i++)
    busy = service.connections[i]->connecting || service.connections[i]->input_stalled;
  for (int i = 0; i < service.session_count; i++) {
    dccl_coord_session* s = service.sessions[i];
    session_need need = session_needs(s);
    if (need == SESSION_BUSY) busy = 1;
    if (need != SESSION_FOLLOWS) continue;
    store_moved(s, dccl_table_store_entered(s->options.store), dccl_table_store_decided(s->options.store), now);
    if (now - s->moved_ns < ACTIVE_NS) busy = 1;
  }
  if (busy) return POLL_NS;
  int moved = 0;
  for (int i = 0; i < service.session_count; i++) {
    dccl_coord_session* s = service.sessions[i];
    if (session_needs(s) != SESSION_FOLLOWS) continue;
    uint64_t entered, decided;
    dccl_table_store_arm_bell(s->options.store, &entered, &decided);
    s->bell_armed = 1;
    moved |= store_moved(s, entered, decided, now);
  }
  if (moved) return POLL_NS; /* (the bells are disarmed after the wait) */
  return (long)(service.idle_period_ns != 0 ? service.idle_period_ns : IDLE_POLL_NS);
}

/* Called with the lock held, after the wait: disarms the bells service_period armed. */
static void disarm_bells(void) {
  for (int i = 0; i < service.session_count; i++) {
    dccl_coord_session* s = service.sessions[i];
    if (!s->bell_armed) continue; /* (the field shares a cache line with what the hot path reads) */
    s->bell_armed = 0;
    dccl_table_store_disarm_bell(s->options.store);
  }
}

static void wake_service(void) {
  if (service.wake[1] >= 0 && write(service.wake[1], "w", 1) < 0) {
    /* the pipe is full: the thread is being woken already */
  }
}

/* A store's bell (decision_table.h), rung by a hot path or a learner that moved it while the thread
 * slept: a non-blocking write (a full pipe means the thread is being woken already). The pipe outlives
 * every store whose bell it is (dccl_coord_leave clears the bell before the session leaves). A child
 * forked while the thread slept inherits armed bells but neither the thread nor, for sure, the pipe's
 * descriptor: its rings are dropped (getpid, on this rare path only). */
static void ring_service(void* context) {
  (void)context;
  if (getpid() != service.key_pid) return; /* a forked child's copy of a store: the pipe is its parent's */
  wake_service();
}

/* Reads from and writes to the connections the epoll set has ready. Each is still open: connections are
 * freed only by close_connection, which runs on this thread before the wait, and in dccl_coord_leave once
 * this thread has ended. Other threads, while the lock is free during the wait, add and remove sessions,
 * never connections. Those not taken now (more than fit) are ready again next round. */
static void ready_connections(uint64_t now) {
  struct epoll_event ready[256];
  int n = epoll_wait(service.epoll, ready, (int)(sizeof(ready) / sizeof(ready[0])), 0);
  for (int i = 0; i < n; i++) {
    connection* c = ready[i].data.ptr;
    if (c->connecting) continue;
    if (ready[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) read_input(c, now);
    if (ready[i].events & EPOLLOUT) flush(c);
  }
}

static void* service_main(void* argument) {
  (void)argument;
  poll_set set = {NULL, 0, 0};
  pthread_mutex_lock(&service.lock);
  while (!service.stop) {
    service.rounds++;
    uint64_t now = dccl_monotonic_ns();
    for (int i = 0; i < service.session_count; i++) {
      if (service.sessions[i]->leader) leader_work(service.sessions[i], now);
      else worker_work(service.sessions[i], now);
    }
    release_registry_if_unneeded(now);
    for (int i = 0; i < service.connection_count;) {
      connection* c = service.connections[i];
      if (c->connecting) {
        int state = dccl_transport_connected(c->fd);
        if (state == 1) c->connecting = 0;
        else if (state < 0) c->closing = 1;
      }
      if (!c->connecting && !c->closing) {
        if (c->input_stalled) handle_input(c, now); /* a message left waiting for room */
        if (c->out_length > 0) flush(c);
      }
      close_if_silent(c, now);
      if (c->closing) close_connection(c, now); /* removes it from the array */
      else i++;
    }
    set.count = 0;
    if (now >= service.accept_paused_until_ns) {
      for (int i = 0; i < service.session_count; i++)
        if (service.sessions[i]->leader && service.sessions[i]->listener >= 0)
          poll_for(&set, service.sessions[i]->listener, POLLIN);
      if (service.tcp_listener >= 0) poll_for(&set, service.tcp_listener, POLLIN);
      if (service.registry_listener >= 0) poll_for(&set, service.registry_listener, POLLIN);
    }
    /* The connections wait in the epoll set, level-triggered, for what each can take now. */
    for (int i = 0; i < service.connection_count; i++) {
      connection* c = service.connections[i];
      uint32_t events = (c->in_length < c->in_capacity ? EPOLLIN : 0) | (c->out_length > 0 || c->connecting ? EPOLLOUT : 0);
      struct epoll_event watch = {.events = events, .data.ptr = c};
      if (events != c->watched && epoll_ctl(service.epoll, EPOLL_CTL_MOD, c->fd, &watch) == 0) c->watched = events;
    }
    poll_for(&set, service.epoll, POLLIN);
    if (service.wake[0] >= 0) poll_for(&set, service.wake[0], POLLIN);
    struct pollfd* fds = set.fds;
    int n = set.count;
    long wait_ns = service_period(now);
    struct timespec period = {(time_t)(wait_ns / 1000000000L), wait_ns % 1000000000L};
    pthread_mutex_unlock(&service.lock);
    int ready = ppoll(fds, (nfds_t)n, &period, NULL);
    pthread_mutex_lock(&service.lock);
    disarm_bells();
    if (ready <= 0) continue;
    now = dccl_monotonic_ns();
    for (int i = 0; i < n; i++) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == service.wake[0]) {
        char drained[64];
        while (read(service.wake[0], drained, sizeof(drained)) > 0) {
        }
        continue;
      }
      if (fds[i].fd == service.epoll) {
        ready_connections(now);
        continue;
      }
      /* A listener. */
      int fd;
      while ((fd = dccl_transport_accept(fds[i].fd)) >= 0) add_connection(fd, 0, 0);
      if (out_of_files("cannot accept a connection"))
        service.accept_paused_until_ns = now + ACCEPT_PAUSE_NS; /* rather than poll a readable listener in a loop */
    }
  }
  pthread_mutex_unlock(&service.lock);
  free(set.fds);
  return NULL;
}

/* The thread's epoll set and wake pipe, when it has ended or could not start. */
static void close_thread_descriptors(void) {
  if (service.wake[0] >= 0) close(service.wake[0]);
  if (service.wake[1] >= 0) close(service.wake[1]);
  if (service.epoll >= 0) close(service.epoll);
  service.wake[0] = service.wake[1] = service.epoll = -1;
}

/* Called with the lock held. */
static int start_service(const dccl_coord_options* o, char* error, size_t error_size) {
  if (service.running) return 0;
  if (service.process_key == 0 || service.key_pid != getpid()) {
    service.key_pid = getpid();
    dccl_rng_seed(&service.rng, dccl_mix64((uint64_t)getpid() ^ dccl_monotonic_ns()));
    service.process_key = dccl_mix64(dccl_monotonic_ns() ^ ((uint64_t)getpid() << 32)) | 1;
  }
  service.secret = o->secret;
  service.logger = o->logger != NULL ? *o->logger : (dccl_logger){NULL};
  service.stop = 0;
  service.largest_output = 0;
  service.epoll = epoll_create1(EPOLL_CLOEXEC);
  if (service.epoll < 0) {
    snprintf(error, error_size, "cannot make the coordination thread's epoll set: %s", strerror(errno));
    return -1;
  }
  if (pipe2(service.wake, O_NONBLOCK | O_CLOEXEC) != 0) {
    snprintf(error, error_size, "cannot make the coordination thread's wake-up pipe: %s", strerror(errno));
    service.wake[0] = service.wake[1] = -1;
    close_thread_descriptors();
    return -1;
  }
  int rc = pthread_create(&service.thread, NULL, service_main, NULL);
  if (rc != 0) {
    snprintf(error, error_size, "cannot start the coordination thread (error %d)", rc);
    close_thread_descriptors();
    return -1;
  }
  service.running = 1;
  return 0;
}

_Static_assert(DCCL_WIRE_HOST_MAX == DCCL_HOST_MAX, "the settings accept the registry hosts the service can use");

/* Without the lock (a name's lookup may take long, and the thread would wait for it): the registry's
 * listening socket if this process can host it (the address is this machine's and free), else -1; -2
 * when the address is no host:port; -3 when not tried: this process hosts the registry already, or is
 * connected to it. */
static int try_registry_listener(const dccl_coord_options* o, char* error, size_t error_size) {
  pthread_mutex_lock(&service.lock);
  int wanted = service.registry_listener < 0 && service.registry_conn == NULL;
  pthread_mutex_unlock(&service.lock);
  if (!wanted) return -3;
  char host[DCCL_WIRE_HOST_MAX + 1];
  uint16_t port;
  if (dccl_parse_host_port(o->registry, host, sizeof(host), &port) != 0) {
    snprintf(error, error_size, "coordinator address '%s' is not host:port or [IPv6 address]:port", o->registry);
    return -2;
  }
  int every_interface;
  int fd = dccl_transport_listen_registry(host, port, &every_interface); /* fails unless ours and free */
  if (fd >= 0)
    DCCL_INFO(o->logger, "coordination registry listening at %s%s", o->registry,
              every_interface ? " (on every interface: that name is this machine)" : "");
  return fd;
}

/* Called with the lock held: TCP listener for a leader, and the registry's listener `registry_fd` (from
 * try_registry_listener; -1: none) unless the process has one already. */
static int setup_tcp(const dccl_coord_options* o, int leader, int registry_fd, char* error, size_t error_size) {
  if (service.registry[0] == '\0') snprintf(service.registry, sizeof(service.registry), "%s", o->registry);
  if (registry_fd >= 0) {
    if (service.registry_listener < 0) service.registry_listener = registry_fd;
    else close(registry_fd); /* another communicator's bound it meanwhile */
  }
  if (leader && service.tcp_listener < 0) {
    service.tcp_listener = dccl_transport_listen_tcp(NULL, 0, &service.tcp_port);
    if (service.tcp_listener < 0) {
      snprintf(error, error_size, "cannot listen on TCP: %s", strerror(errno));
      return -1;
    }
  }
  return 0;
}

static dccl_coord_session* new_session(const dccl_coord_options* o, int leader) {
  dccl_coord_session* s = calloc(1, sizeof(dccl_coord_session));
  if (s == NULL) return NULL;
  s->leader = leader;
  s->options = *o;
  s->token = dccl_wire_token(o->comm_id, o->secret);
  s->listener = -1;
  dccl_transport_local_name(s->token, s->local_name, sizeof(s->local_name));
  if (o->registry[0] == '\0')
    snprintf(s->leader_name, sizeof(s->leader_name), "rank 0 of comm %016llx (unix socket @%s on this node)",
             (unsigned long long)o->comm_id, s->local_name);
  else
    snprintf(s->leader_name, sizeof(s->leader_name), "rank 0 of comm %016llx (found through the registry at %s)",
             (unsigned long long)o->comm_id, o->registry);
  return s;
}

static int add_session(dccl_coord_session* s, char* error, size_t error_size) {
  int registry_fd = -1;
  for (int attempt = 0;; attempt++) {
    if (s->options.registry[0] != '\0' && (registry_fd = try_registry_listener(&s->options, error, error_size)) == -2)
      return -1;
    pthread_mutex_lock(&service.lock);
    /* The last session just left and the thread is ending: a session added now would have no thread. */
    while (service.running && service.stop) pthread_cond_wait(&service.changed, &service.lock);
    /* Not tried because the ending service had a registry, which it has closed since: once more. */
    if (registry_fd != -3 || attempt > 0 || service.registry_listener >= 0 || service.registry_conn != NULL) break;
    pthread_mutex_unlock(&service.lock);
  }
  int rc = -1;
  if (dccl_grow_array((void**)&service.sessions, &service.session_capacity, (uint32_t)service.session_count + 1,
                      UINT32_MAX, sizeof(dccl_coord_session*)) != 0) {
    snprintf(error, error_size, "out of memory for %d coordinated communicators", service.session_count + 1);
    if (registry_fd >= 0) close(registry_fd);
  } else if (s->options.registry[0] != '\0' && setup_tcp(&s->options, s->leader, registry_fd, error, error_size) != 0) {
  } else if (start_service(&s->options, error, error_size) == 0) {
    service.sessions[service.session_count++] = s;
    wake_service();
    rc = 0;
  }
  pthread_mutex_unlock(&service.lock);
  return rc;
}

static void free_session(dccl_coord_session* s) {
  if (s->leader) {
    if (s->history != NULL) dccl_history_free(s->history);
    free(s->history);
    pthread_mutex_destroy(&s->history_lock);
    free(s->links);
  } else {
    free(s->inbox);
    free(s->inbox_cells);
  }
  free(s);
}

/* A communicator made again with the id of one this process still leads while that one leaves (NCCL
 * reuses an id only for a new communicator of the same ranks): the new leader waits until the old one is
 * done (at most LEAVE_NS), or its listening name, its registration and its workers' joins would be taken
 * for the old one's. */
static void wait_for_ending_leader(uint64_t comm_id) {
  pthread_mutex_lock(&service.lock);
  for (;;) {
    dccl_coord_session* old = find_session(1, comm_id, 0);
    if (old == NULL || !old->leaving || !service.running) break;
    pthread_cond_wait(&service.changed, &service.lock);
  }
  pthread_mutex_unlock(&service.lock);
}

dccl_coord_session* dccl_coord_lead(const dccl_coord_options* o, char* error, size_t error_size) {
  wait_for_ending_leader(o->comm_id);
  dccl_coord_session* s = new_session(o, 1);
  if (s == NULL) {
    snprintf(error, error_size, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&s->history_lock, NULL);
  s->links = calloc((size_t)o->n_ranks, sizeof(worker_link));
  s->history = malloc(sizeof(dccl_history));
  s->started_ns = dccl_monotonic_ns();
  if (s->links == NULL || s->history == NULL ||
      dccl_history_init(s->history, dccl_table_store_latest(o->store), HISTORY_ENTRIES, HISTORY_CELLS) != 0) {
    snprintf(error, error_size, "out of memory");
    free_session(s);
    return NULL;
  }
  if (o->registry[0] == '\0') {
    s->listener = dccl_transport_listen_local(s->local_name);
    if (s->listener < 0) {
      snprintf(error, error_size, "cannot listen on @%s: %s (is another leader of this communicator running?)",
               s->local_name, strerror(errno));
      free_session(s);
      return NULL;
    }
  }
  /* Before the thread can see the session. A frozen leader's session never follows its hot path (its
   * table never changes), so its store has no bell and its hot path pays nothing for one. */
  if (!o->frozen) dccl_table_store_set_bell(o->store, ring_service, NULL);
  if (add_session(s, error, error_size) != 0) {
    dccl_table_store_set_bell(o->store, NULL, NULL);
    if (s->listener >= 0) close(s->listener);
    free_session(s);
    return NULL;
  }
  return s;
}

dccl_coord_session* dccl_coord_follow(const dccl_coord_options* o, char* error, size_t error_size) {
  dccl_coord_session* s = new_session(o, 0);
  if (s == NULL) {
    snprintf(error, error_size, "out of memory");
    return NULL;
  }
  s->inbox = calloc(INBOX_INITIAL_ENTRIES, sizeof(inbox_entry));
  s->inbox_cells = calloc(INBOX_INITIAL_CELLS, sizeof(dccl_wire_cell));
  s->inbox_capacity = INBOX_INITIAL_ENTRIES;
  s->inbox_cells_capacity = INBOX_INITIAL_CELLS;
  if (s->inbox == NULL || s->inbox_cells == NULL) {
    snprintf(error, error_size, "out of memory");
    free_session(s);
    return NULL;
  }
  dccl_table_store_follow(o->store);
  dccl_table_store_set_bell(o->store, ring_service, NULL); /* before the thread can see the session */
  if (add_session(s, error, error_size) != 0) {
    dccl_table_store_set_bell(o->store, NULL, NULL);
    free_session(s);
    return NULL;
  }
  return s;
}

int dccl_coord_commit(void* context, dccl_table_store* store, dccl_table* table) {
  dccl_coord_session* s = context;
  if (table == NULL) return dccl_table_store_commit(store, NULL, NULL);
  pthread_mutex_lock(&s->history_lock);
  uint64_t next = dccl_table_store_decided(store), epoch = next;
  int rc = -1;
  if (dccl_history_append(s->history, next, table) >= 0) {
    rc = dccl_table_store_commit(store, table, &epoch);
    if (rc != 0) dccl_history_drop_last(s->history);
    else s->history->entries[s->history->count - 1].epoch = epoch; /* the hot path may have decided `next` */
    if (rc == 0) s->stats.changes++;
  }
  pthread_mutex_unlock(&s->history_lock);
  return rc;
}

const char* dccl_coord_leader_name(const dccl_coord_session* s) { return s->leader_name; }

void dccl_coord_leave(dccl_coord_session* s, dccl_coord_stats* stats) {
  if (s == NULL) return;
  pthread_mutex_lock(&service.lock);
  /* Its hot path and learner have stopped; the thread, which reads the bell when it commits a worker's
   * tables, holds the lock while it runs the session. */
  dccl_table_store_set_bell(s->options.store, NULL, NULL);
  if (s->leader) {
    s->leaving = 1;
    s->leave_started_ns = dccl_monotonic_ns();
    wake_service();
    while (!s->done && service.running) pthread_cond_wait(&service.changed, &service.lock);
    s->stats.epochs = dccl_table_store_decided(s->options.store);
  }
  if (stats != NULL) *stats = s->stats;
  for (int i = 0; i < service.session_count; i++)
    if (service.sessions[i] == s) {
      service.sessions[i] = service.sessions[--service.session_count];
      break;
    }
  int last = service.session_count == 0 && service.running;
  if (last) {
    service.stop = 1;
    wake_service();
  }
  pthread_mutex_unlock(&service.lock);
  if (last) {
    pthread_join(service.thread, NULL);
    pthread_mutex_lock(&service.lock);
    uint64_t now = dccl_monotonic_ns();
    while (service.connection_count > 0) close_connection(service.connections[0], now);
    /* Nothing of the service outlives its last session (the library may be unloaded next). */
    free(service.connections);
    free(service.sessions);
    service.connections = NULL;
    service.sessions = NULL;
    service.connection_capacity = service.session_capacity = 0;
    close_thread_descriptors(); /* after the connections, which leave the epoll set as they close */
    if (service.tcp_listener >= 0) close(service.tcp_listener);
    if (service.registry_listener >= 0) close(service.registry_listener);
    service.tcp_listener = service.registry_listener = -1;
    service.registry_count = 0;
    service.registry[0] = '\0';
    service.registry_backoff_ns = service.registry_retry_at_ns = 0;
    service.registry_foreign_warned = 0;
    service.out_of_files_warned = 0;
    service.silent_peer_warned = 0;
    service.accept_paused_until_ns = 0;
    service.running = 0;
    pthread_cond_broadcast(&service.changed); /* sessions waiting to be added */
    pthread_mutex_unlock(&service.lock);
  }
  if (s->listener >= 0) close(s->listener);
  free_session(s);
}

void dccl_coord_get_stats(dccl_coord_session* s, dccl_coord_stats* stats) {
  pthread_mutex_lock(&service.lock);
  *stats = s->stats;
  if (s->leader) stats->epochs = dccl_table_store_decided(s->options.store);
  pthread_mutex_unlock(&service.lock);
}

size_t dccl_coord_memory_bytes(dccl_coord_session* s) {
  size_t bytes = sizeof(*s);
  pthread_mutex_lock(&service.lock); /* a worker's inbox grows on the service thread */
  if (s->leader) {
    pthread_mutex_lock(&s->history_lock); /* the learner's changes grow the history */
    bytes += dccl_history_memory_bytes(s->history) + (size_t)s->options.n_ranks * sizeof(worker_link);
    pthread_mutex_unlock(&s->history_lock);
  } else {
    bytes += (size_t)s->inbox_capacity * sizeof(inbox_entry) + (size_t)s->inbox_cells_capacity * sizeof(dccl_wire_cell);
  }
  pthread_mutex_unlock(&service.lock);
  return bytes;
}

void dccl_coord_service_counters(uint64_t* connections, uint64_t* rejected) {
  pthread_mutex_lock(&service.lock);
  *connections = service.connections_made;
  *rejected = service.rejected;
  pthread_mutex_unlock(&service.lock);
}

size_t dccl_coord_service_buffer_bytes(size_t* largest_output) {
  pthread_mutex_lock(&service.lock);
  size_t bytes = service.buffer_bytes;
  if (largest_output != NULL) *largest_output = service.largest_output;
  pthread_mutex_unlock(&service.lock);
  return bytes;
}

uint64_t dccl_coord_service_rounds(void) {
  pthread_mutex_lock(&service.lock);
  uint64_t rounds = service.rounds;
  pthread_mutex_unlock(&service.lock);
  return rounds;
}

int dccl_coord_service_open_connections(void) {
  pthread_mutex_lock(&service.lock);
  int open = service.connection_count;
  pthread_mutex_unlock(&service.lock);
  return open;
}

void dccl_coord_service_set_idle_period(double seconds) {
  pthread_mutex_lock(&service.lock);
  service.idle_period_ns = seconds > 0 ? (uint64_t)(seconds * 1e9) : 0;
  pthread_mutex_unlock(&service.lock);
}

void dccl_coord_service_set_hello_timeout(double seconds) {
  pthread_mutex_lock(&service.lock);
  service.hello_timeout_ns = seconds > 0 ? (uint64_t)(seconds * 1e9) : 0;
  pthread_mutex_unlock(&service.lock);
}
