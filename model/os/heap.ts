// V8's full collection on demand, for the few places that end a phase holding a whole tree's worth
// of garbage (a first import's walk at 250,000 entries): V8 grows its heap to a multiple of what
// was live at its last full collection before it collects again, so that garbage would otherwise
// stay in RSS next to what the next phase allocates.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let collector: (() => void) | null | undefined;

/** V8's full collection, made callable at run time (as --expose-gc would); null where the flag cannot be set. */
export function fullCollection(): (() => void) | null {
  if (collector !== undefined) return collector;
  const own = (globalThis as { gc?: () => void }).gc;
  if (typeof own === 'function') return (collector = own);
  try {
    setFlagsFromString('--expose-gc');
    collector = runInNewContext('gc') as () => void;
  } catch {
    collector = null; // not collected on demand: V8 collects on its own schedule
  }
  return collector;
}

/** What the heap and the memory it keeps outside it (Buffers, typed arrays) hold now, garbage included. */
export function heapBytes(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

/** A full collection when the heap holds more than `bytes` (live and garbage): a small tree pays nothing. */
export function collectAbove(bytes: number): void {
  if (heapBytes() > bytes) fullCollection()?.();
}

/**
 * Let V8 grow its old generation to at most `percent` past what was live at its last full
 * collection (its own factor goes up to 4x for a program that allocates fast). For a process that
 * makes and drops whole-tree structures one after another (the harness: each scan an object per
 * entry), that garbage is otherwise RSS: four rounds of a scan and a comparison of 268,753 entries
 * peaked at 292-421 MB, and at 265-317 MB with 30 (functional run, not evidence). False where the
 * flag cannot be set.
 */
export function boundHeapGrowth(percent: number): boolean {
  try {
    setFlagsFromString(`--heap-growing-percent=${percent}`);
    return true;
  } catch {
    return false; // V8's own growth: more RSS, the same results
  }
}
