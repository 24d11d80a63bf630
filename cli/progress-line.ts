// Progress on a terminal: files and bytes done, drawn on stderr once an operation has run for a
// second, redrawn at most ten times a second, erased when it ends. Never with --json, never when
// stderr is not a terminal (a pipe or a log file gets nothing), never on stdout.
import { fstatSync } from 'node:fs';
import { formatBytes, type ProgressEvent, type ProgressFn } from '../model/progress.js';

export interface ProgressOptions {
  json: boolean;
  stream?: Pick<NodeJS.WriteStream, 'write'> & { isTTY?: boolean };
  now?: () => number;
  /** Nothing is drawn before the operation has run this long. */
  delayMs?: number;
  intervalMs?: number;
}

export interface ProgressReporter {
  /** Hand this to the service (undefined when nothing will be drawn). */
  onProgress: ProgressFn | undefined;
  /** Erase the line, if one was drawn. */
  done(): void;
}

const VERBS: Record<ProgressEvent['phase'], string> = { scan: 'scanned', hash: 'hashed', copy: 'copied', clone: 'cloned' };

export function progressLine(p: ProgressEvent): string {
  const files = p.totalFiles > 0 ? `${p.files}/${p.totalFiles} files` : `${p.files} entries`;
  const bytes = p.totalBytes > 0 ? `, ${formatBytes(p.bytes)} of ${formatBytes(p.totalBytes)}` : '';
  return `${VERBS[p.phase]} ${files}${bytes}`;
}

/** PDB_ENV_PROGRESS_DELAY_MS: how long before the first line (default 1000; 0 shows short operations too, as the TTY tests do). */
function delayFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const v = env.PDB_ENV_PROGRESS_DELAY_MS;
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
}

/** Can fd 2 be a terminal? Asked of its stat data first: process.stderr made to ask builds a stream. */
function stderrMayBeTTY(): boolean {
  try {
    return fstatSync(2).isCharacterDevice();
  } catch {
    return false; // closed
  }
}

export function createProgressReporter(options: ProgressOptions): ProgressReporter {
  const none = { onProgress: undefined, done: () => {} };
  if (options.json || (!options.stream && !stderrMayBeTTY())) return none;
  const stream = options.stream ?? process.stderr;
  if (!stream.isTTY) return none;
  const now = options.now ?? Date.now;
  const started = now();
  const delay = options.delayMs ?? delayFromEnv() ?? 1000;
  const interval = options.intervalMs ?? 100;
  let drawnAt = -Infinity;
  let drawn = false;
  return {
    onProgress: (p) => {
      const t = now();
      if (t - started < delay || t - drawnAt < interval) return;
      drawnAt = t;
      drawn = true;
      stream.write(`\r\x1b[K${progressLine(p)}`);
    },
    done: () => {
      if (drawn) stream.write('\r\x1b[K');
    },
  };
}
