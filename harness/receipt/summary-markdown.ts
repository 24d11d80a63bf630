// A short Markdown summary next to a receipt: medians per backend x workload x phase (measured,
// non-warm-up cases that ended ok), check results and failures. A pure function of the receipt.
import { median } from 'simple-statistics';
import type { CaseRecord, Receipt } from './receipt-types.js';
import { EXPECTED_MISMATCH_WHY, isExpectedMismatch, partialBackends } from './expected-mismatch.js';

const fmtMs = (ms: number): string =>
  ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : ms >= 100 ? `${Math.round(ms)} ms` : `${ms.toFixed(1)} ms`;
const fmtBytes = (b: number): string =>
  Math.abs(b) >= 1024 * 1024 ? `${(b / 1024 / 1024).toFixed(1)} MiB` : Math.abs(b) >= 1024 ? `${(b / 1024).toFixed(0)} KiB` : `${b} B`;

function cell(values: number[], fmt: (n: number) => string): string {
  return values.length ? fmt(median(values)) : '-';
}

export function receiptMarkdown(receipt: Receipt): string {
  const backends = receipt.backends.filter((b) => b.available).map((b) => b.name);
  const workloads = [...new Set(receipt.cases.map((c) => c.workload))];
  return [
    ...overview(receipt),
    ...unavailableBackends(receipt),
    ...workloads.flatMap((w) => [...durationTable(receipt, w, backends), ...checkTable(receipt, w, backends)]),
    ...failures(receipt),
    'Block orders (seeded shuffle):',
    '',
    ...receipt.blocks.map((b) => `- block ${b.index}${b.warmup ? ' (warm-up)' : ''}, ${b.workload}: ${b.order.join(', ')}`),
    '',
  ].join('\n');
}

function provenanceLine(p: Receipt['provenance']): string {
  if (p.commit === null) return 'provenance unknown (not a git checkout)';
  const state = [p.dirty ? 'DIRTY at the start' : p.dirty === false ? 'clean at the start' : 'state unknown'];
  if (p.changedDuringRun) state.push('CHANGED during the run');
  else if (p.changedDuringRun === false) state.push('unchanged until the end');
  return `commit ${p.commit.slice(0, 12)}, ${state.join(', ')}`;
}

function overview(receipt: Receipt): string[] {
  const lines: string[] = [];
  const s = receipt.summary;
  const h = receipt.host;
  lines.push(`# pdb-env bench: ${receipt.planName} (${receipt.runId})`, '');
  lines.push(
    `Seed ${receipt.seed}; plan ${receipt.planDigest.slice(0, 19)}; tool ${receipt.tool.version}; ${provenanceLine(receipt.provenance)}.`,
  );
  lines.push(
    `Host: ${h.os} ${h.kernel} ${h.arch}, ${h.cores} cores, ${fmtBytes(h.memoryBytes)}, store on ${h.storeFs.type}; host id ${h.hostId.slice(0, 12)} (${h.hostIdSource}); load average at the start ${h.loadAverage.map((x) => x.toFixed(2)).join(' / ')}.`,
    `Ran ${receipt.startedAt} to ${receipt.finishedAt}.`,
    '',
  );
  lines.push(
    `Cases: ${s.planned} planned, ${s.planned - s.unavailable} ran (${s.ok} ok, ${s.mismatch} mismatch, ${s.failed} failed, ${s.environment} environment, ${s.timeout} timeout), ${s.unavailable} unavailable (a backend or a lane this host cannot run).`,
    `Oracle (each case against its block's full-copy case): ${s.oracleChecked} checked, ${s.oracleMismatches} mismatch(es), ${s.oracleNotEvaluated} not evaluated.`,
  );
  if (s.overheadShareMedian !== null)
    lines.push(
      `Harness overhead: median ${(s.overheadShareMedian * 100).toFixed(1)} % of case wall time (max ${((s.overheadShareMax ?? 0) * 100).toFixed(1)} %)${
        s.overheadByWorkload?.length
          ? `; by workload: ${s.overheadByWorkload.map((w) => `${w.workload} ${(w.shareMedian * 100).toFixed(1)} % (max ${(w.shareMax * 100).toFixed(1)} %)`).join(', ')}`
          : ''
      }.`,
    );
  lines.push('');
  return lines;
}

function unavailableBackends(receipt: Receipt): string[] {
  const unavailable = receipt.backends.filter((b) => !b.available);
  if (!unavailable.length) return [];
  return [
    '## Unavailable backends (skipped, not failures)',
    '',
    ...unavailable.map((b) => `- ${b.name}: ${b.reason ?? 'unavailable'}: ${b.detail}`),
    '',
  ];
}

