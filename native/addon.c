// The N-API face of the native addon: the scanner (walk.c): scan(args) -> { touched, entries,
// files, bytes, dirsRead } or { error, errno, path, mode }, which model/scan/native-walk.ts calls
// and decodes; the Snapshot writers (snapshot.c); and the system calls of os.c.
#define _GNU_SOURCE
#include <errno.h>
#include <node_api.h>
#include <sys/socket.h>
#include "scan.h"
#include "snapshot.h"
#include "os.h"


static napi_value prop(napi_env env, napi_value obj, const char *name) {
  napi_value v = NULL;
  napi_get_named_property(env, obj, name, &v);
  return v;
}

static int isUndefined(napi_env env, napi_value v) {
  napi_valuetype t;
  return !v || napi_typeof(env, v, &t) != napi_ok || t == napi_undefined || t == napi_null;
}

static void *typed(napi_env env, napi_value obj, const char *name, size_t *length) {
  napi_value v = prop(env, obj, name);
  napi_typedarray_type type;
  void *data = NULL;
  size_t len = 0;
  static uint64_t empty;
  if (isUndefined(env, v) || napi_get_typedarray_info(env, v, &type, &len, &data, NULL, NULL) != napi_ok) return NULL;
  if (length) *length = len;
  return data ? data : &empty; // a zero-length array may have no storage
}

// A JavaScript string as a malloc()ed UTF-8 C string; NULL when it is none (os.c uses it too).
char *napiString(napi_env env, napi_value v) {
  size_t len = 0;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) return NULL;
  char *out = malloc(len + 1);
  if (out) napi_get_value_string_utf8(env, v, out, len + 1, &len);
  return out;
}

static char **strings(napi_env env, napi_value arr, uint32_t *count) {
  uint32_t n = 0;
  napi_get_array_length(env, arr, &n);
  char **out = calloc(n + 1, sizeof(char *));
  for (uint32_t i = 0; out && i < n; i++) {
    napi_value v;
    napi_get_element(env, arr, i, &v);
    out[i] = napiString(env, v);
  }
  *count = n;
  return out;
}

static void setNumber(napi_env env, napi_value obj, const char *name, double x) {
  napi_value v;
  napi_create_double(env, x, &v);
  napi_set_named_property(env, obj, name, v);
}

static int readIndex(napi_env env, napi_value idx, scan_t *s) {
  size_t n = 0;
  s->kind = typed(env, idx, "kind", &n);
  s->n = (uint32_t)n;
  s->flags = typed(env, idx, "flags", NULL);
  s->parent = typed(env, idx, "parent", NULL);
  s->nameEnd = typed(env, idx, "nameEnd", NULL);
  size_t nameBytes = 0;
  s->nameBytes = typed(env, idx, "nameBytes", &nameBytes);
  s->ino = typed(env, idx, "ino", NULL);
  s->size = typed(env, idx, "size", NULL);
  s->mtime = typed(env, idx, "mtime", NULL);
  s->ctime = typed(env, idx, "ctime", NULL);
  s->mode = typed(env, idx, "mode", NULL);
  if (!s->kind || !s->flags || !s->parent || !s->nameEnd || !s->ino || !s->size || !s->mtime || !s->ctime || !s->mode) return 0;
  if (s->n && !s->nameBytes) return 0;
  return scanPrepareIndex(s, nameBytes);
}

static const char *errName(int err) {
  switch (err) {
    case E_ROOT_MISSING: return "root-missing";
    case E_ROOT_NOT_DIR: return "root-not-dir";
    case E_UNSUPPORTED: return "unsupported";
    case E_NON_UTF8_NAME: return "non-utf8-name";
    case E_NON_UTF8_TARGET: return "non-utf8-target";
    case E_VANISHED: return "vanished";
    case E_NOMEM: return "nomem";
    default: return "errno";
  }
}

