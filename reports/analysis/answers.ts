// The question a report answers first, per testbed and fixture: which backends were correct here,
// and which correct one was fastest (whole-case time against the baseline, with its ratio and CI).
// A backend is correct here when it was attempted, no case of it mismatched, failed or timed out,
// and (unless it is the baseline, the oracle itself) at least one oracle comparison was evaluated.
import type { ReportCase } from '../receipts/receipts.js';
import { MIN_BLOCKS_TO_TELL, TOTAL_PHASE, type Answer, type BackendStanding, type ReportData, type Testbed } from './report-data.js';

type Rows = Pick<ReportData, 'cells' | 'comparisons' | 'rates'>;

/** The cases of one backend in the answer's testbed and fixture. */
export type CasesOf = (backend: string) => ReportCase[];

/** The failure codes of cases that ended with `outcome`, most frequent first. */
function codes(cases: ReportCase[], outcome: string): string {
  const n = new Map<string, number>();
  for (const c of cases) if (c.outcome === outcome) n.set(c.failure?.code ?? '?', (n.get(c.failure?.code ?? '?') ?? 0) + 1);
  return [...n]
    .sort((a, b) => b[1] - a[1])
    .map(([code]) => code)
    .join(', ');
}

function standing(
  rows: Rows,
  testbed: Testbed,
  key: { backend: string; workload: string; fixture: string },
  baseline: string,
  cases: ReportCase[],
): BackendStanding | null {
  const { backend, workload, fixture } = key;
  const at = (r: { testbed: string; backend: string; workload: string; fixture: string }) =>
    r.testbed === testbed.id && r.backend === backend && r.workload === workload && r.fixture === fixture;
  const total = rows.cells.find((c) => at(c) && c.phase === TOTAL_PHASE);
  const rate = (kind: string) => rows.rates.find((r) => at(r) && r.kind === kind)?.bound;
  if (!total) return null;
  const attempted = rate('failure')?.trials ?? 0;
  if (attempted === 0) {
    const env = codes(cases, 'environment');
    if (env) return { backend, status: 'not-judged', attempted, detail: `stopped by the environment only (${env})` };
    const why = testbed.unavailable.find((u) => u.backend === backend)?.reason ?? codes(cases, 'unavailable');
    return { backend, status: 'unavailable', attempted, detail: why || 'cannot run here' };
  }
  const failures = rate('failure')?.events ?? 0;
  const mismatch = rate('mismatch');
  const bad = [
    mismatch?.events ? `${mismatch.events} mismatch` : '',
    failures ? `${failures} failed or timed out` : '',
    total.environment ? `${total.environment} environment` : '',
  ].filter(Boolean);
  if ((mismatch?.events ?? 0) + failures > 0) return { backend, status: 'incorrect', attempted, detail: bad.join(', ') };
  const env = total.environment ? ` (+${total.environment} environment)` : '';
  if (backend !== baseline && (mismatch?.trials ?? 0) === 0)
    return { backend, status: 'not-judged', attempted, detail: `no oracle comparison could be evaluated${env}` };
  const checked = backend === baseline ? 'the oracle' : `${mismatch!.trials} oracle comparison(s) passed`;
  return { backend, status: 'correct', attempted, detail: `${attempted} attempted, ${checked}${env}` };
}

/** The answer for one testbed and fixture; null when nothing ran there. */
export function answerFor(
  baseline: string,
  testbed: Testbed,
  at: { workload: string; fixture: string },
  rows: Rows,
  backends: string[],
  casesOf: CasesOf,
): Answer | null {
  const { workload, fixture } = at;
  const standings = backends
    .map((b) => standing(rows, testbed, { backend: b, workload, fixture }, baseline, casesOf(b)))
    .filter((s): s is BackendStanding => s !== null);
  if (standings.length === 0) return null;
  const correct = standings.filter((s) => s.status === 'correct').map((s) => s.backend);
  const cmp = (b: string) =>
    rows.comparisons.find(
      (c) => c.testbed === testbed.id && c.backend === b && c.workload === workload && c.fixture === fixture && c.phase === TOTAL_PHASE,
    );
  const faster = correct
    .filter((b) => b !== baseline)
    .map((b) => cmp(b))
    .filter((c) => c !== undefined && c.verdict === 'faster')
    .sort((a, b) => a!.medianRatio! - b!.medianRatio!);
  let fastest: Answer['fastest'] = null;
  if (faster[0]) {
    const c = faster[0];
    fastest = { backend: c.backend, medianRatio: c.medianRatio, ci: c.ci, blocks: c.blocks, words: `faster than ${baseline}` };
  } else if (standings.every((s) => s.status === 'unavailable' || s.status === 'not-judged')) {
    fastest = null;
  } else if (correct.includes(baseline)) {
    const others = correct.filter((b) => b !== baseline).map((b) => ({ b, c: cmp(b) }));
    const few = others.filter((o) => (o.c?.blocks ?? 0) < MIN_BLOCKS_TO_TELL).map((o) => o.b);
    const words =
      others.length === 0
        ? 'the only correct backend here'
        : few.length > 0
          ? `too few blocks to tell whether ${few.join(', ')} ${few.length > 1 ? 'are' : 'is'} faster`
          : 'no correct backend was shown faster';
    fastest = { backend: baseline, medianRatio: 1, ci: null, blocks: Math.max(0, ...others.map((o) => o.c?.blocks ?? 0)), words };
  }
  return { testbed: testbed.id, workload, fixture, backends: standings, fastest, compared: comparedWords(backends.flatMap(casesOf)) };
}

const SCOPE_WORDS: Record<string, string> = { source: 'the source files', installed: 'the installed tree', build: 'the build output' };

/** What the oracle compared for a fixture, in words: the scopes its checks recorded, each read from the bytes. */
export function comparedWords(cases: ReportCase[]): string {
  const checks = cases.flatMap((c) => c.checks.filter((k) => k.name === 'oracle' && k.evaluated));
  if (checks.length === 0) return 'nothing (no oracle comparison was evaluated)';
  const scopes = new Set<string>(checks.flatMap((k) => k.scope ?? []));
  if (scopes.size === 0) return 'the source files as each checkpoint recorded them (not re-read from their bytes)';
  const words = ['source', 'installed', 'build'].filter((x) => scopes.has(x)).map((x) => SCOPE_WORDS[x]!);
  const all = checks.every(
    (k) => k.files && k.filesHashed && k.filesHashed.case === k.files.case && k.filesHashed.reference === k.files.reference,
  );
  return `${words.join(', ')}${all ? ', every file hashed from its bytes on both sides' : ' (not every file was hashed)'}`;
}
