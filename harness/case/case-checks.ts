// The checks every case must pass: its result equals the block's full-copy case (the oracle, compared
// at the block's end: block-oracle.ts), and the workload's precomputed expectation where it has one
// (`expected`, applied to the full-copy case too, so the oracle itself is checked); the workload's own
// checks; the base and the block's sibling session of the same backend unchanged; cleanup complete.
// A check that cannot be judged is recorded as not evaluated, with the reason, never as passed.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Digest } from '../../model/canonical-json.js';
import type { IndexColumns } from '../../model/scan/index-columns.js';
import { scanTree, walkEntries } from '../../model/scan/scan.js';
import { createSnapshot, snapshotDigest, totalMismatches, type Entry, type MismatchCounts, type Snapshot } from '../../model/snapshot.js';
import type { SessionService } from '../../sessions/service.js';
import type { StepContext, Workload } from '../../workloads/types.js';
import { scrubText } from '../../model/scrub.js';
import { oracleScopeOf, type KeptOracleTree } from './oracle-tree.js';
import type { CheckRecord, CheckReference, FailureRecord, ProjectionRecord } from '../receipt/receipt-types.js';
import { columnEntries, compareTrees } from './tree-compare.js';

/** How many differing paths a check lists. */
export const MAX_CHECK_PATHS = 10;

/**
 * The base every case of a workload starts from: the run's one import of its fixture, held for the
 * whole run as its tree index's columns (about 140 bytes a row at 268,753 rows, where its entries
 * as objects took about 500) and read as entries one at a time (baseEntries).
 */
export interface BaseInfo {
  digest: Digest;
  columns: IndexColumns;
  excludes: string[];
}

/** The base's entries, made one at a time as a comparison reads them. */
export const baseEntries = (base: BaseInfo): Iterable<Entry> => columnEntries(base.columns);

/** The base's entries as one array, for an API that takes one (a workload's expectation, a step's context): made anew, never kept. */
export const baseEntryList = (base: BaseInfo): Entry[] => [...columnEntries(base.columns)];

/** What the checks read: the store, and each base location's state after the previous case. */
export interface CheckEnv {
  svc: SessionService;
  storeDir: string;
  /** State of each base location after the previous case (source and materialized bases), by base digest and directory; null: the base's. */
  baseState?: Map<string, Entry[] | null>;
  /** Collect the garbage of a finished scan before the next one (each hashes a whole tree); none: V8's own schedule. */
  settle?: () => void;
}

/** The block's sibling session of the case's backend: made at the block's start, scanned then, checked after each case. */
export type SiblingInfo =
  /** `entries` null: the sibling was the base itself when it was made. */
  { name: string; backend: string; entries: Entry[] | null } | { backend: string; failure: FailureRecord };

/** A check without a tree comparison. */
export function plainCheck(name: string, passed: boolean, detail: string | null): CheckRecord {
  return { name, passed, evaluated: true, mismatches: null, counts: null, paths: [], reference: null, detail };
}

/** A check that could not be judged: not passed, and not a failure either. */
export function notEvaluated(name: string, detail: string, reference: CheckReference | null = null): CheckRecord {
  return { name, passed: false, evaluated: false, mismatches: null, counts: null, paths: [], reference, detail: scrubText(detail) };
}

/** Compare two trees entry by entry: how many entries differ, by kind, and the first few relative paths. */
export function treeCheck(
  name: string,
  expected: Iterable<Entry>,
  actual: Iterable<Entry>,
  what: string,
  reference: CheckReference | null = null,
): CheckRecord {
  const d = compareTrees(expected, actual, MAX_CHECK_PATHS);
  const n = d.mismatches;
  return {
    name,
    passed: n === 0,
    evaluated: true,
    mismatches: n,
    counts: n === 0 ? null : d.counts,
    paths: d.paths.map((p) => scrubText(p)),
    reference,
    detail: n === 0 ? null : `${what} differs in ${n} entries`,
  };
}

/**
 * The fresh session against its base, before any step: the same paths, each of the same kind, size,
 * exec bit and symlink target (contents are compared by the oracle at the checkpoint; this walk
 * hashes nothing). A backend that does not reproduce the tree (git-worktree drops untracked and
 * ignored files) shows here, before its steps fail for want of the files it dropped.
 */
export async function createdTreeCheck(root: string, base: BaseInfo): Promise<CheckRecord> {
  const d = compareTrees(baseEntries(base), walkEntries(root, { excludes: base.excludes }), MAX_CHECK_PATHS, {
    contents: false,
  });
  return {
    name: 'created-tree',
    passed: d.mismatches === 0,
    evaluated: true,
    mismatches: d.mismatches,
    counts: d.mismatches === 0 ? null : d.counts,
    paths: d.paths.map((p) => scrubText(p)),
    reference: null,
    detail: d.mismatches === 0 ? null : `the new session differs from its base in ${d.mismatches} entries before any step ran`,
  };
}