static napi_value result(napi_env env, scan_t *s) {
  napi_value out, v;
  napi_create_object(env, &out);
  if (s->err) {
    napi_create_string_utf8(env, errName(s->err), NAPI_AUTO_LENGTH, &v);
    napi_set_named_property(env, out, "error", v);
    setNumber(env, out, "errno", s->errNo);
    setNumber(env, out, "mode", s->errMode);
    const char *p = s->errPath ? s->errPath : "";
    napi_create_buffer_copy(env, strlen(p), p, NULL, &v);
    napi_set_named_property(env, out, "path", v);
    return out;
  }
  napi_create_buffer_copy(env, s->out.len, s->out.len ? s->out.p : (const uint8_t *)"", NULL, &v);
  napi_set_named_property(env, out, "touched", v);
  setNumber(env, out, "entries", s->entries);
  setNumber(env, out, "files", s->files);
  setNumber(env, out, "bytes", s->bytes);
  setNumber(env, out, "dirsRead", s->dirsRead);
  napi_create_buffer_copy(env, s->linked.len, s->linked.len ? s->linked.p : (const uint8_t *)"", NULL, &v);
  napi_set_named_property(env, out, "linked", v);
  return out;
}

static napi_value Scan(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value args;
  napi_get_cb_info(env, info, &argc, &args, NULL, NULL);
  scan_t s;
  memset(&s, 0, sizeof s);
  char *root = napiString(env, prop(env, args, "root"));
  s.exNames = strings(env, prop(env, args, "excludeNames"), &s.nExNames);
  s.exPaths = strings(env, prop(env, args, "excludePaths"), &s.nExPaths);
  bool dirRule = false;
  napi_get_value_bool(env, prop(env, args, "dirRule"), &dirRule);
  s.dirRule = dirRule;
  int32_t threads = 1;
  napi_get_value_int32(env, prop(env, args, "threads"), &threads);
  double *rootStat = typed(env, args, "rootStat", NULL);
  const double *keep = typed(env, args, "rootKeep", NULL);
  napi_value idx = prop(env, args, "index");
  int ok = root && s.exNames && s.exPaths && rootStat;
  if (ok && !isUndefined(env, idx)) {
    ok = readIndex(env, idx, &s);
    s.hasIndex = 1;
    s.status = typed(env, args, "status", NULL);
    size_t vouched = 0;
    s.vouch = typed(env, args, "vouch", &vouched);
    ok = ok && s.status && (!s.vouch || vouched == s.n);
  }
  if (!ok) {
    free(root);
    scanFree(&s);
    napi_throw_error(env, "E_INTERNAL", "pdb_scan: bad arguments");
    return NULL;
  }
  scanRoot(&s, root, keep, rootStat, threads);
  free(root);
  napi_value out = result(env, &s);
  scanFree(&s);
  return out;
}

static void freeBytes(napi_env env, void *data, void *hint) { free(data); }

// A Snapshot's block as handed to JavaScript: its size (for snapshotFree) and the bytes written.
typedef struct {
  size_t cap, len;
} block_t;

static void freeSnapshot(napi_env env, void *data, void *hint) {
  block_t *b = hint;
  int64_t left;
  napi_adjust_external_memory(env, -(int64_t)b->len, &left);
  snapshotFree(data, b->cap);
  free(b);
}

// A Snapshot's block handed to JavaScript (snapshotFree when its Buffer is collected), or copied.
// V8 is told of the bytes written, so a collection comes as soon as their garbage would matter.
static napi_value handOverSnapshot(napi_env env, uint8_t *p, size_t len, size_t cap) {
  napi_value v;
  int64_t total;
  block_t *b = malloc(sizeof *b);
  if (b) *b = (block_t){.cap = cap, .len = len};
  if (b && napi_create_external_buffer(env, len, p, freeSnapshot, b, &v) == napi_ok) {
    napi_adjust_external_memory(env, (int64_t)len, &total);
    return v;
  }
  free(b);
  napi_status st = napi_create_buffer_copy(env, len, p, NULL, &v);
  snapshotFree(p, cap);
  return st == napi_ok ? v : NULL;
}

