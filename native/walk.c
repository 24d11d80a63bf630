// pdb-env's native scanner: the stat walk of a tree against its tree index, the same algorithm
// as model/scan/tree-walk.ts (the JavaScript fallback and oracle; read its header first).
//
// Phase A lstats every row of the index in parallel threads (git's preload-index); phase B walks
// the tree from the root on one thread, reading only the directories the directory rule does not
// vouch for, using phase A's stat data where a row exists, and emits the touched entries as
// records (layout in writeRecord). Times are computed exactly as Node computes mtimeMs
// (sec * 1000 + nsec / 1e6 in doubles; built with -ffp-contract=off so no FMA changes a bit).
#define _GNU_SOURCE
#include "scan.h"

static double ms(struct timespec t) { return (double)t.tv_sec * 1000.0 + (double)t.tv_nsec / 1000000.0; }

static void fill(stat_t *s, const struct stat *st) {
  s->ino = (double)st->st_ino;
  s->size = (double)st->st_size;
  s->mtime = ms(st->MTIM);
  s->ctime = ms(st->CTIM);
  s->mode = (uint32_t)st->st_mode;
  s->nlink = (uint32_t)st->st_nlink;
  s->err = 0;
}

static int grow(buf_t *b, size_t more) {
  if (b->len + more <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 65536;
  while (cap < b->len + more) cap *= 2;
  uint8_t *p = realloc(b->p, cap);
  if (!p) return 0;
  b->p = p;
  b->cap = cap;
  return 1;
}

// Strict UTF-8 (what a fatal TextDecoder accepts): no overlong forms, surrogates or code points past U+10FFFF.
static int validUtf8(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = s[i];
    if (c < 0x80) { i++; continue; }
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
    else return 0;
    if (i + len > n) return 0;
    if (s[i + 1] < lo || s[i + 1] > hi) return 0;
    for (size_t k = 2; k < len; k++) if (s[i + k] < 0x80 || s[i + k] > 0xBF) return 0;
    i += len;
  }
  return 1;
}

static int fail(scan_t *s, int err, int errNo, uint32_t mode) {
  if (s->err) return 0;
  s->err = err;
  s->errNo = errNo;
  s->errMode = mode;
  s->errPath = strndup(s->path, s->pathLen);
  return 0;
}

static int pushName(scan_t *s, const char *name, size_t len) {
  if (s->pathLen + 1 + len + 1 > s->pathCap) {
    size_t cap = s->pathCap * 2 + len + 2;
    char *p = realloc(s->path, cap);
    if (!p) return fail(s, E_NOMEM, ENOMEM, 0);
    s->path = p;
    s->pathCap = cap;
  }
  s->path[s->pathLen++] = '/';
  memcpy(s->path + s->pathLen, name, len);
  s->pathLen += len;
  s->path[s->pathLen] = 0;
  return 1;
}

static void popName(scan_t *s, size_t len) {
  s->pathLen -= len + 1;
  s->path[s->pathLen] = 0;
}

static uint32_t nameStart(const scan_t *s, int32_t i) { return i == 0 ? 0 : s->nameEnd[i - 1]; }

// A record: f64 ino, size, mtime, ctime; u32 mode; i32 row; u32 path length; u32 target length
// (0xffffffff: none); u32 kind; u32 0; then the relative path and the target, padded to 8 bytes.
static int writeRecord(scan_t *s, int32_t row, int kind, const stat_t *st, const char *target, size_t targetLen) {
  const char *rel = s->path + s->rootLen + 1;
  size_t relLen = s->pathLen - s->rootLen - 1;
  size_t body = relLen + (target ? targetLen : 0);
  size_t total = 56 + ((body + 7) & ~(size_t)7);
  if (!grow(&s->out, total)) return fail(s, E_NOMEM, ENOMEM, 0);
  uint8_t *r = s->out.p + s->out.len;
  double d[4] = {st->ino, st->size, st->mtime, st->ctime};
  uint32_t u[6] = {st->mode, (uint32_t)row, (uint32_t)relLen, target ? (uint32_t)targetLen : 0xffffffffu, (uint32_t)kind, 0};
  memcpy(r, d, 32);
  memcpy(r + 32, u, 24);
  memcpy(r + 56, rel, relLen);
  if (target) memcpy(r + 56 + relLen, target, targetLen);
  memset(r + 56 + body, 0, total - 56 - body);
  s->out.len += total;
  return 1;
}

// The path being visited, relative to the open root ("." for the root itself).
static const char *here(const scan_t *s) { return s->pathLen > s->rootLen ? s->path + s->rootLen + 1 : "."; }

