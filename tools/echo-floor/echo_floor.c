/* heartwheel-echo-floor: the kernel's price of an echo, what any echo server
 * pays before its own code runs. One thread, one level-triggered epoll set,
 * per readable socket one read() into a stack buffer and one write() of what
 * came; nothing else (no timers, no statistics, no allocation per message).
 * tools/echo-server/echo_compare.py runs it beside heartwheel-echo in the
 * same run (README.md here).
 *
 * Usage: heartwheel-echo-floor [--listen HOST:PORT]   (default 127.0.0.1:0)
 * Prints `listening on HOST:PORT` (the real port) once it listens; SIGTERM or
 * SIGINT ends it with status 0; a bad argument or a failed listen exits 2 / 1
 * with one line on stderr.
 *
 * A write the socket cannot take whole (the peer stopped reading) keeps the
 * rest in a heap buffer and stops reading that socket until EPOLLOUT drains
 * it: the echo loses no byte, and a 64-byte echo never gets there. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

enum { max_events = 256, read_size = 65536 };

/* The unsent rest of one socket's echo, indexed by descriptor. */
struct pending {
  char* data;
  size_t size;
};

static volatile sig_atomic_t stop_requested;
static struct pending* pendings;
static size_t pendings_size;

static void on_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

static int parse_listen(const char* text, struct sockaddr_in* addr) {
  char host[64];
  const char* colon = strrchr(text, ':');
  if (colon == NULL || (size_t)(colon - text) >= sizeof host) return -1;
  memcpy(host, text, (size_t)(colon - text));
  host[colon - text] = '\0';
  char* end = NULL;
  long port = strtol(colon + 1, &end, 10);
  if (*end != '\0' || port < 0 || port > 65535) return -1;
  memset(addr, 0, sizeof *addr);
  addr->sin_family = AF_INET;
  addr->sin_port = htons((unsigned short)port);
  return inet_pton(AF_INET, host, &addr->sin_addr) == 1 ? 0 : -1;
}

static struct pending* pending_of(int fd) {
  if ((size_t)fd >= pendings_size) {
    size_t size = pendings_size ? pendings_size : 1024;
    while (size <= (size_t)fd) size *= 2;
    struct pending* grown = realloc(pendings, size * sizeof *grown);
    if (grown == NULL) return NULL;
    memset(grown + pendings_size, 0, (size - pendings_size) * sizeof *grown);
    pendings = grown;
    pendings_size = size;
  }
  return &pendings[fd];
}

static void close_socket(int fd) {
  if ((size_t)fd < pendings_size) {
    free(pendings[fd].data);
    pendings[fd].data = NULL;
    pendings[fd].size = 0;
  }
  close(fd); /* also leaves the epoll set */
}

/* Keeps data[0..size) to send when the socket is writable again. */
static int keep_rest(int ep, int fd, const char* data, size_t size) {
  struct pending* p = pending_of(fd);
  if (p == NULL || (p->data = malloc(size)) == NULL) return -1;
  memcpy(p->data, data, size);
  p->size = size;
  struct epoll_event ev = {.events = EPOLLOUT, .data.fd = fd};
  return epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
}

static void on_writable(int ep, int fd) {
  struct pending* p = pending_of(fd);
  ssize_t n = write(fd, p->data, p->size);
  if (n < 0 && errno == EAGAIN) return;
  if (n < 0) {
    close_socket(fd);
    return;
  }
  if ((size_t)n < p->size) {
    memmove(p->data, p->data + n, p->size - (size_t)n);
    p->size -= (size_t)n;
    return;
  }
  free(p->data);
  p->data = NULL;
  p->size = 0;
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
  if (epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev) != 0) close_socket(fd);
}

static void on_readable(int ep, int fd) {
  char buf[read_size];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0 && errno == EAGAIN) return;
  if (n <= 0) {
    close_socket(fd);
    return;
  }
  ssize_t w = write(fd, buf, (size_t)n);
  if (w < 0 && errno != EAGAIN) {
    close_socket(fd);
    return;
  }
  if (w < 0) w = 0;
  if (w < n && keep_rest(ep, fd, buf + w, (size_t)(n - w)) != 0) close_socket(fd);
}

static void on_acceptable(int ep, int listener) {
  for (;;) {
    int fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return; /* EAGAIN, or EMFILE: the next turn tries again */
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* as heartwheel's sockets */
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) close(fd);
  }
}

int main(int argc, char** argv) {
  struct sockaddr_in addr;
  const char* listen_text = "127.0.0.1:0";
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc) {
      listen_text = argv[++i];
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf("usage: heartwheel-echo-floor [--listen HOST:PORT]  (default 127.0.0.1:0)\n"
             "A bare epoll echo server: the floor tools/echo-server/echo_compare.py measures\n"
             "heartwheel-echo against. Prints 'listening on HOST:PORT'; SIGTERM ends it.\n");
      return 0;
    } else {
      fprintf(stderr, "heartwheel-echo-floor: error: unknown argument '%s' (see --help)\n",
              argv[i]);
      return 2;
    }
  }
  if (parse_listen(listen_text, &addr) != 0) {
    fprintf(stderr, "heartwheel-echo-floor: error: --listen wants IPV4:PORT, got '%s'\n",
            listen_text);
    return 2;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  socklen_t len = sizeof addr;
  if (listener < 0 || setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(listener, (struct sockaddr*)&addr, sizeof addr) != 0 || listen(listener, 4096) != 0 ||
      getsockname(listener, (struct sockaddr*)&addr, &len) != 0) {
    fprintf(stderr, "heartwheel-echo-floor: error: cannot listen on %s: %s\n", listen_text,
            strerror(errno));
    return 1;
  }
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event lev = {.events = EPOLLIN, .data.fd = listener};
  if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, listener, &lev) != 0) {
    fprintf(stderr, "heartwheel-echo-floor: error: epoll: %s\n", strerror(errno));
    return 1;
  }
  char host[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &addr.sin_addr, host, sizeof host);
  printf("listening on %s:%u\n", host, (unsigned)ntohs(addr.sin_port));
  fflush(stdout);

  struct epoll_event events[max_events];
  while (!stop_requested) {
    int n = epoll_wait(ep, events, max_events, -1);
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == listener) {
        on_acceptable(ep, listener);
      } else if ((events[i].events & EPOLLOUT) != 0) {
        on_writable(ep, fd);
      } else {
        on_readable(ep, fd);
      }
    }
  }
  return 0;
}
