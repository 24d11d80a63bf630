// pdb-env-client: the executable bin/pdb-env runs for `pdb-env checkpoint` and `pdb-env restore`
// where it was built. It
// hands the command line to the resident pdb-env daemon of this user (`pdb-env daemon start`,
// sessions/daemon/) over its Unix socket, and prints what the daemon answers; where there is no
// daemon, or the daemon says "run it yourself", it becomes `node <pdb-env.cjs> ARGS` (execvp, the
// same process), exactly what bin/pdb-env would have run. Its start-up is a millisecond, where a
// node process takes tens of them before any of pdb-env's work.
//
// Usage (bin/pdb-env): pdb-env-client <path of dist/cli/pdb-env.cjs> ARGS...
// Request: "PDBD1\n", then NUL-terminated strings: "pid=N", "cwd=DIR", "entry=FILE", then
// "arg=A" for each argument and "env=K=V" for each variable, then an empty string.
// Answer: frames of one type byte and a 4-byte little-endian length, then the data:
// 'o' stdout bytes, 'e' stderr bytes, 'x' the exit status (4 bytes LE), 'f' run it yourself.
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

static const char *entry;
static char **args;
static int nargs;

// Run the command in node instead (no daemon, or it declined before printing anything).
static void fallback(void) {
  char **argv = calloc((size_t)nargs + 3, sizeof(char *));
  if (!argv) _exit(70);
  argv[0] = "node";
  argv[1] = (char *)entry;
  for (int i = 0; i < nargs; i++) argv[i + 2] = args[i];
  signal(SIGPIPE, SIG_DFL); // as bin/pdb-env would have started node (main ignores it while it talks)
  execvp("node", argv);
  fprintf(stderr, "pdb-env: cannot run node: %s\n", strerror(errno));
  _exit(127);
}

// The daemon's directory (sessions/daemon/location.ts says the same): PDB_ENV_DAEMON_DIR, else
// $XDG_RUNTIME_DIR/pdb-env, else /tmp/pdb-env-UID. Only a directory of this user that nobody
// else can write is trusted: another user could otherwise put a socket there first.
static int socketPath(char *out, size_t size) {
  const char *dir = getenv("PDB_ENV_DAEMON_DIR");
  char buf[PATH_MAX];
  if (!dir || !*dir) {
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (xdg && *xdg) snprintf(buf, sizeof buf, "%s/pdb-env", xdg);
    else snprintf(buf, sizeof buf, "/tmp/pdb-env-%u", (unsigned)getuid());
    dir = buf;
  }
  struct stat st;
  if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077) != 0) return -1;
  int n = snprintf(out, size, "%s/daemon.sock", dir);
  return n > 0 && (size_t)n < size ? 0 : -1;
}

// A growing request buffer.
static char *req;
static size_t reqLen, reqCap;
static void put(const char *a, const char *b) {
  size_t la = strlen(a), lb = b ? strlen(b) : 0;
  while (reqLen + la + lb + 1 > reqCap) {
    reqCap = reqCap ? reqCap * 2 : 65536;
    req = realloc(req, reqCap);
    if (!req) _exit(70);
  }
  memcpy(req + reqLen, a, la);
  if (lb) memcpy(req + reqLen + la, b, lb);
  reqLen += la + lb;
  req[reqLen++] = 0;
}

static int writeAll(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int readAll(int fd, char *p, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: pdb-env-client PDB_ENV_CJS [ARGS...] (bin/pdb-env runs it)\n");
    return 2;
  }
  entry = argv[1];
  args = argv + 2;
  nargs = argc - 2;
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (socketPath(addr.sun_path, sizeof addr.sun_path) != 0) fallback();
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) fallback();
  // A daemon that closes the connection, or a reader of our output that went away, is an error
  // return (EPIPE), not the end of this process: output.ts's rule, which node follows too.
  signal(SIGPIPE, SIG_IGN);

  char num[32], cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) fallback();
  put("PDBD1\n", NULL);
  reqLen--; // the magic line has no NUL of its own
  snprintf(num, sizeof num, "%ld", (long)getpid());
  put("pid=", num);
  put("cwd=", cwd);
  put("entry=", entry);
  for (int i = 0; i < nargs; i++) put("arg=", args[i]);
  for (char **e = environ; *e; e++) put("env=", *e);
  put("", NULL);
  if (writeAll(fd, req, reqLen) != 0) fallback();

  int printed = 0;
  for (;;) {
    unsigned char head[5];
    if (readAll(fd, (char *)head, 5) != 0) {
      // The daemon went away: before it answered anything, run the command here; after, say so.
      if (!printed) fallback();
      fprintf(stderr, "pdb-env: E_DAEMON_LOST: the pdb-env daemon stopped before the command finished; pdb-env log shows whether it was recorded\n");
      return 1;
    }
    uint32_t len = (uint32_t)head[1] | (uint32_t)head[2] << 8 | (uint32_t)head[3] << 16 | (uint32_t)head[4] << 24;
    char *data = malloc(len ? len : 1);
    if (!data || readAll(fd, data, len) != 0) {
      if (!printed) fallback();
      fprintf(stderr, "pdb-env: E_DAEMON_LOST: the pdb-env daemon stopped before the command finished; pdb-env log shows whether it was recorded\n");
      return 1;
    }
    switch (head[0]) {
      case 'f':
        if (!printed) {
          close(fd);
          fallback();
        }
        return 1;
      case 'o':
      case 'e':
        printed = 1;
        // A reader that went away is not the command's failure (output.ts's rule).
        (void)writeAll(head[0] == 'o' ? 1 : 2, data, len);
        break;
      case 'x':
        if (len != 4) return 1;
        return (int)((uint32_t)(unsigned char)data[0] | (uint32_t)(unsigned char)data[1] << 8 |
                     (uint32_t)(unsigned char)data[2] << 16 | (uint32_t)(unsigned char)data[3] << 24);
      default:
        fprintf(stderr, "pdb-env: E_DAEMON_PROTOCOL: unknown frame from the pdb-env daemon\n");
        return 1;
    }
    free(data);
  }
}
