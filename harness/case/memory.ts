// Peak RSS of the harness process itself, per phase. getrusage's maxrss (process.resourceUsage())
// is a high-water mark over the whole life of the process, so it cannot say which phase held the
// memory. On Linux the mark in /proc/self/status (VmHWM) can be reset to the current RSS by writing
// "5" to /proc/self/clear_refs, so the peak of one phase is VmHWM read at its end after a reset at
// its start. Elsewhere the peak of a phase is not measured (null), never stood in for by the lifetime.
import { fullCollection, heapBytes } from '../../model/os/heap.js';
import { readFileSync, writeFileSync } from 'node:fs';
import type { HarnessMemory, HarnessPhaseMemory } from '../receipt/receipt-types.js';

export interface RssProbe {
  readonly method: HarnessMemory['method'];
  /** Start a phase: reset the high-water mark to the current RSS. */
  reset(): void;
  /** The peak RSS in bytes since the last reset, or null when not measured per phase. */
  peak(): number | null;
  /**
   * The peak RSS of the process so far in bytes. Resetting VmHWM resets what getrusage reports too
   * (the kernel takes the larger of VmHWM and the peak of exited threads), so the probe keeps the
   * mark it read before each reset, and the lifetime peak is the largest of those and getrusage's.
   */
  lifetimePeak(): number;
}

/** getrusage's maxrss in bytes (Node reports kilobytes on every platform). */
const rusagePeak = () => process.resourceUsage().maxRSS * 1024;

/** The VmHWM line of /proc/self/status in bytes, or null when it cannot be read. */
export function readVmHwm(status = (): string => readFileSync('/proc/self/status', 'utf8')): number | null {
  try {
    const m = /^VmHWM:\s+(\d+)\s+kB$/m.exec(status());
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null; // no procfs: not measured
  }
}

const NO_PROBE: RssProbe = { method: 'none', reset() {}, peak: () => null, lifetimePeak: rusagePeak };

/**
 * The probe this host allows: a resettable VmHWM (Linux), checked once by resetting it; otherwise
 * none. `beforeReset` runs at each phase's start, before the mark is reset (the heap settler).
 */
export function createRssProbe(options: { beforeReset?: () => void } = {}): RssProbe {
  const reset = () => (options.beforeReset?.(), writeFileSync('/proc/self/clear_refs', '5'));
  // The process's peak until now, read before the first reset lowers what getrusage and VmHWM say.
  let before = Math.max(rusagePeak(), readVmHwm() ?? 0);
  try {
    reset();
  } catch {
    return NO_PROBE; // not Linux, or clear_refs not writable here
  }
  if (readVmHwm() === null) return NO_PROBE;
  return {
    method: 'vmhwm-reset',
    reset() {
      before = Math.max(before, readVmHwm() ?? 0);
      try {
        reset();
      } catch {
        /* it worked when the probe was made; a later refusal leaves the mark un-reset (a larger, still true, peak) */
      }
    },
    peak: () => readVmHwm(),
    lifetimePeak: () => Math.max(before, readVmHwm() ?? 0, rusagePeak()),
  };
}

/** The run-level phases of the harness (outside any case), each with its largest peak. */
export interface HarnessMemoryLog {
  /** Run `fn` as one occurrence of the phase `name`, recording its peak. */
  measure<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /** The receipt's record: the method, the process's lifetime peak, and each phase. */
  record(): HarnessMemory;
}

export function createHarnessMemoryLog(probe: RssProbe = createRssProbe()): HarnessMemoryLog {
  const phases = new Map<string, HarnessPhaseMemory>();
  return {
    async measure(name, fn) {
      probe.reset();
      try {
        return await fn();
      } finally {
        const peak = probe.peak();
        const p = phases.get(name) ?? { name, count: 0, peakRssBytes: null };
        p.count++;
        if (peak !== null) p.peakRssBytes = Math.max(p.peakRssBytes ?? 0, peak);
        phases.set(name, p);
      }
    },
    record: () => ({
      method: probe.method,
      processMaxRssBytes: probe.lifetimePeak(),
      phases: [...phases.values()].map((p) => ({ ...p })),
    }),
  };
}

/**
 * Collects, at a phase's start, the garbage earlier phases left, once it passes `slackBytes`. V8
 * grows its heap to a multiple of what was live at its last full collection before it collects
 * again, so at 250,000 entries the harness held about 100 MB live and over 1 GB of RSS: the
 * garbage of each in-process create, scan and discard stacked on the last. A collection between
 * phases (the harness's own time, never a phase's) starts each phase from what is live; a run on a
 * small tree never makes that much garbage, so it pays nothing.
 */
export function createHeapSettler(
  slackBytes = 128 * 2 ** 20,
  collect = fullCollection(),
  measure: () => number = heapBytes,
): { settle(): boolean } {
  let live = measure();
  return {
    settle() {
      if (!collect || measure() - live < slackBytes) return false;
      collect();
      live = measure();
      return true;
    },
  };
}
