// Content-defined chunks of a document and its digest (FastCDC, normalized): the same cut as
// model/store/chunks.ts cutPoint, in the same 32-bit wrapping arithmetic, so either side cuts a
// document the same way. Given the document cut before it (`like`: a checkpoint's previous
// Snapshot, held by the daemon), only what differs is cut and hashed again; everything taken from
// `like` is taken because the same bytes are there, compared byte for byte, never because a list
// of changes says so.
#include "snapshot.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static size_t cdcCut(const cdc_t *p, const uint8_t *b, size_t start, size_t end) {
  if (end - start <= p->min) return end;
  size_t stop = start + p->max < end ? start + p->max : end;
  size_t normal = start + p->avg < stop ? start + p->avg : stop;
  uint32_t h = 0;
  size_t i = start + p->min;
  for (; i < normal; i++) {
    h = (h << 1) + (uint32_t)p->gear[b[i]];
    if ((h & p->hard) == 0) return i + 1;
  }
  for (; i < stop; i++) {
    h = (h << 1) + (uint32_t)p->gear[b[i]];
    if ((h & p->easy) == 0) return i + 1;
  }
  return stop;
}

// ---- the whole document's digest, with the hash's state kept after every MID_STEP bytes.

typedef struct {
  const uint8_t *p;
  size_t n;
  const cut_like_t *like;
  uint8_t digest[32];
  uint8_t *mids;
  size_t midsLen;
  int ok;
  _Alignas(16) unsigned char ctx[MID_SIZE];
} whole_t;

// How many leading MID_STEP blocks of the document are those of `like`, whose states it kept.
static size_t samePrefix(const whole_t *w, size_t steps) {
  const cut_like_t *l = w->like;
  if (!l || !l->mids || l->midsLen % MID_SIZE != 0 || l->midsLen / MID_SIZE > l->n / MID_STEP) return 0;
  size_t lim = l->midsLen / MID_SIZE < steps ? l->midsLen / MID_SIZE : steps, k = 0;
  while (k < lim && memcmp(w->p + k * MID_STEP, l->bytes + k * MID_STEP, MID_STEP) == 0) k++;
  return k;
}

static void *hashWhole(void *arg) {
  whole_t *w = arg;
  size_t steps = w->n / MID_STEP;
  w->mids = steps ? malloc(steps * MID_SIZE) : NULL;
  w->midsLen = steps * MID_SIZE;
  if (steps && !w->mids) return NULL;
  size_t k = samePrefix(w, steps);
  // The state after k blocks the two documents share is the state `like` kept after them.
  if (k) {
    memcpy(w->mids, w->like->mids, k * MID_SIZE);
    memcpy(w->ctx, w->like->mids + (k - 1) * MID_SIZE, MID_SIZE);
  } else if (SHA256_Init(w->ctx) != 1) return NULL;
  for (; k < steps; k++) {
    if (SHA256_Update(w->ctx, w->p + k * MID_STEP, MID_STEP) != 1) return NULL;
    memcpy(w->mids + k * MID_SIZE, w->ctx, MID_SIZE);
  }
  size_t rest = w->n - steps * MID_STEP;
  w->ok = (rest == 0 || SHA256_Update(w->ctx, w->p + steps * MID_STEP, rest) == 1) && SHA256_Final(w->digest, w->ctx) == 1;
  return NULL;
}

// ---- the chunks, taking `like`'s where its bytes are found again.

typedef struct {
  const cut_like_t *like;
  size_t count;   // chunks in like's list
  size_t *starts; // where each begins in like's bytes
} old_t;

static size_t oldSize(const old_t *o, size_t k) {
  const uint8_t *r = o->like->list + k * 36;
  return ((size_t)r[32] << 24) | ((size_t)r[33] << 16) | ((size_t)r[34] << 8) | (size_t)r[35];
}

