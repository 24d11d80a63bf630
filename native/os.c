// System calls pdb-env would otherwise start a program or an event-loop round trip for, each one
// measured on the create path (docs/evidence.md): mount(2) and umount2(2) of an overlay session
// instead of mount(8) and umount(8) (a process start, ~20 ms of a 0.2 s create), and the port
// probe of a session's block by bind(2) and listen(2) instead of twenty net.Server listens (whose
// address lookups compile Node's IPv6 pattern, ~15 ms). model/os/native.ts calls them; where the
// addon is not built, the callers keep the programs and the servers. And the *at(2) calls Node
// lacks (openat, fstatat, renameat2, linkat, unlinkat, mkdirat, symlinkat, readlinkat, a listing
// by descriptor), so that apply, restore and recovery write relative to directory handles opened
// without following links (model/os/dir-handle.ts): a parent swapped for a link fails closed.
#define _GNU_SOURCE
#include <node_api.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/mount.h>
#endif
#include "os.h"

static napi_value errnoValue(napi_env env, int err) {
  napi_value v;
  napi_create_int32(env, err, &v);
  return v;
}

// mount(source, target, fstype, data) -> 0 or an errno (ENOSYS where this is no Linux).
static napi_value Mount(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value args[4];
  napi_get_cb_info(env, info, &argc, args, NULL, NULL);
  if (argc < 4) return errnoValue(env, EINVAL);
  char *s[4] = {NULL, NULL, NULL, NULL};
  int err = 0;
  for (int k = 0; k < 4; k++)
    if (!(s[k] = napiString(env, args[k]))) err = EINVAL;
#ifdef __linux__
  if (!err && mount(s[0], s[1], s[2], 0, s[3]) != 0) err = errno;
#else
  if (!err) err = ENOSYS;
#endif
  for (int k = 0; k < 4; k++) free(s[k]);
  return errnoValue(env, err);
}

// umount(target) -> 0 or an errno.
static napi_value Umount(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value arg;
  napi_get_cb_info(env, info, &argc, &arg, NULL, NULL);
  char *target = argc < 1 ? NULL : napiString(env, arg);
  if (!target) return errnoValue(env, EINVAL);
  int err = 0;
#ifdef __linux__
  if (umount2(target, 0) != 0) err = errno;
#else
  err = ENOSYS;
#endif
  free(target);
  return errnoValue(env, err);
}

// Can a TCP listener take `port` on the loopback address of `family`? What net.Server.listen does
// (libuv sets SO_REUSEADDR); an address family or address the host lacks counts as free.
static int bindable(int family, int port) {
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno == EAFNOSUPPORT ? 1 : -errno;
  int one = 1, ok;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (family == AF_INET) {
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 1) == 0;
  } else {
    struct sockaddr_in6 a = {0};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons((uint16_t)port);
    a.sin6_addr = in6addr_loopback;
    ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 1) == 0;
  }
  int err = ok ? 0 : errno;
  close(fd);
  if (ok || err == EADDRNOTAVAIL || err == EAFNOSUPPORT) return 1;
  return err == EADDRINUSE || err == EACCES ? 0 : -err;
}

// portsFree(ports) -> for each port: 1 when it is bindable on 127.0.0.1 and on ::1, 0 when not,
// or a negative errno when the probe itself failed.
static napi_value PortsFree(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value arg, out;
  napi_get_cb_info(env, info, &argc, &arg, NULL, NULL);
  uint32_t n = 0;
  if (argc < 1 || napi_get_array_length(env, arg, &n) != napi_ok) return NULL;
  napi_create_array_with_length(env, n, &out);
  for (uint32_t i = 0; i < n; i++) {
    napi_value v;
    int32_t port = 0;
    napi_get_element(env, arg, i, &v);
    int r = napi_get_value_int32(env, v, &port) != napi_ok || port < 1 || port > 65535 ? -EINVAL : bindable(AF_INET, port);
    if (r == 1) r = bindable(AF_INET6, port);
    napi_create_int32(env, r, &v);
    napi_set_element(env, out, i, v);
  }
  return out;
}


// ---- *at(2) calls on directory handles. Each returns 0 (or a descriptor) or a positive errno
// (openAt: a negative errno), so JavaScript never sees a half-done call as a success.

static int intArg(napi_env env, napi_value v, int32_t *out) { return napi_get_value_int32(env, v, out) == napi_ok; }

// Up to `want` arguments; the int ones at the positions of `ints`, the string ones at `strs`.
typedef struct { int32_t i[4]; char *s[3]; } at_args_t;

static int atArgs(napi_env env, napi_callback_info info, const char *shape, at_args_t *a) {
  size_t argc = 6;
  napi_value args[6];
  memset(a, 0, sizeof *a);
  napi_get_cb_info(env, info, &argc, args, NULL, NULL);
  size_t n = strlen(shape);
  if (argc < n) return 0;
  int ni = 0, ns = 0, ok = 1;
  for (size_t k = 0; k < n; k++) {
    if (shape[k] == 'i') ok = ok && intArg(env, args[k], &a->i[ni++]);
    else ok = ok && (a->s[ns++] = napiString(env, args[k])) != NULL;
  }
  return ok;
}

