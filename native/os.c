// System calls pdb-env would otherwise start a program or an event-loop round trip for, each one
// measured on the create path (docs/evidence.md): mount(2) and umount2(2) of an overlay session
// instead of mount(8) and umount(8) (a process start, ~20 ms of a 0.2 s create), and the port
// probe of a session's block by bind(2) and listen(2) instead of twenty net.Server listens (whose
// address lookups compile Node's IPv6 pattern, ~15 ms). model/os/native.ts calls them; where the
// addon is not built, the callers keep the programs and the servers.
#define _GNU_SOURCE
#include <node_api.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

void osExports(napi_env env, napi_value exports) {
  napi_value fn;
  napi_create_function(env, "mount", NAPI_AUTO_LENGTH, Mount, NULL, &fn);
  napi_set_named_property(env, exports, "mount", fn);
  napi_create_function(env, "umount", NAPI_AUTO_LENGTH, Umount, NULL, &fn);
  napi_set_named_property(env, exports, "umount", fn);
  napi_create_function(env, "portsFree", NAPI_AUTO_LENGTH, PortsFree, NULL, &fn);
  napi_set_named_property(env, exports, "portsFree", fn);
}
