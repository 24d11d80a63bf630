// The checks every case must pass: its result equals the oracle's (a precomputed expectation, or
// the full-copy case of its block, compared later), the workload's own checks, the base and the
// block's sibling session unchanged, and cleanup complete. A failed check is kept in the receipt
// and turns into the case's failure code.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Digest } from '../model/canonical-json.js';
import type { PdbErrorCode } from '../model/errors.js';
import { scanTree } from '../model/scan.js';
import { countMismatches, createSnapshot, snapshotDigest, totalMismatches, type Entry, type MismatchCounts } from '../model/snapshot.js';
import type { SessionService } from '../sessions/service.js';
import type { StepContext, Workload } from '../workloads/types.js';
import { scrubText } from './path-free.js';
import type { CaseRecord, CheckRecord, FailureRecord } from './receipt-types.js';

/** The base every case of a workload starts from: the run's one import of its fixture. */
export interface BaseInfo {
  digest: Digest;
  entries: Entry[];
  excludes: string[];
}

/** What the checks read: the store, and each base location's state after the previous case. */
export interface CheckEnv {
  svc: SessionService;
  storeDir: string;
  /** State of each base location after the previous case (source and materialized bases), by base digest and directory. */
  baseState?: Map<string, Entry[]>;
}

const ZERO: MismatchCounts = { content: 0, mode: 0, symlink: 0, missing: 0, extra: 0, kind: 0 };

function addCounts(a: MismatchCounts, b: MismatchCounts): MismatchCounts {
  return {
    content: a.content + b.content,
    mode: a.mode + b.mode,
    symlink: a.symlink + b.symlink,
    missing: a.missing + b.missing,
    extra: a.extra + b.extra,
    kind: a.kind + b.kind,
  };
}

export function treeCheck(name: string, expected: Entry[], actual: Entry[], what: string): CheckRecord {
  const m = countMismatches(expected, actual);
  const n = totalMismatches(m);
  return { name, passed: n === 0, mismatches: n === 0 ? null : m, detail: n === 0 ? null : `${what} differs in ${n} entries` };
}

/** The digest of the oracle's projected result, as recorded in `oracleSnapshot`. */
export function oracleDigest(projected: Entry[], base: BaseInfo): Digest {
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
  let total = ZERO;
  const bad: string[] = [];
  const already: string[] = [];
  const compare = async (label: string, dir: string) => {
    const scan = await scanTree(dir, { excludes: base.excludes, excludeAbsolute: [env.storeDir] });
    const key = `${base.digest} ${dir}`;
    const before = env.baseState?.get(key) ?? base.entries;
    const m = countMismatches(before, scan.entries);
    if (totalMismatches(m)) {
      total = addCounts(total, m);
      bad.push(`${label} (${totalMismatches(m)})`);
    } else if (before !== base.entries && totalMismatches(countMismatches(base.entries, scan.entries))) {
      already.push(label);
    }
    env.baseState?.set(key, scan.entries);
  };
  await compare('source', sourceDir);
  const basesDir = join(env.svc.store.paths.bases, base.digest.slice('sha256:'.length));
  const families = await materializedFamilies(basesDir);
  for (const f of families) await compare(`materialized ${f} base`, join(basesDir, f));
  const n = totalMismatches(total);
  const note = already.length ? `; already different from the import before this case: ${already.join(', ')}` : '';
  return {
    name: 'base-unchanged',
    passed: n === 0,
    mismatches: n === 0 ? null : total,
    detail:
      n === 0
        ? `source and ${families.length} materialized base(s) re-scanned${note}`
        : `changed during this case: ${bad.join(', ')}${note}`,
  };
}

export interface VerifyInput {
  workload: Workload;
  params: Record<string, unknown>;
  sourceDir: string;
  base: BaseInfo;
  /** The projected expected result, or null when the oracle comparison is deferred to the block's end. */
  expected: Entry[] | null;
  sibling: string | null;
  /** The case's sessions (the one under test first, then its peers). */
  sessions: string[];
  /** The checkpoint of the session under test. */
  resultSnapshot: Digest;
  ctx(): StepContext;
}

