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

#endif
