// The projection every comparison of a case's result goes through: first the workload's volatile
// paths are dropped (caches such as node_modules/.vite, .next/cache, *.tsbuildinfo, which differ
// between two correct runs), counted per pattern for the receipt; then the workload's own projection.
import picomatch from 'picomatch';
import type { Entry } from '../../model/snapshot.js';
import type { Workload } from '../../workloads/types.js';
import type { ProjectionRecord } from '../receipt/receipt-types.js';

export interface Projected {
  /** The entries the comparisons see. */
  entries: Entry[];
  /** What the volatile patterns dropped, for the receipt (patterns and counts: path-free). */
  record: ProjectionRecord;
}

/**
 * A matcher for volatile patterns (globs over contract paths, dot files included): `dir/**` drops
 * the directory and everything under it; `**\/name` matches at any depth. Returns the index of the
 * first matching pattern, or -1.
 */
export function volatileMatcher(patterns: readonly string[]): (path: string) => number {
  const tests = patterns.map((p) => picomatch(p, { dot: true }));
  return (path) => tests.findIndex((t) => t(path));
}

/** Drop the entries a workload declares volatile, counting what each pattern dropped. */
export function dropVolatile(entries: Entry[], patterns: readonly string[]): Projected {
  if (patterns.length === 0) return { entries, record: { volatile: [], dropped: [] } };
  const match = volatileMatcher(patterns);
  const counts = patterns.map(() => 0);
  const kept: Entry[] = [];
  for (const e of entries) {
    const i = match(e.path);
    if (i < 0) kept.push(e);
    else counts[i]!++;
  }
  return {
    entries: kept,
    record: {
      volatile: [...patterns],
      dropped: patterns.map((pattern, i) => ({ pattern, entries: counts[i]! })).filter((d) => d.entries > 0),
    },
  };
}

/** A result as the comparisons see it: volatile paths dropped, then the workload's own projection. */
export function projectResult(workload: Workload, params: Record<string, unknown>, entries: Entry[]): Projected {
  const volatile = dropVolatile(entries, workload.volatilePaths?.(params) ?? []);
  return { entries: workload.project(volatile.entries, params), record: volatile.record };
}
