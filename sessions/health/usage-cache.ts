// The last `du` of a session, kept beside its record (`<store>/sessions/NAME/usage.json`), so that
// `pdb-env list` can show the exclusive size with a stat and a small read per session instead of
// measuring (a FIEMAP walk of a large tree takes a while). It goes with the session at discard.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { osErrorCode } from '../../model/errors.js';
import { writeFileAtomic, type ObjectStore } from '../../model/store/object-store.js';
import { sessionDir } from '../records/session-record.js';

/** A session's figures as `du` last measured them. */
export interface CachedUsage {
  exclusiveBytes: number;
  sharedBytes: number;
  /** When `du` measured them (ISO 8601). */
  measuredAt: string;
}

export function usageFile(store: ObjectStore, name: string): string {
  return join(sessionDir(store, name), 'usage.json');
}

/** The last measurement of a session created at `createdAt`; null when there is none (or it was of an earlier session of that name). */
export async function readUsageCache(store: ObjectStore, name: string, createdAt: string): Promise<CachedUsage | null> {
  try {
    const u = JSON.parse(await readFile(usageFile(store, name), 'utf8')) as Partial<CachedUsage>;
    if (typeof u.exclusiveBytes !== 'number' || typeof u.sharedBytes !== 'number' || typeof u.measuredAt !== 'string') return null;
    if (u.measuredAt < createdAt) return null;
    return { exclusiveBytes: u.exclusiveBytes, sharedBytes: u.sharedBytes, measuredAt: u.measuredAt };
  } catch {
    return null; // never measured, or a file cut short: list shows no size rather than a wrong one
  }
}

/** Keep a measurement; a session discarded meanwhile is left gone. */
export async function writeUsageCache(store: ObjectStore, name: string, u: CachedUsage): Promise<void> {
  await writeFileAtomic(store.paths, usageFile(store, name), `${JSON.stringify(u)}\n`, 0o644, { sync: false }).catch((err: unknown) => {
    if (osErrorCode((err as { cause?: unknown }).cause) !== 'ENOENT') throw err;
  });
}
