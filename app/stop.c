/*
 * stop.c - the program's SIGINT/SIGTERM handling and the table of temporaries it removes (stop.h).
 *
 * Invariant: the handler calls only async-signal-safe functions (kill, waitpid, unlink, rmdir, open, close, lseek,
 * unlinkat, the getdents64 system call, write, _exit, clock_gettime, signal, raise). It ends and reaps the registered
 * children before it removes a temporary, so none of them writes into one after it is emptied; a child slot is one
 * sig_atomic_t (the pid, 0 when free), set and cleared with signals blocked (hx_child_watch), so the handler never
 * sees a child that runs unregistered nor a pid already reaped and reused. A slot's path is written before its kind is
 * set, with a release fence between and an acquire fence after the handler reads the kind (lock-free fences, safe in
 * a handler), so the handler never reads a path being written, even when it runs on another thread than the one that
 * registered it (psh and pool start worker threads); a slot is freed by setting its kind to 0 first.
 */
#define _GNU_SOURCE
#include "app/stop.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t f3d_stop_signal = 0;
static volatile sig_atomic_t stop_sec = 0, orderly_stop = 0;
static const char *stop_what = "f3dbench";

static struct {
  volatile sig_atomic_t kind; /* 0: free, else an f3d_tmp_kind */
  char path[F3D_TMP_PATH];
} slots[F3D_TMP_SLOTS];
static volatile sig_atomic_t children[F3D_CHILD_SLOTS]; /* pids, each leading its own process group; 0: free */

int f3d_tmp_add(const char *path, f3d_tmp_kind kind) {
  const size_t n = strlen(path);
  if (n == 0 || n >= F3D_TMP_PATH) return -1;
  for (int i = 0; i < F3D_TMP_SLOTS; i++) {
    if (slots[i].kind) continue;
    memcpy(slots[i].path, path, n + 1);
    atomic_thread_fence(memory_order_release);
    slots[i].kind = (sig_atomic_t)kind;
    return 0;
  }
  return -1;
}

void f3d_tmp_drop(const char *path) {
  for (int i = F3D_TMP_SLOTS - 1; i >= 0; i--)
    if (slots[i].kind && strcmp(slots[i].path, path) == 0) {
      slots[i].kind = 0;
      return;
    }
}

static void child_started(void *arg, pid_t pid) {
  (void)arg;
  for (int i = 0; i < F3D_CHILD_SLOTS; i++)
    if (!children[i]) {
      children[i] = (sig_atomic_t)pid;
      return;
    }
}

static void child_ended(void *arg, pid_t pid) {
  (void)arg;
  for (int i = 0; i < F3D_CHILD_SLOTS; i++)
    if (children[i] == (sig_atomic_t)pid) children[i] = 0;
}

const hx_child_watch f3d_child_watch = {child_started, child_ended, NULL};

/* SIGKILL to each registered child's process group, then the child reaped: once waitpid returns it has made its last
 * system call, so nothing it does lands in a temporary emptied after. */
static void end_children(void) {
  const int saved = errno;
  for (int i = 0; i < F3D_CHILD_SLOTS; i++) {
    const pid_t pid = (pid_t)children[i];
    if (pid <= 0) continue;
    (void)kill(-pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    children[i] = 0;
  }
  errno = saved;
}

/* The entries of the folder fd, unlinked (files, then empty folders); getdents64 since readdir may allocate. Passes
 * repeat from the start until one removes nothing, as removing entries while reading them may skip some. */
static void empty_dir(int fd) {
  char buf[4096];
  for (int pass = 0; pass < 16; pass++) {
    int removed = 0;
    if (lseek(fd, 0, SEEK_SET) != 0) return;
    for (;;) {
      const long got = syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (got <= 0) break;
      for (long off = 0; off < got;) {
        /* struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name */
        unsigned short reclen;
        memcpy(&reclen, buf + off + 16, sizeof reclen);
        const char *name = buf + off + 19;
        if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0)
          removed += unlinkat(fd, name, 0) == 0 || unlinkat(fd, name, AT_REMOVEDIR) == 0;
        off += reclen;
      }
    }
    if (!removed) return;
  }
}

static void put(const char *s) { (void)!write(STDERR_FILENO, s, strlen(s)); }

static void remove_temporaries(void) {
  for (int i = F3D_TMP_SLOTS - 1; i >= 0; i--) {
    const sig_atomic_t kind = slots[i].kind;
    if (!kind) continue;
    atomic_thread_fence(memory_order_acquire); /* the path written before kind was set */
    if (kind == F3D_TMP_FILE) {
      unlink(slots[i].path);
    } else {
      if (kind == F3D_TMP_DIR) {
        const int fd = open(slots[i].path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        if (fd >= 0) empty_dir(fd), close(fd);
      }
      rmdir(slots[i].path);
    }
    slots[i].kind = 0;
  }
}

/* Orderly (the sweep): the first SIGINT/SIGTERM asks for an orderly stop; a second one at least 2 s later (a user
 * pressing Ctrl-C again) kills at once, the run staying marked INCOMPLETE. Repeats within that window are the same
 * request: `timeout -s INT` and a terminal's Ctrl-C signal the process and then its group, so one stop arrives twice
 * in the same instant (with SA_RESETHAND the second one killed the run mid-write, leaving it "running" with its
 * .partial files). Otherwise: the temporaries are removed and the program ends, 128 + signal. */
static void on_signal(int sig) {
  if (!orderly_stop) {
    end_children();
    remove_temporaries();
    put("f3dbench: ");
    put(stop_what);
    put(sig == SIGTERM ? ": interrupted (SIGTERM received)" : ": interrupted (SIGINT received)");
    put(", its temporary files removed\n");
    _exit(128 + sig);
  }
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  if (!f3d_stop_signal) {
    stop_sec = (sig_atomic_t)ts.tv_sec;
    f3d_stop_signal = sig;
  } else if ((sig_atomic_t)ts.tv_sec - stop_sec >= 2) {
    end_children();
    remove_temporaries();
    signal(sig, SIG_DFL);
    raise(sig);
  }
}

void f3d_signals_install(const char *what, int orderly) {
  stop_what = what;
  orderly_stop = orderly != 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = 0; /* on_signal decides what a second signal means */
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT); /* one handler at a time: SIGINT then SIGTERM removes the temporaries once */
  sigaddset(&sa.sa_mask, SIGTERM);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}
