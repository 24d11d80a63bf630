// pdb-env's native scanner: what walk.c (the walk) and addon.c (its N-API face) share.
#ifndef PDB_SCAN_H
#define PDB_SCAN_H
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef __APPLE__
#define MTIM st_mtimespec
#define CTIM st_ctimespec
#else
#define MTIM st_mtim
#define CTIM st_ctim
#endif

#define VERSION "10"
#define KIND_DIR 1
#define KIND_FILE 2
#define KIND_LINK 3
#define F_TRUSTED 2

enum { OK = 0, E_ERRNO, E_ROOT_MISSING, E_ROOT_NOT_DIR, E_UNSUPPORTED, E_NON_UTF8_NAME, E_NON_UTF8_TARGET, E_VANISHED, E_NOMEM };

typedef struct {
  double ino, size, mtime, ctime;
  uint32_t mode, nlink;
  int err;
} stat_t;

typedef struct {
  uint8_t *p;
  size_t len, cap;
} buf_t;

typedef struct {
  // The index (borrowed from JavaScript typed arrays); hasIndex == 0 without one.
  int hasIndex;
  uint32_t n;
  const uint8_t *kind, *flags, *nameBytes;
  const int32_t *parent;
  const uint32_t *nameEnd, *mode;
  const double *ino, *size, *mtime, *ctime;
  uint8_t *status;
  // Rows whose stat data the caller vouches for (the daemon's watch, model/scan/watch.ts): phase A
  // takes them from the index instead of lstat'ing them. NULL: none.
  const uint8_t *vouch;
  int32_t *firstChild, *nextSibling;
  stat_t *pre;
  // Each directory row's relative path, for phase A (a row's path is its directory's, '/', its name).
  char *dirPaths;
  size_t *dirOff;
  // What is left out.
  char **exNames, **exPaths;
  uint32_t nExNames, nExPaths;
  int dirRule;
  // The root directory, open: every path below is looked up from it (a shorter walk per lstat).
  int rootFd;
  // The absolute path being visited: root, then "/rel".
  char *path;
  size_t pathLen, pathCap, rootLen;
  buf_t out;
  // The relative path of every entry seen that is no directory and has other links, each ending in a NUL.
  buf_t linked;
  double entries, files, bytes, dirsRead;
  int err, errNo;
  uint32_t errMode;
  char *errPath;
} scan_t;

int scanPrepareIndex(scan_t *s, size_t nameBytes);
// Walk `root` (into s->out and s->status, or s->err); `keep`: the root's recorded (ino, mtime, ctime), when trusted.
void scanRoot(scan_t *s, const char *root, const double *keep, double *rootStat, int threads);
void scanFree(scan_t *s);

#endif