// like's chunk starts; 0 chunks (nothing to take) when its list does not cover its bytes exactly.
static int oldChunks(const cut_like_t *like, old_t *o) {
  memset(o, 0, sizeof *o);
  o->like = like;
  if (!like || !like->list || like->listLen % 36 != 0 || like->listLen == 0) return 1;
  size_t count = like->listLen / 36, at = 0;
  o->starts = malloc(count * sizeof *o->starts);
  if (!o->starts) return 0;
  o->count = count;
  for (size_t k = 0; k < count; k++) {
    o->starts[k] = at;
    at += oldSize(o, k);
  }
  if (at != like->n) o->count = 0;
  return 1;
}

// Whether like's chunk k is at x: the same bytes, and a last chunk still ends the document (the
// same bytes from the same start cut the same way: the gear hash starts afresh in each chunk).
static int holds(const old_t *o, size_t k, const uint8_t *b, size_t n, size_t x) {
  size_t size = oldSize(o, k);
  if (x + size > n || (k == o->count - 1 && x + size != n)) return 0;
  return memcmp(b + x, o->like->bytes + o->starts[k], size) == 0;
}

// The chunk of like found at x: the next one after the last found, else one near where it would
// be, shifted as the last found was; -1 when none is.
static long findOld(const old_t *o, const cdc_t *cdc, const uint8_t *b, size_t n, size_t x, size_t next, long long shift) {
  if (next < o->count && holds(o, next, b, n, x)) return (long)next;
  long long want = (long long)x - shift;
  size_t lo = 0, hi = o->count;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if ((long long)o->starts[mid] < want - (long long)cdc->max) lo = mid + 1;
    else hi = mid;
  }
  for (size_t k = lo; k < o->count && (long long)o->starts[k] <= want + (long long)cdc->max; k++)
    if (k != next && holds(o, k, b, n, x)) return (long)k;
  return -1;
}

static int cutChunks(const uint8_t *b, size_t n, const cdc_t *cdc, const old_t *o, cut_t *out) {
  size_t cap = n / (cdc->min ? cdc->min : 1) + 2, k = 0, next = 0;
  long long shift = 0;
  uint8_t *list = malloc(cap * 36);
  if (!list) return 0;
  _Alignas(16) unsigned char ctx[MID_SIZE];
  for (size_t at = 0; at < n; k++) {
    uint8_t *r = list + k * 36;
    long found = o->count ? findOld(o, cdc, b, n, at, next, shift) : -1;
    if (found >= 0) {
      memcpy(r, o->like->list + (size_t)found * 36, 36);
      shift = (long long)at - (long long)o->starts[found];
      next = (size_t)found + 1;
      at += oldSize(o, (size_t)found);
      continue;
    }
    size_t end = cdcCut(cdc, b, at, n);
    if (SHA256_Init(ctx) != 1 || SHA256_Update(ctx, b + at, end - at) != 1 || SHA256_Final(r, ctx) != 1) {
      free(list);
      return 0;
    }
    uint32_t size = (uint32_t)(end - at);
    r[32] = (uint8_t)(size >> 24);
    r[33] = (uint8_t)(size >> 16);
    r[34] = (uint8_t)(size >> 8);
    r[35] = (uint8_t)size;
    out->fresh++;
    at = end;
  }
  out->list = list;
  out->listLen = k * 36;
  return 1;
}

int chunkDocument(const uint8_t *b, size_t n, const cdc_t *cdc, const cut_like_t *like, cut_t *out) {
  memset(out, 0, sizeof *out);
  if (!sha256Available()) return 0;
  // The whole document's digest on a second thread while this one cuts and hashes the chunks: the
  // two passes over the bytes take the time of one.
  whole_t w = {.p = b, .n = n, .like = like};
  pthread_t t;
  int threaded = pthread_create(&t, NULL, hashWhole, &w) == 0;
  old_t o;
  int ok = oldChunks(like, &o) && cutChunks(b, n, cdc, &o, out);
  free(o.starts);
  if (threaded) pthread_join(t, NULL);
  else hashWhole(&w);
  if (!ok || !w.ok) {
    free(out->list);
    free(w.mids);
    memset(out, 0, sizeof *out);
    return 0;
  }
  memcpy(out->digest, w.digest, 32);
  out->mids = w.mids;
  out->midsLen = w.midsLen;
  return 1;
}
