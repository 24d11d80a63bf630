// The canonical bytes of a Snapshot's entries from tree index columns: the same bytes as
// model/scan/snapshot-bytes.ts writes (and canonicalSnapshot in model/snapshot.ts), in C because
// a checkpoint runs it once per process, where a JavaScript loop over every row never gets
// optimized. Strings are escaped exactly as JSON.stringify escapes them.
#include "snapshot.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KIND_DIR 1
#define KIND_FILE 2
#define KIND_LINK 3
#define F_EXEC 1

int sha256Available(void) { return SHA256_Init && SHA256_Update && SHA256_Final; }

int sha256Parts(const uint8_t *const *parts, const size_t *lens, size_t n, uint8_t out[32]) {
  _Alignas(16) unsigned char ctx[256];
  if (!sha256Available() || SHA256_Init(ctx) != 1) return 0;
  for (size_t i = 0; i < n; i++)
    if (lens[i] && SHA256_Update(ctx, parts[i], lens[i]) != 1) return 0;
  return SHA256_Final(out, ctx) == 1;
}

typedef struct {
  uint8_t *p;
  size_t len, cap;
  int failed;
} out_t;

// ---- the blocks Snapshots are written in, kept for the next one where asked (the daemon).
//
// A block handed to JavaScript comes back through its Buffer's finalizer (snapshotFree). Fresh
// memory costs a page fault and a cleared page for every 4 KiB written: measured on this project's
// 2-core virtual machine, most of a 5 MB Snapshot's writing time. Where spares are kept, a freed
// block waits for the next Snapshot instead of going back to the system (at most SPARES of them:
// the rest are freed).
#define SPARES 2
static pthread_mutex_t sparesLock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  uint8_t *p;
  size_t cap;
} spares[SPARES];
static int keepSpares;

void snapshotKeepSpares(int on) {
  pthread_mutex_lock(&sparesLock);
  keepSpares = on;
  for (int k = 0; !on && k < SPARES; k++) {
    free(spares[k].p);
    spares[k].p = NULL;
  }
  pthread_mutex_unlock(&sparesLock);
}

void snapshotFree(void *p, size_t cap) {
  pthread_mutex_lock(&sparesLock);
  for (int k = 0; p && keepSpares && cap && k < SPARES; k++)
    if (!spares[k].p || spares[k].cap < cap) {
      void *out = spares[k].p;
      spares[k].p = p;
      spares[k].cap = cap;
      p = out; // the smaller one, or none, goes
    }
  pthread_mutex_unlock(&sparesLock);
  free(p);
}

// The smallest spare block of `least` bytes or more (its size in *cap), or NULL.
static uint8_t *takeSpare(size_t least, size_t *cap) {
  pthread_mutex_lock(&sparesLock);
  int best = -1;
  for (int k = 0; k < SPARES; k++)
    if (spares[k].p && spares[k].cap >= least && (best < 0 || spares[k].cap < spares[best].cap)) best = k;
  uint8_t *p = best < 0 ? NULL : spares[best].p;
  if (p) {
    *cap = spares[best].cap;
    spares[best].p = NULL;
  }
  pthread_mutex_unlock(&sparesLock);
  return p;
}

static void reserve(out_t *o, size_t more) {
  if (o->failed || o->len + more <= o->cap) return;
  if (!o->p && (o->p = takeSpare(more, &o->cap)) != NULL) return;
  size_t cap = o->cap ? o->cap : 1 << 20;
  while (cap < o->len + more) cap *= 2;
  uint8_t *p = realloc(o->p, cap);
  if (!p) {
    o->failed = 1;
    return;
  }
  o->p = p;
  o->cap = cap;
}

static void put(out_t *o, const void *b, size_t n) {
  reserve(o, n);
  if (o->failed) return;
  memcpy(o->p + o->len, b, n);
  o->len += n;
}

#define PUTS(o, s) put(o, s, sizeof(s) - 1)

// Does any of these 8 bytes need a JSON escape: a control character (< 0x20), '"' or '\\'?
// (The exact zero-byte test of "Bit Twiddling Hacks", per byte, on x, x ^ '"' and x ^ '\\'.)
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
static inline int needsEscape8(uint64_t x) {
  uint64_t ctl = (x - ONES * 0x20) & ~x & HIGHS;
  uint64_t q = x ^ (ONES * '"'), b = x ^ (ONES * '\\');
  uint64_t quote = (q - ONES) & ~q & HIGHS, slash = (b - ONES) & ~b & HIGHS;
  return (ctl | quote | slash) != 0;
}

