// What one attempt of a bench run shares between its stages (setup, blocks, receipt): the options,
// the journal, the run's directories and counters, and how an interruption is reported.
import { PdbError } from '../model/errors.js';
import type { Entry } from '../model/snapshot.js';
import type { Fixture, ProcessRunner, Workload } from '../workloads/types.js';
import type { BaseInfo } from './case/case-checks.js';
import type { CaseProcessRegistry } from './case/processes.js';
import type { HarnessMemoryLog, RssProbe } from './case/memory.js';
import type { PathFreeOptions } from './receipt/path-free.js';
import type { Plan } from './plan/plan.js';
import type { ProgressSink } from './run-progress.js';
import type { CaseRecord, FixtureRecord, Receipt } from './receipt/receipt-types.js';
import type { RunJournal } from './run-journal.js';
import type { CheckSwitches } from './case/runner.js';

export interface BenchOptions {
  /** A parsed plan (from loadPlan), or omitted with `resume` (the journal holds the plan). */
  plan?: Plan;
  seed?: number;
  /** Where the receipt (and the run journal) go. */
  outDir: string;
  /** Continue this interrupted run. */
  resume?: string;
  /** Also write a Markdown summary next to the receipt. */
  summary?: boolean;
  /** Parent directory for the run's store (overrides the plan's store.dir). */
  storeParent?: string;
  /** Workload registry (tests add their own). */
  workloads?: Record<string, Workload>;
  progress?: ProgressSink;
  /**
   * Interrupts the run: the running case's processes are killed, no further case starts, the run's
   * store and work directory are removed as at any end, the journal stays for --resume, and the
   * run rejects with E_INTERRUPTED (its hint says how to continue). A string reason (e.g. the
   * signal's name) is named in the message.
   */
  signal?: AbortSignal;
  /** Test seam: stop (as if interrupted) after this many cases ran in this process. */
  stopAfterCases?: number;
  /** Test seam: grace for in-process work after a case timeout. */
  graceMs?: number;
  pathFree?: PathFreeOptions;
  processRunner?: ProcessRunner;
  /** The git checkout whose commit and state the receipt's provenance records (default: the pdb-env package root). */
  provenanceRepo?: string;
  /**
   * Values for the plan's `${NAME}` placeholders (e.g. a repo workload's source directory). Kept in
   * the local run journal for --resume, never in the receipt; a resumed run may give them again.
   */
  vars?: Record<string, string>;
  /** The user's own backends: module files (absolute, or relative to the current directory). */
  backendModules?: string[];
  /** Where the plan file is: its `backendModules` are relative to it (default: the current directory). */
  planDir?: string;
  /** Run although the build is older than its sources: the receipt then says so and is not evidence. */
  allowStaleBuild?: boolean;
  /** The package whose build is checked and recorded (default: the pdb-env package root). */
  buildRoot?: string;
  /** Test seam: take checks away to show what the oracle alone catches (never from a plan or the CLI). */
  checkSwitches?: CheckSwitches;
}

export interface BenchResult {
  receiptPath: string;
  summaryPath: string | null;
  receipt: Receipt;
}

/** Thrown by the stopAfterCases seam: the run is left resumable, like a crash would leave it. */
export class BenchInterrupted extends Error {
  constructor(readonly runId: string) {
    super(`run ${runId} interrupted`);
  }
}

/** A workload of the plan, ready to run: its fixture, the imported base, its expectation and parameters. */
export interface PreparedWorkload {
  fixture: Fixture;
  fixtureRecord: FixtureRecord;
  base: BaseInfo;
  expected: Entry[] | null;
  params: Record<string, unknown>;
}

/** One attempt of a run: what every stage reads, and the counters they share. */
export interface BenchRun {
  options: BenchOptions;
  workloads: Record<string, Workload>;
  progress: ProgressSink;
  outDir: string;
  journal: RunJournal;
  plan: Plan;
  seed: number;
  runId: string;
  storeDir: string;
  workDir: string;
  allowTestOnly: boolean;
  proc: ProcessRunner;
  processes: CaseProcessRegistry;
  /** Finished cases by id: from the journal, then from this attempt. */
  finished: Map<string, CaseRecord>;
  /** The "case i of N" counter, and the cases this process ran (for stopAfterCases). */
  index: number;
  ranHere: number;
  /** The plan's `${NAME}` values (from the options, else the journal). */
  vars: Record<string, string>;
  /** The harness's own peak RSS: per case phase (rss) and per run-level phase (memory). */
  rss: RssProbe;
  memory: HarnessMemoryLog;
  /** Collect the garbage of what the harness just finished, once there is enough of it (case/memory.ts createHeapSettler). */
  settle(): void;
}

function relOut(p: string): string {
  return p.startsWith(`${process.cwd()}/`) ? p.slice(process.cwd().length + 1) : p;
}

export function interrupted(run: BenchRun, cause?: unknown): PdbError {
  const reason: unknown = run.options.signal?.reason;
  const finished = run.journal.cases().length;
  return new PdbError(
    'E_INTERRUPTED',
    `interrupted${typeof reason === 'string' ? ` by ${reason}` : ''}: run ${run.runId} stopped with ${finished} finished case(s) kept in its journal`,
    { hint: `continue with: pdb-env bench --resume ${run.runId} --out ${relOut(run.outDir)}`, cause },
  );
}

export function throwIfInterrupted(run: BenchRun): void {
  if (run.options.signal?.aborted) throw interrupted(run);
}