// The columns, head and tail of a snapshotBytes call, checked; 0 (an exception
// thrown) when they are not what snapshot.c may read.
static int snapshotArgs(napi_env env, napi_callback_info info, size_t want, napi_value *args, snapshot_cols_t *c, void **h, size_t *head,
                        void **t, size_t *tail) {
  size_t argc = want;
  napi_get_cb_info(env, info, &argc, args, NULL, NULL);
  memset(c, 0, sizeof *c);
  size_t n = 0, names = 0, values = 0, digests = 0;
  int ok = argc >= 3 && argc <= want;
  for (size_t k = argc; k < want; k++) napi_get_undefined(env, &args[k]);
  if (ok) {
    c->kind = typed(env, args[0], "kind", &n);
    c->n = (uint32_t)n;
    c->flags = typed(env, args[0], "flags", NULL);
    c->parent = typed(env, args[0], "parent", NULL);
    c->nameEnd = typed(env, args[0], "nameEnd", NULL);
    c->nameBytes = typed(env, args[0], "nameBytes", &names);
    c->valueEnd = typed(env, args[0], "valueEnd", NULL);
    c->valueBytes = typed(env, args[0], "valueBytes", &values);
    c->digest = typed(env, args[0], "digest", &digests);
    c->size = typed(env, args[0], "size", NULL);
  }
  ok = ok && c->kind && c->flags && c->parent && c->nameEnd && c->nameBytes && c->valueEnd && c->valueBytes && c->digest && c->size;
  ok = ok && napi_get_buffer_info(env, args[1], h, head) == napi_ok && napi_get_buffer_info(env, args[2], t, tail) == napi_ok;
  ok = ok && digests >= n * 32;
  for (uint32_t i = 0, ne = 0, ve = 0; ok && i < c->n; i++) {
    int32_t p = c->parent[i];
    ok = c->nameEnd[i] > ne && c->nameEnd[i] <= names && c->valueEnd[i] >= ve && c->valueEnd[i] <= values && p < (int32_t)i && p >= -1 &&
         (p < 0 || c->kind[p] == 1);
    ne = c->nameEnd[i];
    ve = c->valueEnd[i];
  }
  if (!ok) napi_throw_error(env, "E_INTERNAL", "pdb_scan: bad columns");
  return ok;
}

// A typed array of exactly this type and at least `least` elements; NULL otherwise.
static void *typedAs(napi_env env, napi_value v, napi_typedarray_type want, size_t least) {
  napi_typedarray_type type;
  void *data = NULL;
  size_t len = 0;
  static uint64_t empty;
  if (isUndefined(env, v) || napi_get_typedarray_info(env, v, &type, &len, &data, NULL, NULL) != napi_ok || type != want || len < least) return NULL;
  return data ? data : &empty;
}

// A Buffer of `len` malloc'ed bytes at `p`, handed over (freed when collected) or copied; p is freed or owned.
static napi_value handOver(napi_env env, uint8_t *p, size_t len) {
  napi_value v;
  if (len == 0) napi_create_buffer(env, 0, NULL, &v);
  else if (napi_create_external_buffer(env, len, p, freeBytes, NULL, &v) == napi_ok) return v;
  else napi_create_buffer_copy(env, len, p, NULL, &v);
  free(p);
  return v;
}