// A JSON string of UTF-8 bytes as JSON.stringify writes it: \" \\ \b \f \n \r \t, \u00xx for the
// other control characters, every other byte as it is.
static void putJsonString(out_t *o, const uint8_t *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  reserve(o, n * 6 + 2);
  if (o->failed) return;
  uint8_t *w = o->p + o->len;
  *w++ = '"';
  // Most names need no escape: find the first byte that does, 8 at a time, and copy up to it.
  size_t plain = 0;
  for (; plain + 8 <= n; plain += 8) {
    uint64_t x;
    memcpy(&x, s + plain, 8);
    if (needsEscape8(x)) break;
  }
  while (plain < n && s[plain] >= 0x20 && s[plain] != '"' && s[plain] != '\\') plain++;
  memcpy(w, s, plain);
  w += plain;
  for (size_t i = plain; i < n; i++) {
    uint8_t c = s[i];
    if (c == '"' || c == '\\') {
      *w++ = '\\';
      *w++ = c;
    } else if (c >= 0x20) *w++ = c;
    else {
      *w++ = '\\';
      switch (c) {
        case '\b': *w++ = 'b'; break;
        case '\f': *w++ = 'f'; break;
        case '\n': *w++ = 'n'; break;
        case '\r': *w++ = 'r'; break;
        case '\t': *w++ = 't'; break;
        default:
          *w++ = 'u';
          *w++ = '0';
          *w++ = '0';
          *w++ = hex[c >> 4];
          *w++ = hex[c & 15];
      }
    }
  }
  *w++ = '"';
  o->len = (size_t)(w - o->p);
}

static uint32_t start(const uint32_t *end, uint32_t i) { return i == 0 ? 0 : end[i - 1]; }

// Row i's path into `path` (its directory's path, '/', its name), given every earlier directory's.
static size_t rowPath(const snapshot_cols_t *c, uint32_t i, const size_t *dirAt, const uint8_t *paths, uint8_t *path) {
  int32_t p = c->parent[i];
  size_t n = 0;
  if (p >= 0) {
    size_t len = dirAt[p + 1] - dirAt[p];
    memcpy(path, paths + dirAt[p], len);
    n = len;
    path[n++] = '/';
  }
  uint32_t a = start(c->nameEnd, i), b = c->nameEnd[i];
  memcpy(path + n, c->nameBytes + a, b - a);
  return n + (b - a);
}

// Each byte's two lowercase hex digits.
static char HEX_PAIRS[256][2];
static void initHexPairs(void) {
  static const char hex[] = "0123456789abcdef";
  for (int b = 0; b < 256; b++) {
    HEX_PAIRS[b][0] = hex[b >> 4];
    HEX_PAIRS[b][1] = hex[b & 15];
  }
}

static void putEntry(out_t *o, const snapshot_cols_t *c, uint32_t i, const uint8_t *path, size_t pathLen) {
  if (c->kind[i] == KIND_DIR) {
    PUTS(o, "{\"kind\":\"dir\",\"path\":");
    putJsonString(o, path, pathLen);
  } else if (c->kind[i] == KIND_FILE) {
    char digest[64];
    for (int k = 0; k < 32; k++) memcpy(digest + 2 * k, HEX_PAIRS[c->digest[i * 32 + k]], 2);
    PUTS(o, "{\"digest\":\"sha256:");
    put(o, digest, 64);
    if (c->flags[i] & F_EXEC) PUTS(o, "\",\"exec\":true,\"kind\":\"file\",\"path\":");
    else PUTS(o, "\",\"exec\":false,\"kind\":\"file\",\"path\":");
    putJsonString(o, path, pathLen);
    // ,"size":N in decimal (snprintf costs more than the rest of the entry).
    char size[32];
    char *e = size + sizeof size, *d = e;
    uint64_t v = (uint64_t)c->size[i];
    do {
      *--d = (char)('0' + v % 10);
      v /= 10;
    } while (v);
    PUTS(o, ",\"size\":");
    put(o, d, (size_t)(e - d));
  } else {
    PUTS(o, "{\"kind\":\"symlink\",\"path\":");
    putJsonString(o, path, pathLen);
    PUTS(o, ",\"target\":");
    putJsonString(o, c->valueBytes + start(c->valueEnd, i), c->valueEnd[i] - start(c->valueEnd, i));
  }
  PUTS(o, "}");
}

