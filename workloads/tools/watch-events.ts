// Watcher milestones from the fixtures' reporters: Jest and Vitest reporters append one JSON line
// per run event to a file in the case's scratch directory. We wait on inotify (fs.watch) for the
// file to change and re-read it; the watcher process exiting or the step's timeout ends the wait.
import { existsSync, readFileSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { PdbError } from '../../model/errors.js';
import type { LongRunningProcess } from '../types.js';

export interface WatchEvent {
  event: string;
  total?: number;
  passed?: number;
  failed?: number;
  success?: boolean;
  /** Wall clock (Date.now) when the reporter wrote the event. */
  at?: number;
  [key: string]: unknown;
}

export function readEvents(file: string): WatchEvent[] {
  if (!existsSync(file)) return [];
  const events: WatchEvent[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      events.push(JSON.parse(line) as WatchEvent);
    } catch {
      /* a line being written: the next change event re-reads it whole */
    }
  }
  return events;
}

/**
 * Resolve with the events once `predicate(events)` holds. Rejects E_TIMEOUT after `timeoutMs`
 * and E_STEP_FAILED when `process` exits first.
 */
export function waitForEvents(
  file: string,
  process: LongRunningProcess,
  predicate: (events: WatchEvent[]) => boolean,
  timeoutMs: number,
  what: string,
): Promise<WatchEvent[]> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const dirWatcher = watch(dirname(file), (_type, name) => {
      if (name === null || name === basename(file)) check();
    });
    // Also re-check on every chunk of output, and fail when the process exits or time runs out.
    const guard = process.waitForOutput(() => (settled ? true : predicate(readEvents(file))), timeoutMs, what);
    const finish = (err: unknown, events?: WatchEvent[]) => {
      if (settled) return;
      settled = true;
      dirWatcher.close();
      if (err) reject(err);
      else resolve(events!);
    };
    function check() {
      const events = readEvents(file);
      if (predicate(events)) finish(null, events);
    }
    guard.then(check, (err) => {
      // The guard resolves or rejects once; a late predicate hit still wins over exit.
      const events = readEvents(file);
      if (predicate(events)) finish(null, events);
      else finish(err instanceof PdbError ? err : new PdbError('E_STEP_FAILED', `${what}: ${String(err)}`));
    });
    check();
  });
}
