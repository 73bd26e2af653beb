/* uring_echo: the comparison's io_uring floor, a single-threaded echo server
 * on 127.0.0.1:PORT with TCP_NODELAY and no framing: multishot accept,
 * multishot recv into a provided buffer ring, send straight from the received
 * buffer, which goes back to the ring when the send completes. Needs liburing
 * >= 2.3; SINGLE_ISSUER|DEFER_TASKRUN where the kernel has them (6.1).
 * Usage: uring_echo PORT */
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

enum { NBUFS = 4096, BUFSZ = 4096, GROUP = 0 };
enum { ACCEPT, RECV, SEND };

static struct io_uring ring;
static struct io_uring_buf_ring *br;
static char *bufs;

/* sqe returns a free submission entry, submitting the queue when it is full. */
static struct io_uring_sqe *sqe(void) {
  struct io_uring_sqe *s = io_uring_get_sqe(&ring);
  if (!s) {
    io_uring_submit(&ring);
    s = io_uring_get_sqe(&ring);
  }
  return s;
}

/* tag names a prepared entry's completion: the operation, the buffer, the fd. */
static void tag(struct io_uring_sqe *s, int op, int fd, int bid) {
  io_uring_sqe_set_data64(s, (__u64)op << 48 | (__u64)bid << 32 | (__u32)fd);
}

static void accept_all(int ls) {
  struct io_uring_sqe *s = sqe();
  io_uring_prep_multishot_accept(s, ls, NULL, NULL, 0);
  tag(s, ACCEPT, ls, 0);
}

static void recv_all(int fd) {
  struct io_uring_sqe *s = sqe();
  io_uring_prep_recv_multishot(s, fd, NULL, 0, 0);
  s->flags |= IOSQE_BUFFER_SELECT;
  s->buf_group = GROUP;
  tag(s, RECV, fd, 0);
}

/* send echoes len bytes of buffer bid; MSG_WAITALL: the kernel finishes a short send itself. */
static void send_back(int fd, int bid, int len) {
  struct io_uring_sqe *s = sqe();
  io_uring_prep_send(s, fd, bufs + (size_t)bid * BUFSZ, len, MSG_NOSIGNAL | MSG_WAITALL);
  tag(s, SEND, fd, bid);
}

/* recycle gives buffer bid back to the ring. */
static void recycle(int bid) {
  io_uring_buf_ring_add(br, bufs + (size_t)bid * BUFSZ, BUFSZ, bid, io_uring_buf_ring_mask(NBUFS), 0);
  io_uring_buf_ring_advance(br, 1);
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  signal(SIGPIPE, SIG_IGN);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1])),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int ls = socket(AF_INET, SOCK_STREAM, 0), on = 1;
  if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) ||
      bind(ls, (struct sockaddr *)&sa, sizeof sa) || listen(ls, 4096))
    return 1;
  struct io_uring_params p = {.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN};
  if (io_uring_queue_init_params(4096, &ring, &p) < 0 && io_uring_queue_init(4096, &ring, 0) < 0) return 1;
  struct io_uring_buf_reg reg = {.ring_entries = NBUFS, .bgid = GROUP};
  if (posix_memalign((void **)&br, 4096, NBUFS * sizeof(struct io_uring_buf)) || !(bufs = malloc((size_t)NBUFS * BUFSZ)))
    return 1;
  reg.ring_addr = (unsigned long)br;
  io_uring_buf_ring_init(br);
  if (io_uring_register_buf_ring(&ring, &reg, 0)) return 1;
  for (int i = 0; i < NBUFS; i++) recycle(i);
  accept_all(ls);
  for (;;) {
    io_uring_submit_and_wait(&ring, 1);
    struct io_uring_cqe *c;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&ring, head, c) {
      seen++;
      int op = c->user_data >> 48, fd = (__u32)c->user_data, bid = c->flags >> IORING_CQE_BUFFER_SHIFT;
      int more = c->flags & IORING_CQE_F_MORE;
      if (op == ACCEPT) {
        if (c->res >= 0) {
          setsockopt(c->res, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
          recv_all(c->res);
        }
        if (!more) accept_all(ls);
      } else if (op == RECV) {
        if (c->res > 0)
          send_back(fd, bid, c->res);
        else if (c->flags & IORING_CQE_F_BUFFER)
          recycle(bid);
        if (!more) { /* the multishot recv ended: rearm it unless the peer is gone */
          if (c->res > 0 || c->res == -ENOBUFS) recv_all(fd);
          else close(fd);
        }
      } else {
        recycle((c->user_data >> 32) & 0xffff);
      }
    }
    io_uring_cq_advance(&ring, seen);
  }
}