/** The digest of a projected result, as recorded in `oracleSnapshot`. */
export function projectedDigest(projected: Entry[], base: Pick<BaseInfo, 'digest' | 'excludes'>): Digest {
  return snapshotDigest(createSnapshot(projected, base.excludes, base.digest));
}

async function materializedFamilies(basesDir: string): Promise<string[]> {
  try {
    return (await readdir(basesDir, { withFileTypes: true }))
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
  } catch {
    return []; // no materialized base: full-copy copies straight from objects
  }
}

/**
 * Re-scan the source and every materialized base of this digest. The check asks whether *this case*
 * changed them: each location is compared with its state after the previous case (or with the
 * imported base when it is new), so a base corrupted earlier is not blamed on every later case.
 */
export async function baseUnchangedCheck(env: CheckEnv, sourceDir: string, base: BaseInfo): Promise<CheckRecord> {
  const changed: string[] = [];
  const bad: string[] = [];
  const already: string[] = [];
  let total = 0;
  const counts: MismatchCounts = { content: 0, mode: 0, symlink: 0, missing: 0, extra: 0, kind: 0 };
  const compare = async (label: string, dir: string) => {
    const scan = await scanTree(dir, { excludes: base.excludes, excludeAbsolute: [env.storeDir] });
    scan.release(); // its walk, an object per entry, before the comparisons make theirs
    // The scan's rows are compared as a stream: its entries are made (and kept) only for a location that changed.
    const scanned = () => columnEntries(scan.columns());
    const key = `${base.digest} ${dir}`;
    const before = env.baseState?.get(key) ?? null;
    const d = compareTrees(before ?? baseEntries(base), scanned(), MAX_CHECK_PATHS);
    const asBase = before === null ? d.mismatches === 0 : compareTrees(baseEntries(base), scanned(), 0).mismatches === 0;
    if (d.mismatches) {
      total += d.mismatches;
      for (const k of Object.keys(counts) as (keyof MismatchCounts)[]) counts[k] += d.counts[k];
      for (const p of d.paths) if (changed.length < MAX_CHECK_PATHS && !changed.includes(p)) changed.push(p);
      bad.push(`${label} (${d.mismatches})`);
    } else if (!asBase) {
      already.push(label);
    }
    // A location equal to the base keeps a reference to the base's entries, one unchanged since the
    // previous case keeps its state, and only a changed one holds a tree of its own.
    env.baseState?.set(key, asBase ? null : d.mismatches === 0 ? before : scan.entries);
  };
  await compare('source', sourceDir);
  env.settle?.(); // once a scan's frame is gone, its garbage with it
  const basesDir = join(env.svc.store.paths.bases, base.digest.slice('sha256:'.length));
  const families = await materializedFamilies(basesDir);
  for (const f of families) {
    await compare(`materialized ${f} base`, join(basesDir, f));
    env.settle?.();
  }
  const note = already.length ? `; already different from the import before this case: ${already.join(', ')}` : '';
  return {
    name: 'base-unchanged',
    passed: total === 0,
    evaluated: true,
    mismatches: total,
    counts: total === 0 ? null : counts,
    paths: changed.map((p) => scrubText(p)),
    reference: null,
    detail:
      total === 0
        ? `source and ${families.length} materialized base(s) re-scanned${note}`
        : `changed during this case: ${bad.join(', ')}${note}`,
  };
}

/**
 * A session's tree as the harness reads it: every file hashed, the base's excludes. Its rows are
 * compared with the base's as a stream, and it is kept as entries of its own only when it differs:
 * a session equal to the base (every backend that reproduces the tree) is null, "the base's".
 */
export async function scanAgainstBase(root: string, base: BaseInfo): Promise<Entry[] | null> {
  const scan = await scanTree(root, { excludes: base.excludes });
  scan.release();
  return compareTrees(baseEntries(base), columnEntries(scan.columns()), 0).mismatches === 0 ? null : scan.entries;
}

/** The block's sibling of the same backend, compared with its own scan right after it was made. */
export async function siblingCheck(env: CheckEnv, sibling: SiblingInfo | null, base: BaseInfo): Promise<CheckRecord | null> {
  if (!sibling) return null;
  if ('failure' in sibling)
    return plainCheck(
      'sibling-unchanged',
      false,
      scrubText(`the block's ${sibling.backend} sibling could not be made: ${sibling.failure.code}`),
    );
  const now = await scanTree(env.svc.sessionRoot(sibling.name), { excludes: base.excludes });
  now.release();
  return treeCheck(
    'sibling-unchanged',
    sibling.entries ?? baseEntries(base),
    columnEntries(now.columns()),
    `the block's ${sibling.backend} sibling session`,
  );
}

