// The run journal: what an interrupted run needs to continue with --resume without repeating a
// finished case. It lives under `<out>/.pdb-runs/<runId>/` (a header and one JSON line per finished
// case), is local state rather than evidence (it may hold absolute paths), and is removed once the
// receipt is written.
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Digest } from '../model/canonical-json.js';
import { PdbError } from '../model/errors.js';
import type { Plan } from './plan/plan.js';
import type { BuildState, CheckoutState } from './receipt/provenance.js';
import type { CaseRecord } from './receipt/receipt-types.js';

export const RUNS_DIR = '.pdb-runs';

export interface RunHeader {
  version: 1;
  runId: string;
  plan: Plan;
  planDigest: Digest;
  seed: number;
  startedAt: string;
  /** The pdb-env checkout when the run started (its provenance). */
  checkout: CheckoutState;
  /** os.loadavg() when the run started. */
  loadAverage: number[];
  /** The plan's `${NAME}` values (local state: they may be absolute paths; never copied into the receipt). */
  vars?: Record<string, string>;
  /** The build that ran when the run started (its digest, and the stale source if --allow-stale-build let it run). */
  build?: BuildState;
  /** The backend modules the run loaded, by real path (local state, never in the receipt). */
  backendModules?: string[];
  /** Store and work directories of the latest attempt (removed by the next attempt). */
  storeDir: string | null;
  workDir: string | null;
  attempts: number;
}

export function newRunId(now = new Date()): string {
  const t = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `${t}-${randomBytes(3).toString('hex')}`;
}

export const RUN_ID_PATTERN = /^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}$/;

export class RunJournal {
  readonly dir: string;

  private constructor(
    outDir: string,
    readonly runId: string,
  ) {
    this.dir = join(outDir, RUNS_DIR, runId);
  }

  static create(outDir: string, header: Omit<RunHeader, 'version' | 'attempts' | 'storeDir' | 'workDir'>): RunJournal {
    const j = new RunJournal(outDir, header.runId);
    mkdirSync(j.dir, { recursive: true });
    j.writeHeader({ version: 1, ...header, storeDir: null, workDir: null, attempts: 1 });
    writeFileSync(j.casesFile, '', { flag: 'wx' });
    return j;
  }

  static open(outDir: string, runId: string): RunJournal {
    if (!RUN_ID_PATTERN.test(runId))
      throw new PdbError('E_RUN_NOT_FOUND', `"${runId}" is not a run id (like 20260101T120000Z-a1b2c3)`, {
        hint: `Interrupted runs are listed under ${join(outDir, RUNS_DIR)}.`,
      });
    const j = new RunJournal(outDir, runId);
    if (!existsSync(j.headerFile)) {
      throw new PdbError('E_RUN_NOT_FOUND', `no interrupted run ${runId} under ${join(outDir, RUNS_DIR)}`, {
        hint: 'Pass the same --out as the interrupted run; a finished run has no journal left.',
      });
    }
    return j;
  }

  private get headerFile(): string {
    return join(this.dir, 'run.json');
  }

  private get casesFile(): string {
    return join(this.dir, 'cases.jsonl');
  }

  header(): RunHeader {
    return JSON.parse(readFileSync(this.headerFile, 'utf8')) as RunHeader;
  }

  writeHeader(h: RunHeader): void {
    const tmp = `${this.headerFile}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(h, null, 2)}\n`);
    // rename is atomic: a crash leaves the old header or the new one.
    renameSync(tmp, this.headerFile);
  }

  /** Finished cases, in the order they finished. A torn last line (crash mid-write) is ignored. */
  cases(): CaseRecord[] {
    const out: CaseRecord[] = [];
    for (const line of readFileSync(this.casesFile, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      try {
        out.push(JSON.parse(line) as CaseRecord);
      } catch {
        /* torn write of a case that therefore did not finish */
      }
    }
    return out;
  }

  append(record: CaseRecord): void {
    appendFileSync(this.casesFile, `${JSON.stringify(record)}\n`);
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
    const parent = dirname(this.dir);
    if (existsSync(parent) && readdirSync(parent).length === 0) rmSync(parent, { recursive: true, force: true });
  }
}