// snapshotBytes(columns, head, tail, ends?) -> Buffer: head, every row's canonical entry, tail
// (snapshot.c); `ends` (a Uint32Array of n + 1) takes where each row's entry ends.
static napi_value SnapshotBytes(napi_env env, napi_callback_info info) {
  napi_value args[4];
  snapshot_cols_t c;
  void *h = NULL, *t = NULL;
  size_t head = 0, tail = 0;
  if (!snapshotArgs(env, info, 4, args, &c, &h, &head, &t, &tail)) return NULL;
  uint32_t *ends = NULL;
  if (!isUndefined(env, args[3]) && !(ends = typedAs(env, args[3], napi_uint32_array, (size_t)c.n + 1))) {
    napi_throw_error(env, "E_INTERNAL", "pdb_scan: ends must be a Uint32Array of a row more than the columns");
    return NULL;
  }
  uint8_t *bytes = NULL;
  size_t length = 0, cap = 0;
  if (!snapshotEntries(&c, h, head, t, tail, ends, &bytes, &length, &cap)) {
    napi_throw_error(env, "E_INTERNAL", "pdb_scan: out of memory");
    return NULL;
  }
  return handOverSnapshot(env, bytes, length, cap);
}

// snapshotSplice(columns, head, tail, ends, prev, prevEnds, from) -> Buffer | null: the bytes
// snapshotBytes gives, each row `from` names (>= 0) copied from the Snapshot before (`prev`, its
// row ends `prevEnds`); null when prev and its ends do not hold together (snapshot.c).
static napi_value SnapshotSplice(napi_env env, napi_callback_info info) {
  napi_value args[7];
  snapshot_cols_t c;
  void *h = NULL, *t = NULL;
  size_t head = 0, tail = 0, prevEnds = 0;
  if (!snapshotArgs(env, info, 7, args, &c, &h, &head, &t, &tail)) return NULL;
  splice_prev_t prev = {0};
  void *bytesOf = NULL;
  uint32_t *ends = typedAs(env, args[3], napi_uint32_array, (size_t)c.n + 1);
  prev.from = typedAs(env, args[6], napi_int32_array, c.n);
  napi_typedarray_type type;
  int ok = ends && prev.from && napi_get_buffer_info(env, args[4], &bytesOf, &prev.len) == napi_ok &&
           napi_get_typedarray_info(env, args[5], &type, &prevEnds, (void **)&prev.ends, NULL, NULL) == napi_ok && type == napi_uint32_array &&
           prevEnds >= 1 && prevEnds - 1 <= UINT32_MAX;
  if (!ok) {
    napi_throw_error(env, "E_INTERNAL", "pdb_scan: snapshotSplice(columns, head, tail, ends, prev, prevEnds, from) takes typed arrays");
    return NULL;
  }
  prev.bytes = bytesOf;
  prev.n = (uint32_t)(prevEnds - 1);
  uint8_t *bytes = NULL;
  size_t length = 0, cap = 0;
  int r = snapshotSplice(&c, h, head, t, tail, &prev, ends, &bytes, &length, &cap);
  if (r == 0) {
    napi_throw_error(env, "E_INTERNAL", "pdb_scan: out of memory");
    return NULL;
  }
  napi_value none;
  napi_get_null(env, &none);
  return r < 0 ? none : handOverSnapshot(env, bytes, length, cap);
}

// keepSnapshotSpares(on): keep the blocks of Snapshots collected for the next ones (snapshot.c).
static napi_value KeepSnapshotSpares(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value arg;
  bool on = false;
  napi_get_cb_info(env, info, &argc, &arg, NULL, NULL);
  if (argc < 1 || napi_get_value_bool(env, arg, &on) != napi_ok) {
    napi_throw_type_error(env, "E_INTERNAL", "pdb_scan: keepSnapshotSpares takes a boolean");
    return NULL;
  }
  snapshotKeepSpares(on);
  return NULL;
}