static int visit(scan_t *s, int32_t list, int keepNames);


// One entry at s->path with stat data `st` and index row `row` (-1: none).
static int entry(scan_t *s, int32_t row, const stat_t *st) {
  int kind = S_ISDIR(st->mode) ? KIND_DIR : S_ISREG(st->mode) ? KIND_FILE : S_ISLNK(st->mode) ? KIND_LINK : 0;
  if (!kind) return fail(s, E_UNSUPPORTED, 0, st->mode);
  s->entries++;
  // A file with other links can change through a path no watch sees: the daemon's watch lstats it every time.
  if (kind != KIND_DIR && st->nlink > 1) {
    const char *rel = here(s);
    size_t len = strlen(rel) + 1;
    if (!grow(&s->linked, len)) return fail(s, E_NOMEM, ENOMEM, 0);
    memcpy(s->linked.p + s->linked.len, rel, len);
    s->linked.len += len;
  }
  if (kind == KIND_FILE) {
    s->files++;
    s->bytes += st->size;
  }
  int known = row >= 0 && s->kind[row] == kind;
  int same = known && (s->flags[row] & F_TRUSTED) && s->ino[row] == st->ino && s->mtime[row] == st->mtime && s->ctime[row] == st->ctime;
  if (same && kind != KIND_DIR) same = s->size[row] == st->size && s->mode[row] == st->mode;
  if (row >= 0) s->status[row] = same ? 1 : 2;
  if (!same) {
    if (kind == KIND_LINK) {
      size_t cap = (size_t)st->size + 1 > 256 ? (size_t)st->size + 1 : 256;
      for (;;) {
        char *t = malloc(cap);
        if (!t) return fail(s, E_NOMEM, ENOMEM, 0);
        ssize_t got = readlinkat(s->rootFd, here(s), t, cap);
        if (got < 0) {
          int e = errno;
          free(t);
          return fail(s, e == ENOENT ? E_VANISHED : E_ERRNO, e, 0);
        }
        if ((size_t)got < cap) {
          int ok = validUtf8((const uint8_t *)t, (size_t)got) ? writeRecord(s, row, kind, st, t, (size_t)got) : fail(s, E_NON_UTF8_TARGET, 0, 0);
          free(t);
          if (!ok) return 0;
          break;
        }
        free(t);
        cap *= 2;
      }
    } else if (!writeRecord(s, row, kind, st, NULL, 0)) return 0;
  }
  if (kind == KIND_DIR) return visit(s, known ? row : -1, same && s->dirRule);
  return 1;
}

static int lstatHere(scan_t *s, stat_t *out) {
  struct stat st;
  if (fstatat(s->rootFd, here(s), &st, AT_SYMLINK_NOFOLLOW) != 0) return fail(s, errno == ENOENT ? E_VANISHED : E_ERRNO, errno, 0);
  fill(out, &st);
  return 1;
}

static int excluded(const scan_t *s, const char *name) {
  for (uint32_t k = 0; k < s->nExNames; k++)
    if (strcmp(s->exNames[k], name) == 0) return 1;
  const char *rel = s->path + s->rootLen + 1;
  for (uint32_t k = 0; k < s->nExPaths; k++)
    if (strcmp(s->exPaths[k], rel) == 0) return 1;
  return 0;
}

