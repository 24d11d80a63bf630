// pdb-env-client: the executable bin/pdb-env runs for `pdb-env checkpoint`, `pdb-env restore` and
// `pdb-env hook` where it was built. It
// hands the command line to the resident pdb-env daemon of this user (`pdb-env daemon start`,
// cli/daemon/) over its Unix socket, and prints what the daemon answers; where there is no
// daemon, or the daemon says "run it yourself", it becomes `node <pdb-env.cjs> ARGS` (execvp, the
// same process), exactly what bin/pdb-env would have run. Its start-up is a millisecond, where a
// node process takes tens of them before any of pdb-env's work.
//
// Usage (bin/pdb-env): pdb-env-client <path of dist/cli/pdb-env.cjs> ARGS...
// Request: "PDBD1\n", then NUL-terminated strings: "pid=N", "cwd=DIR", "umask=OCTAL", "entry=FILE", then
// "arg=A" for each argument and "env=K=V" for each variable, for a turn hook (`hook AGENT`) "stdin=TEXT"
// (its stdin, read here: a hook's payload), then an empty string. Where the daemon declines a hook
// whose stdin was read, node gets the same bytes on its stdin (a memfd, or an unlinked temporary file).
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
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *entry;
static char **args;
static int nargs;

// A turn hook's stdin, once read (forwarded to the daemon; handed to node if it declines).
static char *stdinBuf;
static size_t stdinLen;
static int stdinRead;

static int writeAll(int fd, const char *p, size_t n);

// What was read of stdin, as node's stdin: a file of those bytes, at its start, on fd 0.
static void restoreStdin(void) {
  if (!stdinRead) return;
  int fd = -1;
#ifdef MFD_CLOEXEC
  fd = memfd_create("pdb-env-stdin", MFD_CLOEXEC);
#endif
  if (fd < 0) {
    char tmpl[] = "/tmp/pdb-env-stdin-XXXXXX";
    fd = mkstemp(tmpl);
    if (fd >= 0) unlink(tmpl);
  }
  if (fd < 0 || writeAll(fd, stdinBuf, stdinLen) != 0 || lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, 0) < 0) {
    fprintf(stderr, "pdb-env: cannot hand the hook's stdin to node: %s\n", strerror(errno));
    _exit(70);
  }
  if (fd != 0) close(fd);
}

// Run the command in node instead (no daemon, or it declined before printing anything).
static void fallback(void) {
  restoreStdin();
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

// The daemon's directory (cli/daemon/location.ts says the same): PDB_ENV_DAEMON_DIR, else
// $XDG_RUNTIME_DIR/pdb-env, else /tmp/pdb-env-UID. Only a directory of this user that nobody
// else can write is trusted: another user could otherwise put a socket there first. 0: trusted;
// -1: not to be used; 1: there is none yet (the on-demand start makes it).
static char dirPath[PATH_MAX];
static int socketPath(char *out, size_t size) {
  const char *dir = getenv("PDB_ENV_DAEMON_DIR");
  if (!dir || !*dir) {
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (xdg && *xdg) snprintf(dirPath, sizeof dirPath, "%s/pdb-env", xdg);
    else snprintf(dirPath, sizeof dirPath, "/tmp/pdb-env-%u", (unsigned)getuid());
  } else snprintf(dirPath, sizeof dirPath, "%s", dir);
  int n = snprintf(out, size, "%s/daemon.sock", dirPath);
  if (n <= 0 || (size_t)n >= size) return -1;
  struct stat st;
  if (lstat(dirPath, &st) != 0) return errno == ENOENT ? 1 : -1;
  if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077) != 0) return -1;
  return 0;
}

// PDB_ENV_DAEMON: "0" neither starts nor uses a daemon; "manual" uses one that runs (`pdb-env
// daemon start`) and starts none; anything else (unset) also starts one on demand.
static int daemonMode(void) {
  const char *m = getenv("PDB_ENV_DAEMON");
  if (m && strcmp(m, "0") == 0) return 0;
  if (m && strcmp(m, "manual") == 0) return 1;
  return 2;
}

