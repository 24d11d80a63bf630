// inotify for the daemon's watch of session roots (model/scan/watch.ts): an instance, a watch on
// one directory, and everything queued so far, read without waiting. The kernel queues an event
// before the call that caused it returns, so a read at a checkpoint's request sees every change
// made before the request was sent. Linux only: elsewhere each call gives ENOSYS and the daemon
// walks every time.
#define _GNU_SOURCE
#include <node_api.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/inotify.h>
#endif
#include "os.h"

static napi_value int32Value(napi_env env, int v) {
  napi_value out;
  napi_create_int32(env, v, &out);
  return out;
}

// watchOpen() -> a non-blocking inotify descriptor, or -errno.
static napi_value WatchOpen(napi_env env, napi_callback_info info) {
#ifdef __linux__
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  return int32Value(env, fd < 0 ? -errno : fd);
#else
  return int32Value(env, -ENOSYS);
#endif
}

// watchAdd(fd, path) -> the watch descriptor of the directory at `path` (not followed if a link), or -errno.
static napi_value WatchAdd(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value args[2];
  napi_get_cb_info(env, info, &argc, args, NULL, NULL);
  int32_t fd = -1;
  char *path = argc < 2 || napi_get_value_int32(env, args[0], &fd) != napi_ok ? NULL : napiString(env, args[1]);
  if (!path) return int32Value(env, -EINVAL);
#ifdef __linux__
  uint32_t mask = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF |
                  IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW;
  int wd = inotify_add_watch(fd, path, mask);
  int out = wd < 0 ? -errno : wd;
#else
  int out = -ENOSYS;
#endif
  free(path);
  return int32Value(env, out);
}

// watchRead(fd) -> a Buffer of every event queued (struct inotify_event after struct inotify_event;
// empty when none is), or -errno.
static napi_value WatchRead(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value arg;
  napi_get_cb_info(env, info, &argc, &arg, NULL, NULL);
  int32_t fd = -1;
  if (argc < 1 || napi_get_value_int32(env, arg, &fd) != napi_ok) return int32Value(env, -EINVAL);
  size_t cap = 65536, len = 0;
  char *buf = malloc(cap);
  if (!buf) return int32Value(env, -ENOMEM);
  for (;;) {
    if (cap - len < 65536) {
      char *more = realloc(buf, cap * 2);
      if (!more) {
        free(buf);
        return int32Value(env, -ENOMEM);
      }
      buf = more;
      cap *= 2;
    }
    ssize_t got = read(fd, buf + len, cap - len);
    if (got > 0) {
      len += (size_t)got;
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno != EAGAIN) {
      int e = errno;
      free(buf);
      return int32Value(env, -e);
    }
    break;
  }
  napi_value out;
  napi_create_buffer_copy(env, len, buf, NULL, &out);
  free(buf);
  return out;
}

void watchExports(napi_env env, napi_value exports) {
  napi_value fn;
  napi_create_function(env, "watchOpen", NAPI_AUTO_LENGTH, WatchOpen, NULL, &fn);
  napi_set_named_property(env, exports, "watchOpen", fn);
  napi_create_function(env, "watchAdd", NAPI_AUTO_LENGTH, WatchAdd, NULL, &fn);
  napi_set_named_property(env, exports, "watchAdd", fn);
  napi_create_function(env, "watchRead", NAPI_AUTO_LENGTH, WatchRead, NULL, &fn);
  napi_set_named_property(env, exports, "watchRead", fn);
}