export interface VerifyInput {
  workload: Workload;
  params: Record<string, unknown>;
  sourceDir: string;
  base: BaseInfo;
  /** The projected precomputed expectation, or null when the workload has none. */
  expected: Entry[] | null;
  sibling: SiblingInfo | null;
  /** Why the result is not judged (the environment stopped the case), or null when it is. */
  notJudged: string | null;
  /** The case's sessions (the one under test first, then its peers). */
  sessions: string[];
  /** The checkpoint of the session under test. */
  resultSnapshot: Digest;
  /** The oracle's tree of the session under test, read from its bytes (kept in a file, streamed back). */
  tree: KeptOracleTree;
  ctx(): StepContext;
}

/** Where verifyCase records, as it goes: what it found stays recorded when a later check throws. */
export interface VerifySink {
  checks: CheckRecord[];
  /** What the projection dropped from the result; set once the result was read and projected. */
  projection: ProjectionRecord | null;
}

/**
 * Every check that reads the case's result: the expectation and the workload's own checks (not when
 * the environment stopped the case: a tree an outage left half-made says nothing about the
 * filesystem), then base unchanged and sibling unchanged, always.
 */
export async function verifyCase(env: CheckEnv, v: VerifyInput, into: VerifySink, switches: CaseCheckSwitches = {}): Promise<void> {
  // The result is read back (its digest checked) before anything is judged; its entries are parsed
  // only for the workload's own checks, since no other check reads them.
  let resultBytes: Buffer | null = env.svc.store.getBytes(v.resultSnapshot);
  into.projection = v.tree.projection;
  if (v.expected) into.checks.push(v.notJudged === null ? expectedCheck(v) : notEvaluated('expected', v.notJudged));
  if (v.workload.check && v.notJudged !== null) into.checks.push(notEvaluated('workload-checks', v.notJudged));
  else if (v.workload.check) {
    const results: Entry[][] = [(JSON.parse(resultBytes.toString('utf8')) as Snapshot).entries];
    resultBytes = null;
    for (const n of v.sessions.slice(1)) results.push(await env.svc.scanEntries(n));
    for (const c of await v.workload.check(v.ctx(), results)) {
      const counts = c.mismatches && totalMismatches(c.mismatches) ? c.mismatches : null;
      into.checks.push({
        ...plainCheck(c.name, c.passed, c.detail ? scrubText(c.detail) : null),
        mismatches: counts ? totalMismatches(counts) : null,
        counts,
      });
    }
  }
  resultBytes = null; // released before the scans below
  if (switches.baseCheck !== false) into.checks.push(await baseUnchangedCheck(env, v.sourceDir, v.base));
  const sibling = switches.siblingCheck === false ? null : await siblingCheck(env, v.sibling, v.base);
  if (sibling) into.checks.push(sibling);
}

/** The checks a test may leave out (harness/case/runner.ts CheckSwitches). */
export interface CaseCheckSwitches {
  siblingCheck?: boolean;
  baseCheck?: boolean;
}

/**
 * The oracle's tree against the precomputed expectation, on the source: an expectation is computed
 * from the base, so what the scope adds (an install, a build) is left out of this one comparison.
 */
function expectedCheck(v: VerifyInput): CheckRecord {
  const { include } = oracleScopeOf(v.workload, v.params);
  // As a scan's excludes read: a bare name at any depth, a path with a '/' exactly (and below it).
  const names = new Set(include.filter((x) => !x.includes('/')));
  const paths = new Set(include.filter((x) => x.includes('/')));
  const added = (parts: string[], i: number) => names.has(parts[i]!) || paths.has(parts.slice(0, i + 1).join('/'));
  let files = 0;
  // The kept tree streamed, the scope's additions left out and the files counted as the comparison reads it.
  function* source(): Generator<Entry> {
    for (const e of v.tree.entries()) {
      if (include.length && e.path.split('/').some((_, i, parts) => added(parts, i))) continue;
      if (e.kind === 'file') files++;
      yield e;
    }
  }
  const check = treeCheck('expected', v.expected!, source(), 'the result (vs the precomputed expectation)');
  const hashed = v.tree.filesHashed === v.tree.files ? files : Math.min(files, v.tree.filesHashed);
  return {
    ...check,
    files: { case: files, reference: null },
    filesHashed: { case: hashed, reference: null },
    scope: ['source'],
  };
}

/** What discard left behind: session directories, mounts and processes of the case. */
export interface Leftovers {
  sessionDirs: number;
  mounts: number;
  processes: number;
}

export function cleanupCheck(left: Leftovers): CheckRecord {
  const passed = left.sessionDirs === 0 && left.mounts === 0 && left.processes === 0;
  return plainCheck(
    'cleanup',
    passed,
    passed
      ? null
      : [
          left.sessionDirs ? `${left.sessionDirs} session dir(s) left` : '',
          left.mounts ? `${left.mounts} mount(s) left` : '',
          left.processes ? `${left.processes} process(es) still running` : '',
        ]
          .filter(Boolean)
          .join(', '),
  );
}
