/* coord/transport.h: the sockets of the coordination layer: Unix domain sockets in the abstract
 * namespace (one node, no files, no configuration) and TCP (across nodes). All sockets are
 * non-blocking and close-on-exec. */
#ifndef DYNAMICCL_COORD_TRANSPORT_H
#define DYNAMICCL_COORD_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

/* The abstract socket name of a communicator's leader on this node ("dynamiccl-<token>"). */
void dccl_transport_local_name(uint64_t token, char* name, size_t size);
/* Listens on an abstract Unix socket; returns the fd or -1 (errno set). */
int dccl_transport_listen_local(const char* name);
/* Starts connecting to an abstract Unix socket; returns the fd or -1 (errno: ECONNREFUSED or
 * ENOENT-like when nobody listens yet). */
int dccl_transport_connect_local(const char* name);

/* TCP, IPv4 and IPv6 alike: hosts are names or numeric addresses of either family (without brackets;
 * "host:port" and "[IPv6 address]:port" are parsed by dccl_parse_host_port, core/settings.h). */
/* Listens on TCP: on `host` (its first address; NULL: every interface, IPv6 and IPv4 on one socket
 * where the machine has IPv6, else IPv4) and `port` (0: any). Returns the fd or -1; the port chosen in
 * *bound_port. */
int dccl_transport_listen_tcp(const char* host, uint16_t port, uint16_t* bound_port);
/* Listens for the registry at host:port. A numeric address is bound as it is. A name that resolves
 * to an address of this machine binds every interface (as listen_tcp with no host), so that peers
 * reaching this machine by any of its addresses get through: the name may resolve differently here
 * (Debian's /etc/hosts maps the machine's own name to 127.0.1.1) than on the other nodes. Another
 * machine's name: -1, errno EADDRNOTAVAIL. *every_interface says which was done. */
int dccl_transport_listen_registry(const char* host, uint16_t port, int* every_interface);
/* Starts a TCP connection to the first address of `host` that does not fail at once, IPv4 addresses
 * first; returns the fd or -1. Completion shows as writability (check with dccl_transport_connected). */
int dccl_transport_connect_tcp(const char* host, uint16_t port);
/* The same over resolved addresses (tests give their own list). */
struct addrinfo;
int dccl_transport_connect_first(const struct addrinfo* addresses);
/* 1 when a connection has completed, 0 while in progress, -1 when it failed. */
int dccl_transport_connected(int fd);
/* Whether `host` is a numeric loopback address (127.0.0.0/8, ::1). */
int dccl_transport_is_loopback(const char* host);
/* The local address of a connected TCP socket, as numeric text (an IPv4 peer of an IPv6 socket in its
 * IPv4 form; a link-local IPv6 address with its "%interface"). */
int dccl_transport_local_address(int fd, char* host, size_t size);
/* Who is at the other end of a socket, for log lines: "host:port", "a process on this node" (Unix
 * sockets), or "an unreachable peer" (not connected). */
void dccl_transport_peer_name(int fd, char* text, size_t size);
/* Accepts one connection (non-blocking); -1 when none. */
int dccl_transport_accept(int listener);

#endif