static int writeEntries(const snapshot_cols_t *c, const uint8_t *head, size_t headLen, const uint8_t *tail, size_t tailLen, uint32_t *ends, out_t *out) {
  // Each directory's path, kept for the rows below it: dirAt[i] .. dirAt[i + 1] (empty for other rows).
  size_t *dirAt = calloc(c->n + 1, sizeof(size_t));
  size_t *len = calloc(c->n + 1, sizeof(size_t));
  if (HEX_PAIRS[0][0] != '0') initHexPairs();
  size_t longest = 0;
  // An upper bound of the output (every path and target byte escaped as \u00XX, 160 bytes of
  // keys, digest and size per row), reserved once: no growth copies, and the pages never written
  // cost nothing.
  size_t bound = headLen + tailLen + 1;
  for (uint32_t i = 0; dirAt && len && i < c->n; i++) {
    int32_t p = c->parent[i];
    len[i] = (p < 0 ? 0 : len[p] + 1) + (c->nameEnd[i] - start(c->nameEnd, i));
    if (len[i] > longest) longest = len[i];
    dirAt[i + 1] = dirAt[i] + (c->kind[i] == KIND_DIR ? len[i] : 0);
    bound += 160 + 6 * (len[i] + 2) + (c->kind[i] == KIND_LINK ? 6 * (c->valueEnd[i] - start(c->valueEnd, i) + 2) : 0);
  }
  uint8_t *paths = dirAt ? malloc(dirAt[c->n] + 1) : NULL;
  uint8_t *path = malloc(longest + 1);
  out_t o = *out;
  if (!dirAt || !len || !paths || !path) o.failed = 1;
  else reserve(&o, bound);
  put(&o, head, headLen);
  if (ends) ends[0] = (uint32_t)o.len;
  for (uint32_t i = 0; !o.failed && i < c->n; i++) {
    size_t n = rowPath(c, i, dirAt, paths, path);
    if (c->kind[i] == KIND_DIR) memcpy(paths + dirAt[i], path, n);
    if (i > 0) PUTS(&o, ",");
    putEntry(&o, c, i, path, n);
    if (ends) ends[i + 1] = (uint32_t)o.len;
  }
  put(&o, tail, tailLen);
  // Row ends past 4 GiB do not fit: none are given (ends[0] says so).
  if (ends && o.len > UINT32_MAX) ends[0] = UINT32_MAX;
  free(dirAt);
  free(len);
  free(paths);
  free(path);
  *out = o;
  return !o.failed;
}

int snapshotEntries(const snapshot_cols_t *c, const uint8_t *head, size_t headLen, const uint8_t *tail, size_t tailLen, uint32_t *ends,
                    uint8_t **bytes, size_t *length, size_t *capacity) {
  out_t o = {0};
  if (!writeEntries(c, head, headLen, tail, tailLen, ends, &o)) {
    snapshotFree(o.p, o.cap);
    return 0;
  }
  *bytes = o.p;
  *length = o.len;
  *capacity = o.cap;
  return 1;
}

// ---- a Snapshot written from the one before it: rows copied as runs of its bytes.

// Row i's path into `path` through its parents (len: every row's path length, as writeEntries
// counts them): the splice writes only the rows it does not copy, so it keeps no directory paths.
static size_t rowPathUp(const snapshot_cols_t *c, uint32_t i, const size_t *len, uint8_t *path) {
  size_t at = len[i];
  for (int32_t r = (int32_t)i; r >= 0; r = c->parent[r]) {
    uint32_t a = start(c->nameEnd, (uint32_t)r), b = c->nameEnd[r];
    at -= b - a;
    memcpy(path + at, c->nameBytes + a, b - a);
    if (c->parent[r] >= 0) path[--at] = '/';
  }
  return len[i];
}

// Do prevEnds describe `prevN` entries of `prev` as writeEntries wrote them: each row between a
// '{' and a '}', a ',' between two rows, all within the bytes?
static int endsHold(const uint8_t *prev, size_t prevLen, const uint32_t *prevEnds, uint32_t prevN) {
  if (prevEnds[0] == UINT32_MAX || prevEnds[prevN] > prevLen) return 0;
  for (uint32_t j = 0; j < prevN; j++) {
    size_t s = j == 0 ? prevEnds[0] : (size_t)prevEnds[j] + 1;
    if (prevEnds[j + 1] < s + 2 || prev[s] != '{' || prev[prevEnds[j + 1] - 1] != '}' || (j > 0 && prev[prevEnds[j]] != ',')) return 0;
  }
  return 1;
}

