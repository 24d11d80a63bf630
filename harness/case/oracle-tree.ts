// The tree the oracle judges a case by, read from the session's bytes. A user's checkpoint may keep
// the digest of a file whose stat signature is the one recorded at create, and those signatures come
// from the backend under test itself (a copy's or clone's sigs, the base index of a snapshot or
// overlay), so a backend that writes wrong bytes under a valid signature passes a trusting
// checkpoint. The oracle therefore scans every case's root anew, full-copy's included, hashing every
// file, and it reads what the workload's scope adds to the source: the installed tree and the build
// output that the Snapshot excludes. The projected tree is kept in the run's oracle directory (never
// given to a step) until the block's end, so a block holds at most two of them in memory at once.
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scanTree } from '../../model/scan/scan.js';
import type { Entry } from '../../model/snapshot.js';
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
  const entries = rootPathFiles?.length ? withRootPathReplaced(root, scan.entries, rootPathFiles) : scan.entries;
  const projected = projectResult(workload, params, entries);
  const files = countFiles(projected.entries);
  // Counted, not derived: a projected file counts as hashed when the scan's reader digested its bytes.
  let filesHashed = 0;
  for (const e of projected.entries) if (e.kind === 'file' && scan.wasHashed(e.path)) filesHashed++;
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

/**
 * Keep the tree until its block ends, in `dir` (the run's oracle directory, which no step is given);
 * returns how to read it back. What is read back must be what was written: its sha256 is held in
 * memory, so a file changed in between (by anything) fails the read instead of judging the case.
 */
export function keepOracleTree(dir: string, caseId: string, tree: OracleTree): () => OracleTree {
  const file = join(dir, `${caseId}.json`);
  const bytes = Buffer.from(JSON.stringify(tree));
  const digest = sha256Digest(bytes);
  writeFileSync(file, bytes, { mode: 0o600, flag: 'wx' });
  return () => {
    const back = readFileSync(file);
    if (sha256Digest(back) !== digest)
      throw new PdbError('E_SOURCE_CHANGED', `the oracle's kept tree of case ${caseId} changed before its block ended`, {
        hint: "Something wrote into the run's oracle directory while the block ran; run the bench again.",
      });
    return JSON.parse(back.toString('utf8')) as OracleTree;
  };
}