/** Where verifyCase records, as it goes: what it found stays recorded when a later check throws. */
export interface VerifySink {
  checks: CheckRecord[];
  /** The projected result, kept for a deferred oracle comparison. */
  projected: Entry[] | null;
}

/**
 * Every check that reads the case's result: the oracle (when the expectation is known now), the
 * workload's own checks, base unchanged and sibling unchanged.
 */
export async function verifyCase(env: CheckEnv, v: VerifyInput, into: VerifySink): Promise<void> {
  const result = env.svc.readSnapshot(v.resultSnapshot).entries;
  const projected = v.workload.project(result, v.params);
  into.projected = projected;
  if (v.expected) into.checks.push(treeCheck('oracle', v.expected, projected, 'the result'));
  const results: Entry[][] = [result];
  for (const n of v.sessions.slice(1)) results.push(await env.svc.scanEntries(n));
  if (v.workload.check) {
    for (const c of await v.workload.check(v.ctx(), results)) {
      into.checks.push({
        name: c.name,
        passed: c.passed,
        mismatches: c.mismatches && totalMismatches(c.mismatches) ? c.mismatches : null,
        detail: c.detail ? scrubText(c.detail) : null,
      });
    }
  }
  into.checks.push(await baseUnchangedCheck(env, v.sourceDir, v.base));
  if (v.sibling)
    into.checks.push(treeCheck('sibling-unchanged', v.base.entries, await env.svc.scanEntries(v.sibling), 'the block sibling session'));
}

/** What discard left behind: session directories, mounts and processes of the case. */
export interface Leftovers {
  sessionDirs: number;
  mounts: number;
  processes: number;
}

export function cleanupCheck(left: Leftovers): CheckRecord {
  const passed = left.sessionDirs === 0 && left.mounts === 0 && left.processes === 0;
  return {
    name: 'cleanup',
    passed,
    mismatches: null,
    detail: passed
      ? null
      : [
          left.sessionDirs ? `${left.sessionDirs} session dir(s) left` : '',
          left.mounts ? `${left.mounts} mount(s) left` : '',
          left.processes ? `${left.processes} process(es) still running` : '',
        ]
          .filter(Boolean)
          .join(', '),
  };
}

const CHECK_CODES: Record<string, PdbErrorCode> = {
  oracle: 'E_ORACLE_MISMATCH',
  'base-unchanged': 'E_BASE_CHANGED',
  'sibling-unchanged': 'E_SIBLING_CHANGED',
  cleanup: 'E_CLEANUP_INCOMPLETE',
};

/** The failure a failed check stands for: its stable code and the phase it belongs to. */
export function checkFailure(c: CheckRecord): FailureRecord {
  return {
    code: CHECK_CODES[c.name] ?? (c.name.endsWith('oracle') ? 'E_ORACLE_MISMATCH' : 'E_STEP_FAILED'),
    phase: c.name === 'cleanup' ? 'discard' : 'verify',
    message: `check ${c.name} failed${c.detail ? `: ${c.detail}` : ''}`,
  };
}

/** The deferred oracle: compare a case with the full-copy case of its block (workloads without `expected`). */
export function applyDeferredOracle(
  record: CaseRecord,
  projected: Entry[] | null,
  oracle: { projected: Entry[] | null; record: CaseRecord } | null,
  base: BaseInfo,
): void {
  let check: CheckRecord;
  if (!oracle || !oracle.projected) {
    check = { name: 'oracle', passed: false, mismatches: null, detail: 'no full-copy result in this block to compare with' };
  } else if (!projected) {
    check = { name: 'oracle', passed: false, mismatches: null, detail: 'the case has no result to compare' };
  } else {
    check = treeCheck('oracle', oracle.projected, projected, "the projected result (vs full-copy's)");
    record.oracleSnapshot = oracleDigest(oracle.projected, base);
  }
  record.checks.unshift(check);
  if (!check.passed && record.outcome === 'ok') {
    record.outcome = 'failed';
    record.failure = { code: 'E_ORACLE_MISMATCH', phase: 'verify', message: scrubText(`check oracle failed: ${check.detail ?? ''}`) };
  }
}
