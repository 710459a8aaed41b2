#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "vdev.h"

/* A reply the reader does not take within this long is dropped, as a UART
 * drops bytes nobody reads; the host's resend with the same SEQ recovers. */
#define WRITE_STALL_MS 2000
/* After a client opens the pty it may flush its input (pyserial does, in
 * open()), which would eat a banner printed too early: within this long of
 * an open, every flush is answered with the banner again. */
#define OPEN_GRACE_NS 500000000ull

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* No SA_RESTART: a signal must wake poll()/read() so the loop can stop. */
static void catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

uint64_t vdev_now_ns(void *ctx)
{
    struct timespec ts;
    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int vdev_write(void *ctx, const void *buf, size_t n)
{
    const int fd = *(const int *)ctx;
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = {fd, POLLOUT, 0};
            int r = poll(&pfd, 1, WRITE_STALL_MS);
            if (r > 0 && (pfd.revents & POLLOUT)) continue;
            if (r < 0 && errno == EINTR && !stop_requested) continue;
        }
        return -1;
    }
    return 0;
}

int serve_stdio(rvne_server *s, rvne_model *m)
{
    uint8_t buf[4096];
    catch_stop_signals();
    rvne_print_banner(&s->cfg.port, m);
    while (!stop_requested) {
        ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
        if (n > 0) {
            vdev_feed(s, buf, (size_t)n);
            continue;
        }
        if (n == 0) return 0;
        if (errno == EINTR) continue;
        fprintf(stderr, "rvne-vdev: reading stdin: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}

static int make_raw(int fd)
{
    struct termios t;
    if (tcgetattr(fd, &t) != 0) return -1;
    cfmakeraw(&t);
    return tcsetattr(fd, TCSANOW, &t);
}

/* A pty master whose slave is set raw (no echo: an echoing line would hand
 * the device its own replies) and then closed again, so that the master
 * reports POLLHUP until a client opens it: that is how opens are seen. */
static int open_master(char *path, size_t path_cap)
{
    const char *name;
    int one = 1, slave;
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0) return -1;
    if (grantpt(m) != 0 || unlockpt(m) != 0 || (name = ptsname(m)) == NULL ||
        strlen(name) >= path_cap)
        goto fail;
    strcpy(path, name);
    slave = open(path, O_RDWR | O_NOCTTY);
    if (slave < 0) goto fail;
    if (make_raw(slave) != 0) {
        close(slave);
        goto fail;
    }
    close(slave);
    /* Packet mode: the master learns when the client flushes its input. */
    if (ioctl(m, TIOCPKT, &one) != 0) goto fail;
    if (fcntl(m, F_SETFL, fcntl(m, F_GETFL) | O_NONBLOCK) != 0) goto fail;
    return m;
fail:
    close(m);
    return -1;
}

int serve_pty(rvne_server *s, rvne_model *m)
{
    char path[256];
    uint8_t buf[4097];
    int client_open = 0;
    uint64_t opened_at = 0;
    int fd = open_master(path, sizeof path);
    if (fd < 0) {
        fprintf(stderr, "rvne-vdev: cannot create a pseudo-terminal: %s\n", strerror(errno));
        return 1;
    }
    catch_stop_signals();
    *(int *)s->cfg.port.ctx = fd;
    printf("PTY %s\n", path);
    fflush(stdout);

    while (!stop_requested) {
        struct pollfd pfd = {fd, POLLIN, 0};
        int r = poll(&pfd, 1, client_open ? 200 : 20);
        ssize_t n;
        if (r < 0 && errno != EINTR) break;
        if (r < 0) continue;
        if (r > 0 && (pfd.revents & POLLHUP)) {
            /* No client: wait for one without spinning. The device keeps
             * its state, as a board does when the terminal is closed. */
            struct timespec ts = {0, 20000000};
            client_open = 0;
            /* poll() returns POLLHUP at once while nobody holds the slave,
             * so the wait must come before the POLLIN test, not after it. */
            nanosleep(&ts, NULL);
            if (!(pfd.revents & POLLIN)) continue;
            /* Bytes a client wrote before it closed are still a request. */
            n = read(fd, buf, sizeof buf);
            if (n > 1 && buf[0] == TIOCPKT_DATA) vdev_feed(s, buf + 1, (size_t)n - 1);
            continue;
        }
        if (!client_open) {
            client_open = 1;
            opened_at = vdev_now_ns(NULL);
            rvne_print_banner(&s->cfg.port, m);
        }
        if (r == 0) continue;
        n = read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK || errno == EIO) continue;
            break;
        }
        if (n == 0) continue;
        if (buf[0] == TIOCPKT_DATA) {
            vdev_feed(s, buf + 1, (size_t)n - 1);
        } else if ((buf[0] & TIOCPKT_FLUSHREAD) && vdev_now_ns(NULL) - opened_at < OPEN_GRACE_NS) {
            rvne_print_banner(&s->cfg.port, m);
        }
    }
    if (!stop_requested) fprintf(stderr, "rvne-vdev: serving %s failed: %s\n", path, strerror(errno));
    close(fd);
    return stop_requested ? 0 : 1;
}
