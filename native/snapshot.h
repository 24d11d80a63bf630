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

/** head + every row's entry, comma-separated + tail, in a malloc'ed buffer; 0 when out of memory. */
int snapshotEntries(const snapshot_cols_t *c, const uint8_t *head, size_t headLen, const uint8_t *tail, size_t tailLen, uint8_t **bytes, size_t *length);

/** 1 when SHA-256 can be had from the OpenSSL in this process (chunkDocument needs it). */
int sha256Available(void);
/** The SHA-256 of the `n` byte ranges one after the other into `out`; 0 where it cannot be had. */
int sha256Parts(const uint8_t *const *parts, const size_t *lens, size_t n, uint8_t out[32]);

/** The FastCDC parameters of model/store/chunks.ts: its gear table, sizes and masks. */
typedef struct {
  const int32_t *gear;
  uint32_t min, avg, max, hard, easy;
} cdc_t;

/**
 * The sha256 of `n` bytes at `b` into `digest`, and their content-defined chunks into a malloc'ed
 * list of 36-byte records (a chunk's sha256, then its length as a big-endian uint32: the chunk
 * list format of chunks.ts). 0 where SHA-256 cannot be had or memory ran out.
 */
int chunkDocument(const uint8_t *b, size_t n, const cdc_t *cdc, uint8_t digest[32], uint8_t **list, size_t *listLen);

#endif
