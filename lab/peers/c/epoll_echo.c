/* epoll_echo: the comparison's C floor, a single-threaded level-triggered
 * epoll echo server on 127.0.0.1:PORT with TCP_NODELAY, one read and one
 * write per readable event and no framing. Usage: epoll_echo PORT */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  signal(SIGPIPE, SIG_IGN);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1])),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), ep = epoll_create1(0), on = 1;
  if (ls < 0 || ep < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) ||
      bind(ls, (struct sockaddr *)&sa, sizeof sa) || listen(ls, 4096))
    return 1;
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = ls}, evs[256];
  epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
  static char buf[1 << 16];
  for (;;) {
    int n = epoll_wait(ep, evs, 256, -1);
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == ls) {
        for (int c; (c = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0;) {
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
          ev.data.fd = c;
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
        }
        continue;
      }
      ssize_t r = read(fd, buf, sizeof buf);
      if (r < 0 && errno == EAGAIN) continue;
      /* No output buffer: a write the socket cannot take whole ends the connection. */
      if (r <= 0 || write(fd, buf, r) != r) close(fd);
    }
  }
}
