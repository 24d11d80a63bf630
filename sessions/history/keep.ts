// How many checkpoints of a session gc keeps: the last `history.keep` (pdb-env.json of the
// session's source), by default 100, as Claude Code keeps; older ones are collected unless pinned.
// The log keeps every line (`pdb-env log` marks a collected one), so numbers never shift.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { allocatedBytes } from '../../backends/shared/disk-usage.js';
import type { Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';
import type { Snapshot } from '../../model/snapshot.js';
import type { SessionRecord, StoreContext } from '../records/session-record.js';
import { readLogLines } from './log.js';

export const DEFAULT_HISTORY_KEEP = 100;

/** model/scan/scan.ts's SOURCE_CONFIG, named here so that list (which reads usage through this module) does not load the scanner. */
const SOURCE_CONFIG = 'pdb-env.json';

/** `history.keep` of the pdb-env.json in `sourceDir` (default 100; no file or no source: the default). */
export function historyKeep(sourceDir: string | null): number {
  if (!sourceDir) return DEFAULT_HISTORY_KEEP;
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(join(sourceDir, SOURCE_CONFIG), 'utf8'));
  } catch {
    return DEFAULT_HISTORY_KEEP; // absent, or not JSON: import reports that one (E_CONFIG_INVALID)
  }
  const keep = (doc as { history?: { keep?: unknown } } | null)?.history?.keep;
  if (keep === undefined) return DEFAULT_HISTORY_KEEP;
  if (!Number.isInteger(keep) || (keep as number) < 1)
    throw new PdbError(
      'E_CONFIG_INVALID',
      `${SOURCE_CONFIG} of ${sourceDir}: "history.keep" must be a whole number of checkpoints, 1 or more`,
      {
        path: join(sourceDir, SOURCE_CONFIG),
      },
    );
  return keep as number;
}

/** What a session's history holds: its checkpoints, how many gc keeps, and the objects only they reach. */
export interface HistoryUsage {
  checkpoints: number;
  kept: number;
  /** Distinct objects the kept checkpoints reach that the session's base does not (Snapshots, Changesets, files), and their allocated bytes. */
  objects: number;
  bytes: number;
}

/** Measure the history of session `name` (reads each kept Snapshot; `du` only). */
export function historyUsage(ctx: StoreContext, rec: SessionRecord): HistoryUsage {
  const lines = readLogLines(ctx.store, rec.name);
  let keep: number;
  try {
    keep = historyKeep(rec.sourceDir);
  } catch {
    keep = Infinity;
  }
  const kept = lines.slice(Math.max(0, lines.length - keep));
  const inBase = new Set<string>();
  if (ctx.store.has(rec.base))
    for (const e of ctx.store.getDocument<Snapshot>(rec.base, 'Snapshot').entries) if (e.kind === 'file') inBase.add(e.digest);
  const reached = new Set<Digest>();
  for (const l of kept) {
    for (const d of [l.snapshot, l.changeset]) if (d !== rec.base && ctx.store.has(d)) reached.add(d);
    if (!ctx.store.has(l.snapshot) || l.snapshot === rec.base) continue;
    for (const e of ctx.store.getDocument<Snapshot>(l.snapshot, 'Snapshot').entries)
      if (e.kind === 'file' && !inBase.has(e.digest) && ctx.store.has(e.digest)) reached.add(e.digest);
  }
  let bytes = 0;
  for (const d of reached) bytes += allocatedBytes(ctx.store.objectPath(d));
  return { checkpoints: lines.length, kept: kept.length, objects: reached.size, bytes };
}
