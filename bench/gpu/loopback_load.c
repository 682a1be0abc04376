/* bench/gpu/loopback_load.c: a traffic generator on loopback, to congest NCCL's socket transport
 * during a learning run: `streams` TCP connections to 127.0.0.1 send as fast as they can for
 * `seconds` (0: until SIGTERM, which stops it and its children). Usage: loopback_load [streams (4)] [seconds (0)] */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sink(int listener) {
  static char buffer[1 << 20];
  for (;;) {
    int fd = accept(listener, NULL, NULL);
    if (fd < 0) continue;
    if (fork() == 0) {
      while (read(fd, buffer, sizeof(buffer)) > 0) {
      }
      _exit(0);
    }
    close(fd);
  }
}

/* Stopping: the whole group (sink, senders), then this process, cleanly. */
static void stop(int signal_number) {
  (void)signal_number;
  signal(SIGTERM, SIG_IGN);
  kill(0, SIGTERM);
  _exit(0);
}

int main(int argc, char** argv) {
  int streams = argc > 1 ? atoi(argv[1]) : 4;
  double seconds = argc > 2 ? atof(argv[2]) : 0;
  setpgid(0, 0); /* its own process group: stopping it stops its children and nothing else */
  signal(SIGCHLD, SIG_IGN);
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address;
  memset(&address, 0, sizeof(address));
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (listener < 0 || bind(listener, (struct sockaddr*)&address, sizeof(address)) != 0 || listen(listener, 64) != 0 ||
      getsockname(listener, (struct sockaddr*)&address, &length) != 0) {
    perror("loopback_load");
    return 1;
  }
  pid_t server = fork();
  if (server == 0) sink(listener);
  close(listener);
  static char buffer[1 << 20];
  memset(buffer, 0x5A, sizeof(buffer));
  for (int s = 0; s < streams; s++)
    if (fork() == 0) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      if (fd < 0 || connect(fd, (struct sockaddr*)&address, sizeof(address)) != 0) _exit(1);
      for (;;)
        if (write(fd, buffer, sizeof(buffer)) < 0) _exit(0);
    }
  fprintf(stderr, "loopback_load: %d streams to 127.0.0.1:%d%s\n", streams, ntohs(address.sin_port),
          seconds > 0 ? "" : " until killed");
  signal(SIGTERM, stop);
  signal(SIGINT, stop);
  if (seconds > 0) {
    struct timespec t = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    nanosleep(&t, NULL);
    stop(0);
  }
  for (;;) pause();
}