// Start this user's daemon in the background (cli/daemon/server.ts, `pdb-env daemon run`), as
// build tools do: detached (a new session, its own grandchild), output to daemon.log, idle timeout
// PDB_ENV_DAEMON_IDLE_MS (default 10 minutes). At most one starts: the one that takes the lock
// daemon.lock hands it to the daemon, which holds it while it lives (fd 3). This call itself
// runs node as without a daemon; the next ones find it.
static void startDaemon(int dirState) {
  if (dirState == 1 && mkdir(dirPath, 0700) != 0 && errno != EEXIST) return;
  struct stat st;
  if (lstat(dirPath, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077) != 0) return;
  char lockPath[PATH_MAX + 16], logPath[PATH_MAX + 16];
  snprintf(lockPath, sizeof lockPath, "%s/daemon.lock", dirPath);
  snprintf(logPath, sizeof logPath, "%s/daemon.log", dirPath);
  int lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock < 0) return;
  if (fstat(lock, &st) != 0 || st.st_uid != getuid() || flock(lock, LOCK_EX | LOCK_NB) != 0) {
    close(lock);
    return;
  }
  // One start per 10 seconds at most (the lock's mtime is the last): a daemon that cannot start
  // here (its error is in daemon.log) does not cost every call a node process in the background.
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  if (st.st_size > 0 && now.tv_sec - st.st_mtime < 10) {
    close(lock);
    return;
  }
  if (write(lock, "s", 1) < 0 || futimens(lock, NULL) != 0) {
    close(lock);
    return;
  }
  long idleMs = 600000;
  const char *idle = getenv("PDB_ENV_DAEMON_IDLE_MS");
  if (idle && *idle) {
    char *end;
    long v = strtol(idle, &end, 10);
    if (*end == 0 && v >= 0) idleMs = v;
  }
  char idleS[32];
  snprintf(idleS, sizeof idleS, "%ld", idleMs == 0 ? 0 : (idleMs + 999) / 1000);
  pid_t child = fork();
  if (child == 0) {
    setsid();
    if (fork() != 0) _exit(0);
    int null = open("/dev/null", O_RDONLY);
    int log = open(logPath, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW, 0600);
    if (null < 0 || log < 0 || dup2(null, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0 || dup2(lock, 3) < 0) _exit(70);
    if (chdir("/") != 0) _exit(70);
    signal(SIGPIPE, SIG_DFL);
    setenv("PDB_ENV_DAEMON_STARTED", "on-demand", 1);
    char *argv[] = {"node", (char *)entry, "daemon", "run", "--idle-timeout", idleS, NULL};
    execvp("node", argv);
    _exit(127);
  }
  if (child > 0) waitpid(child, NULL, 0);
  close(lock);
}

// The daemon's process (SO_PEERCRED), and waiting for it to be gone: a daemon that went away in
// the middle of a command (killed) may still hold what the command took (the session's lease)
// until it has exited; the command then runs here, as without a daemon. While it exits it runs
// (R, or D); a daemon that only closed the connection (an older build that could not read the
// request) is back asleep (S) at once, and is not waited for.
static pid_t daemonPid;
static void waitGone(void) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)daemonPid);
  for (int waited = 0; daemonPid > 0 && waited < 3000; waited += 2) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *close = strrchr(buf, ')');
    if (!close || close[1] != ' ' || (close[2] != 'R' && close[2] != 'D')) return;
    usleep(2000);
  }
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