// sha256(parts) -> the 32-byte digest of the byte arrays one after the other (a Buffer), or null
// where this process has no SHA-256 to give the addon; model/os/hash.ts falls back to node:crypto.
static napi_value Sha256(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value arg, out;
  napi_get_cb_info(env, info, &argc, &arg, NULL, NULL);
  uint32_t n = 0;
  bool isArray = false;
  if (argc < 1 || napi_is_array(env, arg, &isArray) != napi_ok || !isArray || napi_get_array_length(env, arg, &n) != napi_ok) {
    napi_throw_type_error(env, "E_INTERNAL", "pdb_scan: sha256 takes an array of byte arrays");
    return NULL;
  }
  const uint8_t **parts = calloc(n + 1, sizeof *parts);
  size_t *lens = calloc(n + 1, sizeof *lens);
  int ok = parts && lens;
  for (uint32_t i = 0; ok && i < n; i++) {
    napi_value v;
    napi_typedarray_type type;
    void *data = NULL;
    size_t len = 0;
    ok = napi_get_element(env, arg, i, &v) == napi_ok && napi_get_typedarray_info(env, v, &type, &len, &data, NULL, NULL) == napi_ok &&
         type == napi_uint8_array;
    parts[i] = data;
    lens[i] = len;
  }
  uint8_t digest[32];
  int hashed = ok && sha256Parts(parts, lens, n, digest);
  free(parts);
  free(lens);
  if (!ok) {
    napi_throw_type_error(env, "E_INTERNAL", "pdb_scan: sha256 takes an array of byte arrays");
    return NULL;
  }
  if (!hashed) napi_get_null(env, &out);
  else napi_create_buffer_copy(env, 32, digest, NULL, &out);
  return out;
}

// The document a chunks call is like: { bytes, list, mids } (what an earlier call gave for it), or
// none; 0 (an exception thrown) when it is not that shape.
static int likeArg(napi_env env, napi_value v, cut_like_t *like, int *given) {
  memset(like, 0, sizeof *like);
  *given = 0;
  if (isUndefined(env, v)) return 1;
  void *bytes = typed(env, v, "bytes", &like->n), *list = typed(env, v, "list", &like->listLen), *mids = typed(env, v, "mids", &like->midsLen);
  if (!bytes || !list || !mids) {
    napi_throw_type_error(env, "E_INTERNAL", "pdb_scan: chunks' like is { bytes, list, mids }");
    return 0;
  }
  like->bytes = bytes;
  like->list = list;
  like->mids = mids;
  *given = 1;
  return 1;
}

// chunks(bytes, gear, params, like?) -> { digest: Buffer(32), list: Buffer, mids: Buffer, fresh } |
// null: the sha256 of `bytes`, their content-defined chunk list and the hash's kept states
// (chunks.c chunkDocument), `fresh` the chunks it hashed; params is a Uint32Array [min, avg, max,
// hardMask, easyMask], gear an Int32Array of 256, like what an earlier call gave with its bytes.
// null where this process has no SHA-256 to give the addon (model/store/chunks.ts cuts in
// JavaScript then).
static napi_value Chunks(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value args[4], out, v;
  napi_get_cb_info(env, info, &argc, args, NULL, NULL);
  napi_typedarray_type type;
  void *data = NULL, *gear = NULL, *params = NULL;
  size_t n = 0, gearLen = 0, paramLen = 0;
  int ok = argc >= 3 && napi_get_typedarray_info(env, args[0], &type, &n, &data, NULL, NULL) == napi_ok && type == napi_uint8_array &&
           napi_get_typedarray_info(env, args[1], &type, &gearLen, &gear, NULL, NULL) == napi_ok && type == napi_int32_array &&
           gearLen == 256 && napi_get_typedarray_info(env, args[2], &type, &paramLen, &params, NULL, NULL) == napi_ok &&
           type == napi_uint32_array && paramLen == 5;
  const uint32_t *q = params;
  ok = ok && q[0] >= 64 && q[0] <= q[1] && q[1] <= q[2];
  if (!ok) {
    napi_throw_type_error(env, "E_INTERNAL", "pdb_scan: chunks takes (Uint8Array, Int32Array(256), Uint32Array(5), like?)");
    return NULL;
  }
  cut_like_t like;
  int given = 0;
  if (!likeArg(env, argc >= 4 ? args[3] : NULL, &like, &given)) return NULL;
  if (!sha256Available()) {
    napi_get_null(env, &out);
    return out;
  }
  cdc_t cdc = {.gear = gear, .min = q[0], .avg = q[1], .max = q[2], .hard = q[3], .easy = q[4]};
  cut_t cut;
  if (!chunkDocument(data, n, &cdc, given ? &like : NULL, &cut)) {
    napi_throw_error(env, "E_INTERNAL", "pdb_scan: out of memory");
    return NULL;
  }
  napi_create_object(env, &out);
  napi_create_buffer_copy(env, 32, cut.digest, NULL, &v);
  napi_set_named_property(env, out, "digest", v);
  napi_set_named_property(env, out, "list", handOver(env, cut.list, cut.listLen));
  napi_set_named_property(env, out, "mids", handOver(env, cut.mids, cut.midsLen));
  napi_create_double(env, (double)cut.fresh, &v);
  napi_set_named_property(env, out, "fresh", v);
  return out;
}

