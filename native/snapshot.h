// The canonical bytes of a Snapshot from tree index columns (snapshot.c).
#ifndef PDB_SNAPSHOT_H
#define PDB_SNAPSHOT_H
#include <stddef.h>
#include <stdint.h>

/** The columns snapshot.c reads (model/scan/index-columns.ts), already checked by the caller. */
typedef struct {
  uint32_t n;
  const uint8_t *kind, *flags, *nameBytes, *digest, *valueBytes;
  const int32_t *parent;
  const uint32_t *nameEnd, *valueEnd;
  const double *size;
} snapshot_cols_t;

/**
 * head + every row's entry, comma-separated + tail, in a malloc'ed buffer; 0 when out of memory.
 * `ends` (n + 1, or NULL): where row 0 begins, then where each row's entry ends (UINT32_MAX first
 * when the bytes pass 4 GiB: none given).
 */
int snapshotEntries(const snapshot_cols_t *c, const uint8_t *head, size_t headLen, const uint8_t *tail, size_t tailLen, uint32_t *ends,
                    uint8_t **bytes, size_t *length, size_t *capacity);

/** The Snapshot written before, and which of its rows each row copies (-1: written afresh). */
typedef struct {
  const uint8_t *bytes;
  size_t len;
  const uint32_t *ends; /* n + 1, as snapshotEntries gives them */
  uint32_t n;
  const int32_t *from; /* one per row of the columns */
} splice_prev_t;

/**
 * The same bytes and ends as snapshotEntries, taking each row that `prev->from` names from the
 * bytes before (its entry is the same: the same path, kind and content) and writing the others:
 * work in the rows written, and a copy. 1 done, 0 out of memory, -1 when prev does not hold
 * together (ends out of order or past its bytes, a row not between braces): write it whole then.
 */
int snapshotSplice(const snapshot_cols_t *c, const uint8_t *head, size_t headLen, const uint8_t *tail, size_t tailLen, const splice_prev_t *prev,
                   uint32_t *ends, uint8_t **bytes, size_t *length, size_t *capacity);

/** Free a block snapshotEntries or snapshotSplice gave (`capacity` its size), or keep it for the next where spares are kept. */
void snapshotFree(void *p, size_t capacity);
/** Keep freed blocks for the next Snapshot (the daemon), or stop and free those kept. */
void snapshotKeepSpares(int on);

// SHA-256 from the OpenSSL that Node carries (its executable exports the symbols, or the libcrypto
// it links does). Weak: where neither has them, the addon still loads, sha256Available() is 0, and
// JavaScript writes and hashes the bytes. The context is OpenSSL's SHA256_CTX (112 bytes), given
// room to spare.
extern int SHA256_Init(void *c) __attribute__((weak));
extern int SHA256_Update(void *c, const void *data, size_t len) __attribute__((weak));
extern int SHA256_Final(unsigned char *md, void *c) __attribute__((weak));

/** 1 when SHA-256 can be had from the OpenSSL in this process (chunkDocument needs it). */
int sha256Available(void);
/** The SHA-256 of the `n` byte ranges one after the other into `out`; 0 where it cannot be had. */
int sha256Parts(const uint8_t *const *parts, const size_t *lens, size_t n, uint8_t out[32]);

/** The FastCDC parameters of model/store/chunks.ts: its gear table, sizes and masks. */
typedef struct {
  const int32_t *gear;
  uint32_t min, avg, max, hard, easy;
} cdc_t;

/** The document a cut is like (the one cut before it, with what that cut gave): its bytes, chunk list and hash states. */
typedef struct {
  const uint8_t *bytes, *list, *mids;
  size_t n, listLen, midsLen;
} cut_like_t;

/** What chunkDocument gives: the digest, the chunk list and hash states (malloc'ed), how many chunks it hashed. */
typedef struct {
  uint8_t digest[32];
  uint8_t *list, *mids;
  size_t listLen, midsLen, fresh;
} cut_t;

/** Bytes of input between two kept hash states, and the room each state takes (OpenSSL's SHA256_CTX, with room to spare). */
#define MID_STEP 65536
#define MID_SIZE 256

/**
 * The sha256 of `n` bytes at `b` and their content-defined chunks (chunks.c): a list of 36-byte
 * records (a chunk's sha256, then its length as a big-endian uint32: the chunk list format of
 * chunks.ts) and the hash's state after every MID_STEP bytes. Given `like`, the chunks and hash
 * states of its bytes are taken where the same bytes are found, compared byte for byte. 0 where
 * SHA-256 cannot be had or memory ran out.
 */
int chunkDocument(const uint8_t *b, size_t n, const cdc_t *cdc, const cut_like_t *like, cut_t *out);

#endif