// A turn hook the daemon may run: `hook AGENT [--store DIR|--store=DIR] [--json] [PAYLOAD]`
// (anything else, --print-settings or --help say, runs in node with stdin untouched). Its stdin
// is read here, all of it, unless it is a terminal or the agent is Codex (whose payload is an
// argument); one of over 1 MiB or with a NUL byte goes to node (which says what is wrong with it).
static int plainHook(void) {
  if (nargs < 2) return 0;
  for (int i = 2; i < nargs; i++) {
    if (strcmp(args[i], "--store") == 0 && i + 1 < nargs) i++;
    else if (strncmp(args[i], "--store=", 8) != 0 && strcmp(args[i], "--json") != 0 && args[i][0] == '-') return 0;
  }
  if (strcmp(args[1], "codex") == 0 || isatty(0)) return 1;
  size_t cap = 65536;
  stdinBuf = malloc(cap + 1);
  if (!stdinBuf) _exit(70);
  stdinRead = 1;
  for (;;) {
    if (stdinLen == cap) {
      cap *= 2;
      stdinBuf = realloc(stdinBuf, cap + 1);
      if (!stdinBuf) _exit(70);
    }
    ssize_t r = read(0, stdinBuf + stdinLen, cap - stdinLen);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return 0; // node reads it, and says why it cannot
    if (r == 0) break;
    stdinLen += (size_t)r;
  }
  stdinBuf[stdinLen] = 0;
  return stdinLen <= (1u << 20) && memchr(stdinBuf, 0, stdinLen) == NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: pdb-env-client PDB_ENV_CJS [ARGS...] (bin/pdb-env runs it)\n");
    return 2;
  }
  // The entry by its real path: bin/pdb-env passes it as it was called (bin/pdb-env,
  // ./node_modules/.bin/pdb-env: relative to this directory), and both the daemon this starts
  // (from /) and the one it asks (its own working directory) must find the same file.
  char *real = realpath(argv[1], NULL);
  entry = real ? real : argv[1];
  args = argv + 2;
  nargs = argc - 2;
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  int mode = daemonMode();
  if (mode == 0) fallback();
  if (nargs >= 1 && strcmp(args[0], "hook") == 0 && !plainHook()) fallback();
  int dirState = socketPath(addr.sun_path, sizeof addr.sun_path);
  if (dirState < 0) fallback();
  // The socket must be this user's socket: a file another user made is not asked anything.
  struct stat st;
  if (dirState == 0 && lstat(addr.sun_path, &st) == 0 && (!S_ISSOCK(st.st_mode) || st.st_uid != getuid())) fallback();
  int fd = dirState == 0 ? socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1;
  if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    // None listens (no socket, or a stale one): start one for the next calls, where allowed.
    if (mode == 2 && (dirState == 1 || errno == ENOENT || errno == ECONNREFUSED)) startDaemon(dirState);
    fallback();
  }
  // The process listening must be this user's (SO_PEERCRED, recorded by the kernel at its
  // listen()): nothing is sent to another user's process, whoever made the file.
  struct ucred cred;
  socklen_t credLen = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &credLen) != 0 || cred.uid != getuid()) {
    close(fd);
    fallback();
  }
  daemonPid = cred.pid;
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
  mode_t mask = umask(0);
  umask(mask);
  snprintf(num, sizeof num, "%o", (unsigned)mask);
  put("umask=", num);
  put("entry=", entry);
  for (int i = 0; i < nargs; i++) put("arg=", args[i]);
  for (char **e = environ; *e; e++) put("env=", *e);
  if (stdinRead) put("stdin=", stdinBuf);
  put("", NULL);
  if (writeAll(fd, req, reqLen) != 0) fallback();

  int printed = 0;
  for (;;) {
    unsigned char head[5];
    if (readAll(fd, (char *)head, 5) != 0) {
      // The daemon went away: before it answered anything, run the command here; after, say so.
      if (!printed) {
        waitGone();
        fallback();
      }
      fprintf(stderr, "pdb-env: E_DAEMON_LOST: the pdb-env daemon stopped before the command finished; pdb-env log shows whether it was recorded\n");
      return 1;
    }
    uint32_t len = (uint32_t)head[1] | (uint32_t)head[2] << 8 | (uint32_t)head[3] << 16 | (uint32_t)head[4] << 24;
    char *data = malloc(len ? len : 1);
    if (!data || readAll(fd, data, len) != 0) {
      if (!printed) {
        waitGone();
        fallback();
      }
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
