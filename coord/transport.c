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

int dccl_transport_parse_address(const char* text, char* host, size_t host_size, uint16_t* port) {
  const char* colon = strrchr(text, ':');
  if (colon == NULL || colon == text || (size_t)(colon - text) >= host_size) return -1;
  char* end;
  long value = strtol(colon + 1, &end, 10);
  if (*end != '\0' || end == colon + 1 || value <= 0 || value > 65535) return -1;
  memcpy(host, text, (size_t)(colon - text));
  host[colon - text] = '\0';
  *port = (uint16_t)value;
  return 0;
}

static int resolve(const char* host, uint16_t port, struct sockaddr_in* address) {
  memset(address, 0, sizeof(*address));
  address->sin_family = AF_INET;
  address->sin_port = htons(port);
  if (host == NULL || host[0] == '\0') {
    address->sin_addr.s_addr = htonl(INADDR_ANY);
    return 0;
  }
  if (inet_pton(AF_INET, host, &address->sin_addr) == 1) return 0;
  struct addrinfo hints, *found = NULL;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, NULL, &hints, &found) != 0 || found == NULL) return -1;
  address->sin_addr = ((struct sockaddr_in*)found->ai_addr)->sin_addr;
  freeaddrinfo(found);
  return 0;
}

int dccl_transport_listen_tcp(const char* host, uint16_t port, uint16_t* bound_port) {
  struct sockaddr_in address;
  if (resolve(host, port, &address) != 0) {
    errno = EADDRNOTAVAIL;
    return -1;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, (struct sockaddr*)&address, sizeof(address)) != 0 || listen(fd, 128) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  socklen_t length = sizeof(address);
  getsockname(fd, (struct sockaddr*)&address, &length);
  if (bound_port != NULL) *bound_port = ntohs(address.sin_port);
  return fd;
}

int dccl_transport_connect_tcp(const char* host, uint16_t port) {
  struct sockaddr_in address;
  if (resolve(host, port, &address) != 0) {
    errno = EHOSTUNREACH;
    return -1;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (connect(fd, (struct sockaddr*)&address, sizeof(address)) != 0 && errno != EINPROGRESS) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
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

int dccl_transport_local_address(int fd, char* host, size_t size) {
  struct sockaddr_in address;
  socklen_t length = sizeof(address);
  if (getsockname(fd, (struct sockaddr*)&address, &length) != 0 || address.sin_family != AF_INET) return -1;
  return inet_ntop(AF_INET, &address.sin_addr, host, (socklen_t)size) != NULL ? 0 : -1;
}

void dccl_transport_peer_name(int fd, char* text, size_t size) {
  struct sockaddr_storage peer;
  socklen_t length = sizeof(peer);
  char host[NI_MAXHOST], port[NI_MAXSERV];
  if (getpeername(fd, (struct sockaddr*)&peer, &length) != 0)
    snprintf(text, size, "an unreachable peer");
  else if (peer.ss_family == AF_UNIX)
    snprintf(text, size, "a process on this node");
  else if (getnameinfo((struct sockaddr*)&peer, length, host, sizeof(host), port, sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV) == 0)
    snprintf(text, size, peer.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
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