/** Median durations per phase of workload `w` (measured cases that ended ok), one column per backend. */
function durationTable(receipt: Receipt, w: string, backends: string[]): string[] {
  const lines: string[] = [];
  const cases = receipt.cases.filter((c) => !c.warmup && c.workload === w);
  const phaseNames: string[] = [];
  for (const c of cases) for (const p of c.phases) if (!phaseNames.includes(p.name)) phaseNames.push(p.name);
  const ok = (b: string): CaseRecord[] => cases.filter((c) => c.backend === b && c.outcome === 'ok');
  const row = (label: string, values: (b: string) => number[], fmt: (n: number) => string) =>
    `| ${label} | ${backends.map((b) => cell(values(b), fmt)).join(' | ')} |`;
  lines.push(`## ${w}: median durations (measured cases that ended ok)`, '');
  lines.push(`| phase | ${backends.join(' | ')} |`);
  lines.push(`| --- | ${backends.map(() => '---:').join(' | ')} |`);
  lines.push(`| n (ok / all) | ${backends.map((b) => `${ok(b).length} / ${cases.filter((c) => c.backend === b).length}`).join(' | ')} |`);
  for (const p of phaseNames)
    lines.push(row(p, (b) => ok(b).flatMap((c) => c.phases.filter((x) => x.name === p).map((x) => x.durationMs)), fmtMs));
  lines.push(row('case wall', (b) => ok(b).map((c) => c.wallMs), fmtMs));
  lines.push(row('disk growth on create', (b) => ok(b).flatMap((c) => (c.diskBytes === null ? [] : [c.diskBytes])), fmtBytes));
  lines.push('');
  return lines;
}

/** Checks passed / run for workload `w` (all cases, warm-up included), one column per backend. */
function checkTable(receipt: Receipt, w: string, backends: string[]): string[] {
  const lines: string[] = [];
  const partial = partialBackends(receipt);
  lines.push(`Checks (passed / evaluated, all cases incl. warm-up):`, '');
  const checkNames: string[] = [];
  for (const c of receipt.cases.filter((x) => x.workload === w))
    for (const k of c.checks) if (!checkNames.includes(k.name)) checkNames.push(k.name);
  lines.push(`| check | ${backends.join(' | ')} |`);
  lines.push(`| --- | ${backends.map(() => '---:').join(' | ')} |`);
  for (const k of checkNames) {
    const counts = backends.map((b) => {
      const of = receipt.cases.filter((c) => c.workload === w && c.backend === b);
      const all = of.flatMap((c) => c.checks.filter((x) => x.name === k).map((x) => ({ ...x, expected: isExpectedMismatch(partial, c) })));
      const rs = all.filter((x) => x.evaluated);
      const passed = rs.filter((x) => x.passed).length;
      // Failed checks of an expected mismatch are said as such (the proof's rule), never as FAIL.
      const expected = rs.filter((x) => !x.passed && x.expected).length;
      const mark = passed + expected < rs.length ? ' **FAIL**' : expected ? ` (${expected} expected)` : '';
      const skipped = all.length - rs.length;
      const shown = rs.length ? `${passed} / ${rs.length}${mark}` : '-';
      return skipped ? `${shown} (${skipped} not evaluated)` : shown;
    });
    lines.push(`| ${k} | ${counts.join(' | ')} |`);
  }
  if (backends.some((b) => partial.has(b)))
    lines.push(
      `"expected": failed checks of a mismatch of ${backends.filter((b) => partial.has(b)).join(', ')}, expected: ${EXPECTED_MISMATCH_WHY}.`,
    );
  lines.push('');
  return lines;
}

function failures(receipt: Receipt): string[] {
  const bad = receipt.cases.filter((c) => c.outcome !== 'ok');
  if (!bad.length) return [];
  const partial = partialBackends(receipt);
  const more = (c: Receipt['cases'][number]) =>
    c.failures.length > 1
      ? ` (and ${c.failures.length - 1} more: ${c.failures
          .filter((f) => f !== c.failure && !(f.code === c.failure?.code && f.phase === c.failure?.phase))
          .map((f) => f.code)
          .join(', ')})`
      : '';
  return [
    '## Cases that did not end ok (every failure is in the receipt)',
    '',
    ...bad.map(
      (c) =>
        `- ${c.id} ${c.backend} x ${c.workload}: ${c.outcome}${isExpectedMismatch(partial, c) ? ` (expected: ${EXPECTED_MISMATCH_WHY})` : ''}, ${c.failure?.code ?? '?'} in ${c.failure?.phase ?? '?'}: ${c.failure?.message ?? ''}${more(c)}`,
    ),
    '',
  ];
}