// Does the entry e .. e + n - 1 of the Snapshot before say what row i says of its kind and, for a
// file, its digest, exec bit and size? A row is copied only then: bytes before that disagree with
// the columns (another index than the Snapshot's) give the splice up, never another Snapshot.
static int sameEntry(const snapshot_cols_t *c, uint32_t i, const uint8_t *e, size_t n) {
  static const char FILE_AT[] = "{\"digest\":\"sha256:", DIR_AT[] = "{\"kind\":\"dir\"", LINK_AT[] = "{\"kind\":\"symlink\"";
  static const char EXEC[] = "\",\"exec\":true", PLAIN[] = "\",\"exec\":false";
  if (c->kind[i] == KIND_DIR) return n >= sizeof DIR_AT - 1 && memcmp(e, DIR_AT, sizeof DIR_AT - 1) == 0;
  if (c->kind[i] == KIND_LINK) return n >= sizeof LINK_AT - 1 && memcmp(e, LINK_AT, sizeof LINK_AT - 1) == 0;
  const char *flag = (c->flags[i] & F_EXEC) ? EXEC : PLAIN;
  size_t flagLen = (c->flags[i] & F_EXEC) ? sizeof EXEC - 1 : sizeof PLAIN - 1, head = sizeof FILE_AT - 1;
  if (c->kind[i] != KIND_FILE || n < head + 64 + flagLen + 2 || memcmp(e, FILE_AT, head) != 0 || memcmp(e + head + 64, flag, flagLen) != 0) return 0;
  char hex[64];
  for (int k = 0; k < 32; k++) memcpy(hex + 2 * k, HEX_PAIRS[c->digest[i * 32 + k]], 2);
  if (memcmp(e + head, hex, 64) != 0) return 0;
  // ,"size":N} at the end, N in decimal.
  uint64_t v = (uint64_t)c->size[i];
  size_t at = n - 1;
  do {
    if (at == 0 || e[--at] != (uint8_t)('0' + v % 10)) return 0;
    v /= 10;
  } while (v);
  return at >= 8 && memcmp(e + at - 8, ",\"size\":", 8) == 0;
}

int snapshotSplice(const snapshot_cols_t *c, const uint8_t *head, size_t headLen, const uint8_t *tail, size_t tailLen, const splice_prev_t *prev,
                   uint32_t *ends, uint8_t **bytes, size_t *length, size_t *capacity) {
  for (uint32_t i = 0; i < c->n; i++)
    if (prev->from[i] < -1 || prev->from[i] >= (int64_t)prev->n) return -1;
  if (!endsHold(prev->bytes, prev->len, prev->ends, prev->n)) return -1;
  if (HEX_PAIRS[0][0] != '0') initHexPairs();
  size_t *len = calloc(c->n + 1, sizeof(size_t));
  if (!len) return 0;
  size_t bound = headLen + tailLen + 1, longest = 0;
  for (uint32_t i = 0; i < c->n; i++) {
    int32_t p = c->parent[i], j = prev->from[i];
    len[i] = (p < 0 ? 0 : len[p] + 1) + (c->nameEnd[i] - start(c->nameEnd, i));
    if (len[i] > longest) longest = len[i];
    if (j >= 0) bound += prev->ends[j + 1] - prev->ends[j] + 1;
    else bound += 160 + 6 * (len[i] + 2) + (c->kind[i] == KIND_LINK ? 6 * (c->valueEnd[i] - start(c->valueEnd, i) + 2) : 0);
  }
  uint8_t *path = malloc(longest + 1);
  out_t o = {0};
  if (!path) o.failed = 1;
  else reserve(&o, bound);
  put(&o, head, headLen);
  ends[0] = (uint32_t)o.len;
  for (uint32_t i = 0; !o.failed && i < c->n;) {
    if (i > 0) PUTS(&o, ",");
    int32_t j = prev->from[i];
    if (j < 0) {
      putEntry(&o, c, i, path, rowPathUp(c, i, len, path));
      ends[++i] = (uint32_t)o.len;
      continue;
    }
    // A run of rows the one before has in the same order: their bytes (commas between) at once.
    uint32_t k = 1;
    while (i + k < c->n && prev->from[i + k] == j + (int32_t)k) k++;
    size_t s = j == 0 ? prev->ends[0] : (size_t)prev->ends[j] + 1, at = o.len;
    for (uint32_t m = 0; m < k; m++) {
      size_t e = j + m == 0 ? prev->ends[0] : (size_t)prev->ends[j + m] + 1;
      if (!sameEntry(c, i + m, prev->bytes + e, prev->ends[j + m + 1] - e)) {
        free(len);
        free(path);
        snapshotFree(o.p, o.cap);
        return -1;
      }
    }
    put(&o, prev->bytes + s, prev->ends[j + k] - s);
    for (uint32_t m = 1; m <= k; m++) ends[i + m] = (uint32_t)(at + prev->ends[j + m] - s);
    i += k;
  }
  put(&o, tail, tailLen);
  if (o.len > UINT32_MAX) ends[0] = UINT32_MAX;
  free(len);
  free(path);
  if (o.failed) {
    snapshotFree(o.p, o.cap);
    return 0;
  }
  *bytes = o.p;
  *length = o.len;
  *capacity = o.cap;
  return 1;
}
