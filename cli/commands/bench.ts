import { relative, resolve } from 'node:path';
import { runBench } from '../../harness/bench.js';
import { loadPlan } from '../../harness/plan.js';
import { createProgress } from '../../harness/progress.js';
import { PdbError } from '../../model/errors.js';
import { WORKLOADS } from '../../workloads/registry.js';
import type { Workload } from '../../workloads/types.js';
import { emit } from '../output.js';
import type { DefineCommand } from '../program.js';

function parseSeed(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const seed = Number(text);
  if (!/^\d+$/.test(text) || seed > 0xffffffff)
    throw new PdbError('E_USAGE', `--seed must be an integer in [0, 4294967295], got "${text}"`);
  return seed;
}

/**
 * Run the bench with SIGINT and SIGTERM turned into an abort: the harness stops the running case
 * and rejects with E_INTERRUPTED (its hint says how to resume), which main() prints and exits 130.
 */
async function runInterruptible(options: Parameters<typeof runBench>[0]): ReturnType<typeof runBench> {
  const abort = new AbortController();
  // The first SIGINT/SIGTERM interrupts the run; with the handlers gone, a second one ends the process at once.
  const onSignal = (sig: NodeJS.Signals) => {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
    abort.abort(sig);
  };
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
  try {
    return await runBench({ ...options, signal: abort.signal });
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
  }
}

const bench: DefineCommand = (cmd, ctx) =>
  cmd
    .option('--plan <file>', 'the plan (see schemas/plan.schema.json; plans/default.json is quick)')
    .option('--seed <n>', "override the plan's seed (recorded in the receipt)")
    .option('--out <dir>', 'where receipts go (default: receipts)')
    .option('--resume <run>', 'continue an interrupted run (same --out); finished cases are not repeated')
    .option('--summary', 'also write a Markdown summary next to the receipt')
    .addHelpText(
      'after',
      `
Runs every block of the plan (each block: every backend once for one workload, in an
order shuffled from the seed; the plan must include full-copy), compares every other
case entry by entry with its block's full-copy case (the oracle), checks the workload's
expectation, the unchanged base, a sibling session of the same backend and cleanup,
and writes a schema-validated, path-free receipt to DIR/<plan>-<run>.json with the
commit it ran at (and whether the checkout was clean and stayed so). Backends this
host cannot run are recorded as unavailable with their reason and skipped; cases
stopped by the registry, credentials or the network are recorded as environment.
With --json it prints the receipt path and summary.

Exit status: 0 when no case mismatched, failed or timed out, 1 otherwise (the
receipt is written either way), 2 on bad usage, 130 when interrupted (resumable).

Examples:
  pdb-env bench --plan plans/default.json --out receipts/local --summary
  PDB_ENV_BENCH_STORE=/mnt/pdb-btrfs npm run proof`,
    )
    .action(async (_o, command) => {
      const o = command.optsWithGlobals();
      if (!o.plan && !o.resume)
        throw new PdbError('E_USAGE', 'bench needs --plan FILE (or --resume RUN)', { hint: 'pdb-env bench --plan plans/default.json' });
      const seed = parseSeed(o.seed);
      const workloads = WORKLOADS as Record<string, Workload>;
      const { receiptPath, summaryPath, receipt } = await runInterruptible({
        plan: o.plan ? loadPlan(o.plan, workloads).plan : undefined,
        seed,
        outDir: resolve(o.out ?? 'receipts'),
        resume: o.resume,
        summary: o.summary === true,
        storeParent: o.store,
        workloads,
        // Progress goes to stderr, so it shows with --json too (stdout stays one JSON document).
        progress: createProgress(),
      });
      const show = (p: string) => relative(process.cwd(), p) || p;
      const s = receipt.summary;
      const unavailable = receipt.backends.filter((b) => !b.available).map((b) => `${b.name} (${b.reason})`);
      emit(
        o.json === true,
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
            `run ${receipt.runId}, seed ${receipt.seed}: ${s.planned} case slots, ${s.ok} ok, ${s.mismatch} mismatch, ${s.failed} failed, ${s.environment} environment, ${s.timeout} timeout, ${s.unavailable} unavailable (a backend or a lane this host cannot run)`,
            `oracle (each case vs its block's full-copy case): ${s.oracleChecked} checked, ${s.oracleMismatches} mismatch(es), ${s.oracleNotEvaluated} not evaluated; harness overhead median ${s.overheadShareMedian === null ? '-' : `${(s.overheadShareMedian * 100).toFixed(1)} %`}`,
            `provenance: ${receipt.provenance.commit ? `${receipt.provenance.commit.slice(0, 12)}${receipt.provenance.dirty ? ' (DIRTY)' : ''}${receipt.provenance.changedDuringRun ? ' (CHANGED during the run)' : ''}` : 'not a git checkout'}`,
            `unavailable: ${unavailable.join(', ') || 'none'}`,
          ].join('\n'),
      );
      ctx.exitCode = s.mismatch + s.failed + s.timeout > 0 ? 1 : 0;
    });

export const commands: Record<string, DefineCommand> = { bench };
