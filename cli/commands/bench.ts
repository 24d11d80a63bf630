import { relative, resolve } from 'node:path';
import { isPdbError, PdbError } from '../../model/errors.js';
import { WORKLOADS } from '../../workloads/registry.js';
import type { Workload } from '../../workloads/types.js';
import { runBench, type BenchResult } from '../../harness/bench.js';
import { loadPlan } from '../../harness/plan.js';
import { createProgress } from '../../harness/progress.js';
import type { Command } from '../command.js';
import { emit, emitError } from '../output.js';

export const benchCommand: Command = {
  name: 'bench',
  summary: 'run a plan: randomized blocks of backend x workload cases, checked against the oracle, into a receipt',
  help: `pdb-env bench --plan FILE [--seed N] [--out DIR] [--resume RUN] [--store DIR] [--summary] [--json]

Runs every block of the plan (each block: every backend once for one workload, in an
order shuffled from the seed), checks every case against the full-copy oracle, the
unchanged base, a sibling session and cleanup, and writes a schema-validated,
path-free receipt to DIR/<plan>-<run>.json. Backends this host cannot run are
recorded as unavailable with their reason and skipped.

  --plan FILE    the plan (see schemas/plan.schema.json; plans/default.json is quick)
  --seed N       override the plan's seed (recorded in the receipt)
  --out DIR      where receipts go (default: receipts)
  --resume RUN   continue an interrupted run (same --out); finished cases are not repeated
  --store DIR    parent directory of the run's temporary store, e.g. a btrfs or XFS
                 mount (default: PDB_ENV_BENCH_STORE, the plan's store.dir, or the
                 system temp dir); the run makes its own store inside and removes it
  --summary      also write a Markdown summary next to the receipt
  --json         print the receipt path and summary as JSON

Exit status: 0 when every case ended ok, 1 when a case failed or timed out (the
receipt is written either way), 2 on bad usage.

Examples:
  pdb-env bench --plan plans/default.json --out receipts --summary
  PDB_ENV_BENCH_STORE=/mnt/pdb-btrfs npm run proof`,
  options: {
    plan: { type: 'string' },
    seed: { type: 'string' },
    out: { type: 'string' },
    resume: { type: 'string' },
    summary: { type: 'boolean' },
  },
  positionals: 0,
  async run(args) {
    const planFile = args.values.plan as string | undefined;
    const resume = args.values.resume as string | undefined;
    if (!planFile && !resume)
      throw new PdbError('E_USAGE', 'bench needs --plan FILE (or --resume RUN)', { hint: 'pdb-env bench --plan plans/default.json' });
    let seed: number | undefined;
    if (args.values.seed !== undefined) {
      seed = Number(args.values.seed);
      if (!/^\d+$/.test(String(args.values.seed)) || seed > 0xffffffff)
        throw new PdbError('E_USAGE', `--seed must be an integer in [0, 4294967295], got "${String(args.values.seed)}"`);
    }
    const workloads = WORKLOADS as Record<string, Workload>;
    const plan = planFile ? loadPlan(planFile, workloads).plan : undefined;
    const outDir = resolve((args.values.out as string | undefined) ?? 'receipts');
    // The CLI owns the signals: the first SIGINT/SIGTERM interrupts the run (a second one, with the
    // handlers gone, ends the process at once); an interrupted run exits 130 like a shell's Ctrl-C.
    const interrupt = new AbortController();
    const onSignal = (sig: NodeJS.Signals) => {
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
      interrupt.abort(sig);
    };
    process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
    let result: BenchResult;
    try {
      result = await runBench({
        plan,
        seed,
        outDir,
        resume,
        summary: args.values.summary === true,
        storeParent: args.store,
        workloads,
        // Progress goes to stderr, so it shows with --json too (stdout stays one JSON document).
        progress: createProgress(),
        signal: interrupt.signal,
      });
    } catch (err) {
      if (!isPdbError(err, 'E_INTERRUPTED')) throw err;
      emitError(args.json, err);
      return 130;
    } finally {
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
    }
    const { receiptPath, summaryPath, receipt } = result;
    const show = (p: string) => relative(process.cwd(), p) || p;
    const s = receipt.summary;
    emit(
      args.json,
      {
        receipt: show(receiptPath),
        markdown: summaryPath ? show(summaryPath) : null,
        runId: receipt.runId,
        seed: receipt.seed,
        summary: s,
      },
      () =>
        [
          `receipt ${show(receiptPath)}${summaryPath ? `\nsummary ${show(summaryPath)}` : ''}`,
          `run ${receipt.runId}, seed ${receipt.seed}: ${s.planned} case slots, ${s.ok} ok, ${s.failed} failed, ${s.timeout} timeout, ${s.unavailable} unavailable (a backend or a lane this host cannot run)`,
          `oracle mismatches: ${s.oracleMismatches}; harness overhead median ${s.overheadShareMedian === null ? '-' : `${(s.overheadShareMedian * 100).toFixed(1)} %`}`,
          `unavailable: ${
            receipt.backends
              .filter((b) => !b.available)
              .map((b) => `${b.name} (${b.reason})`)
              .join(', ') || 'none'
          }`,
        ].join('\n'),
    );
    return s.failed + s.timeout > 0 ? 1 : 0;
  },
};