static void atFree(at_args_t *a) {
  for (int k = 0; k < 3; k++) free(a->s[k]);
}

// openAt(dirfd, name, flags, mode) -> a descriptor, or -errno.
static napi_value OpenAt(napi_env env, napi_callback_info info) {
  at_args_t a;
  int r = atArgs(env, info, "isii", &a) ? openat(a.i[0], a.s[0], a.i[1] | O_CLOEXEC, (mode_t)a.i[2]) : (errno = EINVAL, -1);
  if (r < 0) r = -errno;
  atFree(&a);
  return errnoValue(env, r);
}

static void setBig(napi_env env, napi_value obj, const char *name, uint64_t x) {
  napi_value v;
  napi_create_bigint_uint64(env, x, &v);
  napi_set_named_property(env, obj, name, v);
}

static void setNum(napi_env env, napi_value obj, const char *name, double x) {
  napi_value v;
  napi_create_double(env, x, &v);
  napi_set_named_property(env, obj, name, v);
}

// statAt(dirfd, name) -> { mode, dev, ino, size, nlink, uid } (fstatat without following a link; an
// empty name: the handle itself), or an errno.
static napi_value StatAt(napi_env env, napi_callback_info info) {
  at_args_t a;
  struct stat st;
  int err = 0;
  if (!atArgs(env, info, "is", &a)) err = EINVAL;
  else if (!a.s[0][0] ? fstat(a.i[0], &st) != 0 : fstatat(a.i[0], a.s[0], &st, AT_SYMLINK_NOFOLLOW) != 0) err = errno;
  atFree(&a);
  if (err) return errnoValue(env, err);
  napi_value out;
  napi_create_object(env, &out);
  setNum(env, out, "mode", st.st_mode);
  setBig(env, out, "dev", (uint64_t)st.st_dev);
  setBig(env, out, "ino", (uint64_t)st.st_ino);
  setNum(env, out, "size", (double)st.st_size);
  setNum(env, out, "nlink", (double)st.st_nlink);
  setNum(env, out, "uid", st.st_uid);
  return out;
}

// renameAt(fromfd, from, tofd, to, flags) -> 0 or an errno; flags 1 RENAME_NOREPLACE, 2
// RENAME_EXCHANGE (renameat2; EINVAL/ENOSYS where the kernel or filesystem has none).
static napi_value RenameAt(napi_env env, napi_callback_info info) {
  at_args_t a;
  int err = 0;
  if (!atArgs(env, info, "isisi", &a)) err = EINVAL;
#ifdef SYS_renameat2
  else if (syscall(SYS_renameat2, a.i[0], a.s[0], a.i[1], a.s[1], (unsigned)a.i[2]) != 0) err = errno;
#else
  else if (a.i[2] != 0) err = ENOSYS;
  else if (renameat(a.i[0], a.s[0], a.i[1], a.s[1]) != 0) err = errno;
#endif
  atFree(&a);
  return errnoValue(env, err);
}

// linkAt(fromfd, from, tofd, to) -> 0 or an errno (a link to a symlink is a link to the symlink).
static napi_value LinkAt(napi_env env, napi_callback_info info) {
  at_args_t a;
  int err = 0;
  if (!atArgs(env, info, "isis", &a)) err = EINVAL;
  else if (linkat(a.i[0], a.s[0], a.i[1], a.s[1], 0) != 0) err = errno;
  atFree(&a);
  return errnoValue(env, err);
}

// unlinkAt(dirfd, name, isDir) -> 0 or an errno.
static napi_value UnlinkAt(napi_env env, napi_callback_info info) {
  at_args_t a;
  int err = 0;
  if (!atArgs(env, info, "isi", &a)) err = EINVAL;
  else if (unlinkat(a.i[0], a.s[0], a.i[1] ? AT_REMOVEDIR : 0) != 0) err = errno;
  atFree(&a);
  return errnoValue(env, err);
}

// mkdirAt(dirfd, name, mode) -> 0 or an errno.
static napi_value MkdirAt(napi_env env, napi_callback_info info) {
  at_args_t a;
  int err = 0;
  if (!atArgs(env, info, "isi", &a)) err = EINVAL;
  else if (mkdirat(a.i[0], a.s[0], (mode_t)a.i[1]) != 0) err = errno;
  atFree(&a);
  return errnoValue(env, err);
}

// symlinkAt(target, dirfd, name) -> 0 or an errno.
static napi_value SymlinkAt(napi_env env, napi_callback_info info) {
  at_args_t a;
  int err = 0;
  if (!atArgs(env, info, "sis", &a)) err = EINVAL;
  else if (symlinkat(a.s[0], a.i[0], a.s[1]) != 0) err = errno;
  atFree(&a);
  return errnoValue(env, err);
}

