// The tree the oracle judges a case by, read from the session's bytes. A user's checkpoint may keep
// the digest of a file whose stat signature is the one recorded at create, and those signatures come
// from the backend under test itself (a copy's or clone's sigs, the base index of a snapshot or
// overlay), so a backend that writes wrong bytes under a valid signature passes a trusting
// checkpoint. The oracle therefore scans every case's root anew, full-copy's included, hashing every
// file, and it reads what the workload's scope adds to the source: the installed tree and the build
// output that the Snapshot excludes. The projected tree is kept in the run's oracle directory (never
// given to a step) until the block's end and read back from there a piece at a time, so the block's
// comparisons hold no case's tree whole, and a case holds only its own while it runs.
import { closeSync, openSync, readFileSync, readSync, realpathSync, writeSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import { join } from 'node:path';
import { scanTree } from '../../model/scan/scan.js';
import { canonicalEntryJson, comparePaths, snapshotHead, snapshotTail, sortEntries, type Entry } from '../../model/snapshot.js';
import type { Digest } from '../../model/canonical-json.js';
import type { OracleScope, Workload } from '../../workloads/types.js';
import type { OracleScopeName, ProjectionRecord } from '../receipt/receipt-types.js';
import { sha256Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';
import { projectResult, volatileMatcher } from './projection.js';

/** The oracle's scope when a workload declares none: the Snapshot's source files. */
export const SOURCE_SCOPE: OracleScope = { scope: ['source'], include: [] };

/** A projected tree as the oracle compares it, with how it was read. */
export interface OracleTree {
  entries: Entry[];
  /** Regular files in the projected tree. */
  files: number;
  /** How many of them were hashed from their bytes for this tree (all of them, unless the oracle was told to trust the checkpoint). */
  filesHashed: number;
  scope: OracleScopeName[];
  projection: ProjectionRecord;
}

export function oracleScopeOf(workload: Workload, params: Record<string, unknown>): OracleScope {
  return workload.oracleScope?.(params) ?? SOURCE_SCOPE;
}

/** The placeholder a session's absolute path becomes in the files a workload names (OracleScope.rootPathFiles). */
export const ROOT_PLACEHOLDER = '<session-root>';

/** Entries of the matching files re-hashed with every occurrence of the root's path (as given and real) replaced. */
function withRootPathReplaced(root: string, entries: Entry[], patterns: string[]): Entry[] {
  const match = volatileMatcher(patterns);
  const roots = [...new Set([realpathSync(root), root])].sort((a, b) => b.length - a.length);
  return entries.map((e) => {
    if (e.kind !== 'file' || match(e.path) < 0) return e;
    let text = readFileSync(join(root, e.path)).toString('latin1');
    for (const r of roots) text = text.split(Buffer.from(r).toString('latin1')).join(ROOT_PLACEHOLDER);
    const bytes = Buffer.from(text, 'latin1');
    return { ...e, digest: sha256Digest(bytes), size: bytes.length };
  });
}

const countFiles = (entries: readonly Entry[]): number => entries.reduce((n, e) => n + (e.kind === 'file' ? 1 : 0), 0);

/**
 * Scan `root` as the oracle does: the base's excludes less what the scope includes, every file
 * hashed (no tree index is consulted), then the workload's projection.
 */
export async function scanOracleTree(
  root: string,
  workload: Workload,
  params: Record<string, unknown>,
  baseExcludes: readonly string[],
  storeDir: string,
): Promise<OracleTree> {
  const { scope, include, rootPathFiles } = oracleScopeOf(workload, params);
  const excludes = baseExcludes.filter((x) => !include.includes(x));
  const scan = await scanTree(root, { excludes, excludeAbsolute: [storeDir] });
  // Counted, not derived: a projected file counts as hashed when the scan's reader digested its
  // bytes. When it digested every file no set of their paths is needed, and the walk goes before
  // the entries are made (each an object per row: two trees' worth at once otherwise).
  const all = scan.filesHashed === scan.files;
  const wasHashed = all ? () => true : scan.wasHashed;
  if (all) scan.release();
  const entries = rootPathFiles?.length ? withRootPathReplaced(root, scan.entries, rootPathFiles) : scan.entries;
  const projected = projectResult(workload, params, entries);
  const files = countFiles(projected.entries);
  let filesHashed = 0;
  for (const e of projected.entries) if (e.kind === 'file' && wasHashed(e.path)) filesHashed++;
  return { entries: projected.entries, files, filesHashed, scope: [...scope], projection: projected.record };
}

/**
 * The tree a trusting checkpoint recorded, as the oracle would see it: only for the test that shows
 * the oracle needs its own hashing (a control with wrong bytes under a valid signature passes it).
 */
export function trustedOracleTree(
  result: Entry[],
  workload: Workload,
  params: Record<string, unknown>,
  checkpointHashed: number,
): OracleTree {
  const projected = projectResult(workload, params, result);
  const files = countFiles(projected.entries);
  return {
    entries: projected.entries,
    files,
    filesHashed: Math.min(files, checkpointHashed),
    scope: ['source'],
    projection: projected.record,
  };
}

/** A kept tree as the block's end reads it: its counts at hand, its entries streamed from the file. */
export interface KeptOracleTree extends Omit<OracleTree, 'entries'> {
  /** The entries in contract order, read from the kept file in pieces; throws E_SOURCE_CHANGED once the file read is not the one written. */
  entries(): Iterable<Entry>;
}

/** A tree kept until its block ends: how to read it back, and the digest of the projected Snapshot it is. */
export interface KeptTreeHandle {
  read(): KeptOracleTree;
  /** The digest of the projected result as a Snapshot on the base (case-checks.ts projectedDigest), made while it was written. */
  projectedSnapshot: Digest;
}

/**
 * Entries written, and bytes read, at once: each piece's text stays well under V8's large-object
 * size (128 KiB), so it dies young; a megabyte string a piece went to the large-object space, which
 * only a full collection frees (250 MB of it for one comparison of two 268,753-entry trees).
 */
const PIECE_ENTRIES = 256;
const READ_BYTES = 48 * 1024;

const changedError = (caseId: string, cause?: unknown) =>
  new PdbError('E_SOURCE_CHANGED', `the oracle's kept tree of case ${caseId} changed before its block ended`, {
    hint: "Something wrote into the run's oracle directory while the block ran; run the bench again.",
    cause,
  });

/**
 * Keep the tree until its block ends, in `dir` (the run's oracle directory, which no step is given):
 * one entry's canonical JSON a line, in contract order, written in pieces. What is read back must be
 * what was written: its sha256 is held in memory and the reader checks it after the last line, so a
 * file changed in between (by anything) fails the comparison reading it before it gives a verdict. The projected
 * Snapshot's digest is hashed from the same lines, so no canonical copy of the whole tree is made.
 */
export function keepOracleTree(
  dir: string,
  caseId: string,
  tree: OracleTree,
  base: { digest: Digest; excludes: readonly string[] },
): KeptTreeHandle {
  const file = join(dir, `${caseId}.jsonl`);
  const entries = contractOrder(tree.entries);
  const fileHash = createHash('sha256');
  const snapshot = createHash('sha256').update(snapshotHead(base.digest));
  const fd = openSync(file, 'wx', 0o600);
  try {
    for (let i = 0; i < entries.length; i += PIECE_ENTRIES) {
      const lines = entries.slice(i, i + PIECE_ENTRIES).map(canonicalEntryJson);
      const text = `${lines.join('\n')}\n`;
      writeSync(fd, text);
      fileHash.update(text);
      snapshot.update(i === 0 ? lines.join(',') : `,${lines.join(',')}`);
    }
  } finally {
    closeSync(fd);
  }
  const digest = fileHash.digest('hex');
  const { entries: _held, ...counts } = tree;
  return {
    projectedSnapshot: `sha256:${snapshot.update(snapshotTail([...base.excludes].sort())).digest('hex')}`,
    read: () => ({ ...counts, scope: [...counts.scope], entries: () => readKept(file, digest, caseId) }),
  };
}

/** The entries in contract order: the scan's order, checked in one pass; sorted only when a projection reordered them. */
function contractOrder(entries: Entry[]): Entry[] {
  for (let i = 1; i < entries.length; i++) if (comparePaths(entries[i - 1]!.path, entries[i]!.path) >= 0) return sortEntries([...entries]);
  return entries;
}

/** The kept file's entries, a piece at a time, its bytes hashed as they are read and checked at the end. */
function* readKept(file: string, digest: string, caseId: string): Generator<Entry> {
  const fd = openSync(file, 'r');
  try {
    const hash = createHash('sha256');
    const decoder = new StringDecoder('utf8');
    const buf = Buffer.allocUnsafe(READ_BYTES);
    let rest = '';
    for (let n = readSync(fd, buf); n > 0; n = readSync(fd, buf)) {
      hash.update(buf.subarray(0, n));
      const lines = (rest + decoder.write(buf.subarray(0, n))).split('\n');
      rest = lines.pop()!;
      for (const line of lines) yield parseLine(line, caseId);
    }
    if (rest + decoder.end() !== '' || hash.digest('hex') !== digest) throw changedError(caseId);
  } finally {
    closeSync(fd);
  }
}

function parseLine(line: string, caseId: string): Entry {
  try {
    return JSON.parse(line) as Entry;
  } catch (err) {
    throw changedError(caseId, err);
  }
}