// peerCred(fd) -> { pid, uid, gid } of the process at the other end of a connected Unix socket
// (SO_PEERCRED: what the kernel recorded at connect(), which the peer cannot forge), or the errno
// (a number) where the call fails. The daemon (cli/daemon/server.ts) asks it on every connection.
static napi_value PeerCred(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value args[1], out, v;
  int32_t fd = -1;
  if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != napi_ok || argc < 1 || napi_get_value_int32(env, args[0], &fd) != napi_ok) {
    napi_throw_type_error(env, "E_INTERNAL", "pdb_scan: peerCred takes (fd)");
    return NULL;
  }
#ifdef SO_PEERCRED
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    napi_create_int32(env, errno, &v);
    return v;
  }
  napi_create_object(env, &out);
  napi_create_int32(env, (int32_t)cred.pid, &v);
  napi_set_named_property(env, out, "pid", v);
  napi_create_uint32(env, (uint32_t)cred.uid, &v);
  napi_set_named_property(env, out, "uid", v);
  napi_create_uint32(env, (uint32_t)cred.gid, &v);
  napi_set_named_property(env, out, "gid", v);
  return out;
#else
  napi_create_int32(env, ENOSYS, &v);
  return v;
#endif
}

static napi_value Init(napi_env env, napi_value exports) {
  napi_value fn, version;
  napi_create_function(env, "scan", NAPI_AUTO_LENGTH, Scan, NULL, &fn);
  napi_set_named_property(env, exports, "scan", fn);
  napi_create_function(env, "snapshotBytes", NAPI_AUTO_LENGTH, SnapshotBytes, NULL, &fn);
  napi_set_named_property(env, exports, "snapshotBytes", fn);
  napi_create_function(env, "snapshotSplice", NAPI_AUTO_LENGTH, SnapshotSplice, NULL, &fn);
  napi_set_named_property(env, exports, "snapshotSplice", fn);
  napi_create_function(env, "keepSnapshotSpares", NAPI_AUTO_LENGTH, KeepSnapshotSpares, NULL, &fn);
  napi_set_named_property(env, exports, "keepSnapshotSpares", fn);
  napi_create_function(env, "chunks", NAPI_AUTO_LENGTH, Chunks, NULL, &fn);
  napi_set_named_property(env, exports, "chunks", fn);
  napi_create_function(env, "sha256", NAPI_AUTO_LENGTH, Sha256, NULL, &fn);
  napi_set_named_property(env, exports, "sha256", fn);
  napi_create_function(env, "peerCred", NAPI_AUTO_LENGTH, PeerCred, NULL, &fn);
  napi_set_named_property(env, exports, "peerCred", fn);
  osExports(env, exports);
  watchExports(env, exports);
  napi_create_string_utf8(env, VERSION, NAPI_AUTO_LENGTH, &version);
  napi_set_named_property(env, exports, "version", version);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