// readlinkAt(dirfd, name) -> the target (a Buffer) or an errno.
static napi_value ReadlinkAt(napi_env env, napi_callback_info info) {
  at_args_t a;
  int err = 0;
  char buf[4096];
  ssize_t n = -1;
  if (!atArgs(env, info, "is", &a)) err = EINVAL;
  else if ((n = readlinkat(a.i[0], a.s[0], buf, sizeof buf)) < 0) err = errno;
  else if ((size_t)n >= sizeof buf) err = ENAMETOOLONG;
  atFree(&a);
  if (err) return errnoValue(env, err);
  napi_value out;
  napi_create_buffer_copy(env, (size_t)n, buf, NULL, &out);
  return out;
}

// listAt(dirfd) -> the names in the directory (Buffers, '.' and '..' left out), or an errno.
static napi_value ListAt(napi_env env, napi_callback_info info) {
  at_args_t a;
  if (!atArgs(env, info, "i", &a)) return errnoValue(env, EINVAL);
  int fd = openat(a.i[0], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd < 0 ? NULL : fdopendir(fd);
  if (!d) {
    int err = errno;
    if (fd >= 0) close(fd);
    return errnoValue(env, err);
  }
  napi_value out, v;
  napi_create_array(env, &out);
  uint32_t i = 0;
  struct dirent *e;
  // errno set just before each readdir: a buffer's allocation may leave it set (see walk.c).
  while ((errno = 0, e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
    napi_create_buffer_copy(env, strlen(e->d_name), e->d_name, NULL, &v);
    napi_set_element(env, out, i++, v);
  }
  int err = errno;
  closedir(d);
  return err ? errnoValue(env, err) : out;
}

// sizesOf(dir, names) -> Float64Array: fstatat(2) below `dir` (not following a link) of each
// NUL-terminated relative name of a buffer, in order, its size, or -errno (all -errno of opening
// `dir` when that fails). A restore checks that every chunk of its target is there and of its size
// before it takes anything (model/store/chunks.ts assertStored): 6,197 statSync calls took 30 ms
// of an 87 ms restore on the pinned monorepo.
static napi_value SizesOf(napi_env env, napi_callback_info info) {
  size_t argc = 2, len = 0, dirLen = 0;
  napi_value args[2], ab, out;
  char *buf = NULL, dir[4096];
  bool isBuf = false;
  if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != napi_ok || argc < 2 ||
      napi_get_value_string_utf8(env, args[0], dir, sizeof dir, &dirLen) != napi_ok || dirLen >= sizeof dir - 1 ||
      napi_is_buffer(env, args[1], &isBuf) != napi_ok || !isBuf || napi_get_buffer_info(env, args[1], (void **)&buf, &len) != napi_ok) {
    napi_throw_type_error(env, "E_INTERNAL", "pdb_scan: sizesOf takes (dir, buffer of NUL-terminated names)");
    return NULL;
  }
  size_t n = 0;
  for (size_t i = 0; i < len; i++) n += buf[i] == 0;
  double *sizes = NULL;
  if (napi_create_arraybuffer(env, n * sizeof(double), (void **)&sizes, &ab) != napi_ok) return NULL;
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int openErr = dfd < 0 ? errno : 0;
  size_t k = 0;
  for (size_t i = 0; i < len && k < n; k++) {
    struct stat st;
    const char *name = buf + i;
    if (dfd < 0) sizes[k] = -(double)openErr;
    else sizes[k] = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? (double)st.st_size : -(double)errno;
    i += strlen(name) + 1;
  }
  if (dfd >= 0) close(dfd);
  napi_create_typedarray(env, napi_float64_array, n, ab, 0, &out);
  return out;
}

void osExports(napi_env env, napi_value exports) {
  napi_value fn;
  struct { const char *name; napi_callback cb; } at[] = {
      {"openAt", OpenAt},     {"statAt", StatAt},       {"renameAt", RenameAt},     {"linkAt", LinkAt},   {"unlinkAt", UnlinkAt},
      {"mkdirAt", MkdirAt},   {"symlinkAt", SymlinkAt}, {"readlinkAt", ReadlinkAt}, {"listAt", ListAt},
  };
  for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
    napi_create_function(env, at[k].name, NAPI_AUTO_LENGTH, at[k].cb, NULL, &fn);
    napi_set_named_property(env, exports, at[k].name, fn);
  }
  napi_create_function(env, "mount", NAPI_AUTO_LENGTH, Mount, NULL, &fn);
  napi_set_named_property(env, exports, "mount", fn);
  napi_create_function(env, "umount", NAPI_AUTO_LENGTH, Umount, NULL, &fn);
  napi_set_named_property(env, exports, "umount", fn);
  napi_create_function(env, "portsFree", NAPI_AUTO_LENGTH, PortsFree, NULL, &fn);
  napi_set_named_property(env, exports, "portsFree", fn);
  napi_create_function(env, "sizesOf", NAPI_AUTO_LENGTH, SizesOf, NULL, &fn);
  napi_set_named_property(env, exports, "sizesOf", fn);
}