static int byName(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

// The names of the directory at s->path, sorted by their bytes; NULL on failure.
static char **readNames(scan_t *s, size_t *count) {
  int fd = openat(s->rootFd, here(s), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    fail(s, (e == ENOENT || e == ENOTDIR) && s->pathLen > s->rootLen ? E_VANISHED : E_ERRNO, e, 0);
    return NULL;
  }
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    fail(s, E_ERRNO, errno, 0);
    return NULL;
  }
  size_t n = 0, cap = 64;
  char **names = malloc(cap * sizeof(char *));
  struct dirent *de;
  int e = 0;
  // errno is readdir's answer only when set just before it: an allocation that succeeds may
  // leave it set (glibc's malloc falling back from brk to mmap leaves ENOMEM).
  while (names && (errno = 0, de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.' && (de->d_name[1] == 0 || (de->d_name[1] == '.' && de->d_name[2] == 0))) continue;
    if (n == cap) {
      char **more = realloc(names, (cap *= 2) * sizeof(char *));
      if (!more) {
        e = ENOMEM;
        break;
      }
      names = more;
    }
    if (!(names[n] = strdup(de->d_name))) {
      e = ENOMEM;
      break;
    }
    n++;
  }
  if (!e && names) e = errno;
  closedir(d);
  if (e != 0 || !names) {
    for (size_t k = 0; names && k < n; k++) free(names[k]);
    free(names);
    fail(s, E_ERRNO, e ? e : ENOMEM, 0);
    return NULL;
  }
  qsort(names, n, sizeof(char *), byName);
  *count = n;
  return names;
}

static void freeNames(char **names, size_t n) {
  for (size_t k = 0; k < n; k++) free(names[k]);
  free(names);
}

// The directory at s->path; `list` is whose recorded children it has (its row, n for the root, -1: none).
static int visit(scan_t *s, int32_t list, int keepNames) {
  // A recorded name gone while the directory's stat data is unchanged: its recorded list was never
  // true (a backend that wrote another tree than it recorded). Read the directory instead.
  for (int32_t k = keepNames && list >= 0 ? s->firstChild[list] : -1; k >= 0; k = s->nextSibling[k])
    if (s->pre[k].err == ENOENT) {
      keepNames = 0;
      break;
    }
  if (keepNames && list >= 0) {
    for (int32_t k = s->firstChild[list]; k >= 0; k = s->nextSibling[k]) {
      uint32_t a = nameStart(s, k), b = s->nameEnd[k];
      if (!pushName(s, (const char *)s->nameBytes + a, b - a)) return 0;
      stat_t *p = &s->pre[k];
      if (p->err) return fail(s, p->err == ENOENT ? E_VANISHED : E_ERRNO, p->err, 0);
      if (!entry(s, k, p)) return 0;
      popName(s, b - a);
    }
    return 1;
  }
  s->dirsRead++;
  size_t n = 0;
  char **names = readNames(s, &n);
  if (!names) return 0;
  int32_t k = list >= 0 ? s->firstChild[list] : -1;
  int ok = 1;
  for (size_t j = 0; ok && j < n; j++) {
    size_t len = strlen(names[j]);
    // Recorded children are in byte order too: advance to the first not below this name.
    int32_t row = -1;
    while (k >= 0) {
      uint32_t a = nameStart(s, k), b = s->nameEnd[k];
      size_t m = b - a < len ? b - a : len;
      int c = memcmp(s->nameBytes + a, names[j], m);
      if (c == 0) c = (b - a > len) - (b - a < len);
      if (c < 0) {
        k = s->nextSibling[k];
        continue;
      }
      if (c == 0) {
        row = k;
        k = s->nextSibling[k];
      }
      break;
    }
    if (!pushName(s, names[j], len)) ok = 0;
    else if (!validUtf8((const uint8_t *)names[j], len)) ok = fail(s, E_NON_UTF8_NAME, 0, 0);
    else if (!excluded(s, names[j])) {
      stat_t st;
      ok = (row >= 0 && !s->pre[row].err) ? entry(s, row, &s->pre[row]) : (lstatHere(s, &st) && entry(s, row, &st));
    }
    if (ok) popName(s, len);
  }
  freeNames(names, n);
  return ok;
}

// ---- phase A: lstat every row of the index, split over threads.
//
// By directory: each directory of the index is opened once (O_PATH) and its rows are lstat'ed by
// name relative to it, so the kernel walks a path once per directory rather than once per row
// (by hand on the pinned monorepo, 26,431 rows in 3,677 directories: 8-10% less time than by the
// rows' paths from the root, hot). A directory that cannot be opened so (gone, replaced by a
// symlink) has its rows lstat'ed by their paths from the root, as phase B expects of them.

typedef struct {
  scan_t *s;
  const int32_t *dirs; // directory rows, -1 for the root
  uint32_t from, to;   // this thread's part of dirs
} chunk_t;

// Row i's stat data by its path from the root (`path` grown as needed; NULL when out of memory).
static char *lstatByPath(scan_t *s, uint32_t i, char *path, size_t *cap) {
  uint32_t a = nameStart(s, (int32_t)i), nameLen = s->nameEnd[i] - a;
  int32_t p = s->parent[i];
  size_t dirLen = p < 0 ? 0 : s->dirOff[p + 1] - s->dirOff[p] - 1; // stored with its NUL
  size_t len = p < 0 ? nameLen : dirLen + 1 + nameLen;
  if (len + 1 > *cap) {
    char *more = realloc(path, len * 2 + 1);
    if (!more) {
      s->pre[i].err = ENOMEM;
      return path;
    }
    path = more;
    *cap = len * 2 + 1;
  }
  if (p >= 0) {
    memcpy(path, s->dirPaths + s->dirOff[p], dirLen);
    path[dirLen] = '/';
  }
  memcpy(path + (p < 0 ? 0 : dirLen + 1), s->nameBytes + a, nameLen);
  path[len] = 0;
  struct stat st;
  if (fstatat(s->rootFd, path, &st, AT_SYMLINK_NOFOLLOW) == 0) fill(&s->pre[i], &st);
  else s->pre[i].err = errno ? errno : EIO;
  return path;
}

static void *preload(void *arg) {
  chunk_t *c = arg;
  scan_t *s = c->s;
  size_t cap = 4096;
  char *path = malloc(cap);
  for (uint32_t q = c->from; q < c->to; q++) {
    int32_t d = c->dirs[q];
    int fd = -2; // -2: not opened yet; -1: cannot be
    for (int32_t k = s->firstChild[d < 0 ? (int32_t)s->n : d]; k >= 0; k = s->nextSibling[k]) {
      stat_t *p = &s->pre[k];
      if (s->vouch && s->vouch[k]) {
        *p = (stat_t){.ino = s->ino[k], .size = s->size[k], .mtime = s->mtime[k], .ctime = s->ctime[k], .mode = s->mode[k], .nlink = 1};
        continue;
      }
      if (!path) {
        p->err = ENOMEM;
        continue;
      }
      if (fd == -2) fd = d < 0 ? s->rootFd : openat(s->rootFd, s->dirPaths + s->dirOff[d], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) {
        path = lstatByPath(s, (uint32_t)k, path, &cap);
        continue;
      }
      uint32_t a = nameStart(s, k), len = s->nameEnd[k] - a;
      if (len + 1 > cap) {
        char *more = realloc(path, len * 2 + 1);
        if (!more) {
          p->err = ENOMEM;
          continue;
        }
        path = more;
        cap = len * 2 + 1;
      }
      memcpy(path, s->nameBytes + a, len);
      path[len] = 0;
      struct stat st;
      if (fstatat(fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0) fill(p, &st);
      else p->err = errno ? errno : EIO;
    }
    if (fd >= 0 && fd != s->rootFd) close(fd);
  }
  free(path);
  return NULL;
}

static void preloadAll(scan_t *s, int threads) {
  if (s->n == 0) return;
  if (threads < 1) threads = 1;
  if ((uint32_t)threads > s->n / 256 + 1) threads = (int)(s->n / 256 + 1);
  if (threads > 64) threads = 64;
  // The directories (the root first), each thread a run of them holding about n / threads rows.
  int32_t *dirs = malloc((s->n + 1) * sizeof(int32_t));
  uint32_t *rows = malloc((s->n + 1) * sizeof(uint32_t));
  if (!dirs || !rows) {
    for (uint32_t i = 0; i < s->n; i++) s->pre[i].err = ENOMEM;
    free(dirs);
    free(rows);
    return;
  }
  uint32_t nd = 0;
  dirs[nd++] = -1;
  for (uint32_t i = 0; i < s->n; i++)
    if (s->kind[i] == KIND_DIR) dirs[nd++] = (int32_t)i;
  for (uint32_t q = 0; q < nd; q++) {
    rows[q] = 0;
    for (int32_t k = s->firstChild[dirs[q] < 0 ? (int32_t)s->n : dirs[q]]; k >= 0; k = s->nextSibling[k]) rows[q]++;
  }
  chunk_t chunks[64];
  pthread_t ids[64];
  int started[64] = {0};
  uint64_t got = 0;
  for (uint32_t t = 0, q = 0; t < (uint32_t)threads; t++) {
    uint64_t want = (uint64_t)s->n * (t + 1) / (uint32_t)threads;
    chunks[t] = (chunk_t){.s = s, .dirs = dirs, .from = q};
    while (q < nd && (got < want || t == (uint32_t)threads - 1)) got += rows[q++];
    chunks[t].to = q;
  }
  for (int t = 1; t < threads; t++) started[t] = pthread_create(&ids[t], NULL, preload, &chunks[t]) == 0;
  preload(&chunks[0]);
  for (int t = 1; t < threads; t++) {
    if (started[t]) pthread_join(ids[t], NULL);
    else preload(&chunks[t]);
  }
  free(dirs);
  free(rows);
}

// The index's structure, checked (memory safety does not rest on the caller), its child lists
// and each directory's path for phase A.
int scanPrepareIndex(scan_t *s, size_t nameBytes) {
  for (uint32_t i = 0, end = 0; i < s->n; i++) {
    if (s->nameEnd[i] <= end || s->nameEnd[i] > nameBytes) return 0;
    end = s->nameEnd[i];
    int32_t p = s->parent[i];
    if (p >= (int32_t)i || p < -1 || (p >= 0 && s->kind[p] != KIND_DIR)) return 0;
  }
  // Each directory's path, with its NUL, at dirOff[i] .. dirOff[i + 1] (rows that are no directory take no room).
  s->dirOff = calloc(s->n + 1, sizeof(size_t));
  if (!s->dirOff) return 0;
  size_t *len = calloc(s->n + 1, sizeof(size_t));
  if (!len) return 0;
  for (uint32_t i = 0; i < s->n; i++) {
    int32_t p = s->parent[i];
    len[i] = (p < 0 ? 0 : len[p] + 1) + (s->nameEnd[i] - nameStart(s, (int32_t)i));
    s->dirOff[i + 1] = s->dirOff[i] + (s->kind[i] == KIND_DIR ? len[i] + 1 : 0);
  }
  s->dirPaths = malloc(s->dirOff[s->n] + 1);
  if (!s->dirPaths) {
    free(len);
    return 0;
  }
  for (uint32_t i = 0; i < s->n; i++) {
    if (s->kind[i] != KIND_DIR) continue;
    int32_t p = s->parent[i];
    char *at = s->dirPaths + s->dirOff[i];
    size_t o = 0;
    if (p >= 0) {
      memcpy(at, s->dirPaths + s->dirOff[p], len[p]);
      o = len[p];
      at[o++] = '/';
    }
    memcpy(at + o, s->nameBytes + nameStart(s, (int32_t)i), s->nameEnd[i] - nameStart(s, (int32_t)i));
    at[len[i]] = 0;
  }
  free(len);
  s->firstChild = malloc((s->n + 1) * sizeof(int32_t));
  s->nextSibling = malloc((s->n + 1) * sizeof(int32_t));
  s->pre = calloc(s->n + 1, sizeof(stat_t));
  if (!s->firstChild || !s->nextSibling || !s->pre) return 0;
  for (uint32_t i = 0; i <= s->n; i++) s->firstChild[i] = -1;
  for (int32_t i = (int32_t)s->n - 1; i >= 0; i--) {
    int32_t p = s->parent[i] < 0 ? (int32_t)s->n : s->parent[i];
    s->nextSibling[i] = s->firstChild[p];
    s->firstChild[p] = i;
  }
  return 1;
}


void scanFree(scan_t *s) {
  for (uint32_t k = 0; s->exNames && k < s->nExNames; k++) free(s->exNames[k]);
  for (uint32_t k = 0; s->exPaths && k < s->nExPaths; k++) free(s->exPaths[k]);
  free(s->exNames);
  free(s->exPaths);
  free(s->firstChild);
  free(s->nextSibling);
  free(s->pre);
  free(s->dirPaths);
  free(s->dirOff);
  free(s->path);
  free(s->out.p);
  free(s->linked.p);
  free(s->errPath);
}

void scanRoot(scan_t *s, const char *root, const double *keep, double *rootStat, int threads) {
  s->rootLen = strlen(root);
  s->pathCap = s->rootLen + 4096;
  s->path = malloc(s->pathCap);
  if (!s->path) {
    s->err = E_NOMEM;
    s->errNo = ENOMEM;
    return;
  }
  memcpy(s->path, root, s->rootLen + 1);
  s->pathLen = s->rootLen;
  struct stat st;
  if (lstat(s->path, &st) != 0) {
    fail(s, errno == ENOENT ? E_ROOT_MISSING : E_ERRNO, errno, 0);
    return;
  }
  if (!S_ISDIR(st.st_mode)) {
    fail(s, E_ROOT_NOT_DIR, ENOTDIR, 0);
    return;
  }
  s->rootFd = open(s->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (s->rootFd < 0) {
    fail(s, errno == ENOENT ? E_ROOT_MISSING : E_ERRNO, errno, 0);
    return;
  }
  stat_t r;
  fill(&r, &st);
  double values[5] = {r.ino, r.size, r.mtime, r.ctime, (double)r.mode};
  memcpy(rootStat, values, sizeof values);
  int keepNames = keep && s->dirRule && keep[0] == r.ino && keep[1] == r.mtime && keep[2] == r.ctime;
  preloadAll(s, threads);
  visit(s, s->hasIndex ? (int32_t)s->n : -1, keepNames);
  close(s->rootFd);
}

