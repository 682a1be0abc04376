/* coord/transport.c: non-blocking abstract Unix and TCP sockets for the coordination layer. */
#include "transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

void dccl_transport_local_name(uint64_t token, char* name, size_t size) {
  snprintf(name, size, "dynamiccl-%016llx", (unsigned long long)token);
}

static socklen_t local_address(const char* name, struct sockaddr_un* address) {
  memset(address, 0, sizeof(*address));
  address->sun_family = AF_UNIX;
  size_t n = strlen(name);
  if (n > sizeof(address->sun_path) - 1) n = sizeof(address->sun_path) - 1;
  memcpy(address->sun_path + 1, name, n); /* leading NUL: the abstract namespace */
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

int dccl_transport_listen_local(const char* name) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_un address;
  socklen_t length = local_address(name, &address);
  if (bind(fd, (struct sockaddr*)&address, length) != 0 || listen(fd, 64) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

int dccl_transport_connect_local(const char* name) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_un address;
  socklen_t length = local_address(name, &address);
  if (connect(fd, (struct sockaddr*)&address, length) != 0 && errno != EINPROGRESS && errno != EAGAIN) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

/* The addresses of `host` (a name, or an IPv4 or IPv6 address) for TCP, both families; NULL on failure. */
static struct addrinfo* resolve(const char* host, uint16_t port) {
  struct addrinfo hints, *found = NULL;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  char service[8];
  snprintf(service, sizeof(service), "%u", port);
  return getaddrinfo(host, service, &hints, &found) == 0 ? found : NULL;
}

/* A listening socket bound to `address`; -1 with errno set. An IPv6 wildcard also takes IPv4 peers. */
static int listen_at(const struct sockaddr* address, socklen_t length) {
  int fd = socket(address->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (address->sa_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
  if (bind(fd, address, length) != 0 || listen(fd, 128) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

static uint16_t port_of(const struct sockaddr_storage* address) {
  return ntohs(address->ss_family == AF_INET6 ? ((const struct sockaddr_in6*)address)->sin6_port
                                              : ((const struct sockaddr_in*)address)->sin_port);
}

/* The port a socket is bound to. */
static uint16_t bound_port_of(int fd) {
  struct sockaddr_storage address;
  socklen_t length = sizeof(address);
  return getsockname(fd, (struct sockaddr*)&address, &length) == 0 ? port_of(&address) : 0;
}

int dccl_transport_listen_tcp(const char* host, uint16_t port, uint16_t* bound_port) {
  int fd;
  if (host == NULL || host[0] == '\0') { /* every interface: IPv6 and IPv4 on one socket, or IPv4 alone */
    struct sockaddr_in6 any6 = {.sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = IN6ADDR_ANY_INIT};
    fd = listen_at((struct sockaddr*)&any6, sizeof(any6));
    if (fd < 0 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL)) {
      struct sockaddr_in any4 = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr = {htonl(INADDR_ANY)}};
      fd = listen_at((struct sockaddr*)&any4, sizeof(any4));
    }
  } else {
    struct addrinfo* found = resolve(host, port);
    if (found == NULL) {
      errno = EADDRNOTAVAIL;
      return -1;
    }
    fd = listen_at(found->ai_addr, found->ai_addrlen);
    int saved = errno;
    freeaddrinfo(found);
    errno = saved;
  }
  if (fd >= 0 && bound_port != NULL) *bound_port = bound_port_of(fd);
  return fd;
}

/* Whether `address` is one of this machine's: a socket binds to it. */
static int is_local(const struct addrinfo* address) {
  int fd = socket(address->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  struct sockaddr_storage any_port;
  memcpy(&any_port, address->ai_addr, address->ai_addrlen);
  if (any_port.ss_family == AF_INET6) ((struct sockaddr_in6*)&any_port)->sin6_port = 0;
  else ((struct sockaddr_in*)&any_port)->sin_port = 0;
  int local = bind(fd, (struct sockaddr*)&any_port, address->ai_addrlen) == 0;
  close(fd);
  return local;
}

int dccl_transport_listen_registry(const char* host, uint16_t port, int* every_interface) {
  *every_interface = 0;
  struct in6_addr numeric;
  if (inet_pton(AF_INET, host, &numeric) == 1 || inet_pton(AF_INET6, host, &numeric) == 1)
    return dccl_transport_listen_tcp(host, port, NULL);
  struct addrinfo* found = resolve(host, port);
  int local = 0;
  for (struct addrinfo* a = found; a != NULL && !local; a = a->ai_next) local = is_local(a);
  if (found != NULL) freeaddrinfo(found);
  if (!local) {
    errno = EADDRNOTAVAIL; /* another machine's name: a process there hosts the registry */
    return -1;
  }
  *every_interface = 1;
  return dccl_transport_listen_tcp(NULL, port, NULL);
}

int dccl_transport_connect_tcp(const char* host, uint16_t port) {
  struct addrinfo* found = resolve(host, port);
  if (found == NULL) {
    errno = EHOSTUNREACH;
    return -1;
  }
  int fd = dccl_transport_connect_first(found);
  int saved = errno;
  freeaddrinfo(found);
  errno = saved;
  return fd;
}

/* Starts a non-blocking connection to one address; the fd, or -1 when it fails at once. */
static int start_connect(const struct addrinfo* a) {
  int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

int dccl_transport_connect_first(const struct addrinfo* found) {
  /* IPv4 addresses first: a name with both kinds where IPv6 is not routed between the nodes fails only
   * later, asynchronously, and would be retried on IPv6 for ever. */
  int fd = -1;
  for (const struct addrinfo* a = found; a != NULL && fd < 0; a = a->ai_next)
    if (a->ai_family == AF_INET) fd = start_connect(a);
  for (const struct addrinfo* a = found; a != NULL && fd < 0; a = a->ai_next)
    if (a->ai_family != AF_INET) fd = start_connect(a);
  return fd;
}

int dccl_transport_connected(int fd) {
  int error = 0;
  socklen_t length = sizeof(error);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return -1;
  if (error == EINPROGRESS || error == EALREADY) return 0;
  if (error != 0) {
    errno = error;
    return -1;
  }
  struct sockaddr_storage peer;
  length = sizeof(peer);
  return getpeername(fd, (struct sockaddr*)&peer, &length) == 0 ? 1 : 0;
}

/* The numeric host of a TCP address ("::ffff:10.0.0.1", an IPv4 peer of an IPv6 socket, as "10.0.0.1").
 * Returns its family, or -1. */
static int numeric_host(const struct sockaddr_storage* address, socklen_t length, char* host, size_t size) {
  if (address->ss_family == AF_INET6) {
    const struct sockaddr_in6* a6 = (const struct sockaddr_in6*)address;
    if (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {
      struct in_addr v4;
      memcpy(&v4, a6->sin6_addr.s6_addr + 12, sizeof(v4));
      return inet_ntop(AF_INET, &v4, host, (socklen_t)size) != NULL ? AF_INET : -1;
    }
  } else if (address->ss_family != AF_INET) {
    return -1;
  }
  if (getnameinfo((const struct sockaddr*)address, length, host, (socklen_t)size, NULL, 0, NI_NUMERICHOST) != 0) return -1;
  return address->ss_family;
}

int dccl_transport_is_loopback(const char* host) {
  struct in_addr v4;
  struct in6_addr v6;
  if (inet_pton(AF_INET, host, &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  if (inet_pton(AF_INET6, host, &v6) != 1) return 0;
  return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
}

int dccl_transport_local_address(int fd, char* host, size_t size) {
  struct sockaddr_storage address;
  socklen_t length = sizeof(address);
  if (getsockname(fd, (struct sockaddr*)&address, &length) != 0) return -1;
  return numeric_host(&address, length, host, size) >= 0 ? 0 : -1;
}

void dccl_transport_peer_name(int fd, char* text, size_t size) {
  struct sockaddr_storage peer;
  socklen_t length = sizeof(peer);
  char host[NI_MAXHOST];
  int family = -1;
  if (getpeername(fd, (struct sockaddr*)&peer, &length) != 0)
    snprintf(text, size, "an unreachable peer");
  else if (peer.ss_family == AF_UNIX)
    snprintf(text, size, "a process on this node");
  else if ((family = numeric_host(&peer, length, host, sizeof(host))) >= 0)
    snprintf(text, size, family == AF_INET6 ? "[%s]:%u" : "%s:%u", host, port_of(&peer));
  else
    snprintf(text, size, "an unknown peer");
}

int dccl_transport_accept(int listener) {
  int fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* fails harmlessly on Unix sockets */
  }
  return fd;
}
