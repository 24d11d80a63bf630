import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { hasSchema, validateAgainst, formatIssues } from '../../model/schemas.js';
import { inconsistencyError, receiptInconsistencies } from '../../harness/receipt/consistency.js';
import { openReceipt, signersOf, type OpenedReceipt } from '../../harness/receipt/envelope.js';
import { measurementPrint, readTrustedSigners, repeatOf, trustOf, type TrustedSigners } from '../../harness/receipt/admission.js';
import { timesBounded, UNBOUNDED_UNSIGNED } from './validate.js';
import type { Receipt } from '../../harness/receipt/receipt-types.js';
import { PdbError } from '../../model/errors.js';
import { analyzeReceipts } from '../../reports/analysis/analyze.js';
import { evaluateGate } from '../../reports/gate/gate.js';
import { type Policy } from '../../reports/gate/gate-policy.js';
import { validatePolicy } from '../../reports/gate/gate-policy.js';
import { renderHtml, renderJson, renderMarkdown } from '../../reports/render/render.js';
import type { CommandDefinitions, DefineCommand } from '../context.js';
import { emit } from '../output.js';

/** A name for messages: relative to the working directory, so nothing absolute is printed. */
function shown(p: string): string {
  const r = relative(process.cwd(), p);
  return r === '' ? '.' : r.startsWith('..') ? p.split(/[\\/]/).slice(-2).join('/') : r;
}

async function collectJson(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await collectJson(p)));
    else if (e.isFile() && e.name.endsWith('.json')) out.push(p);
  }
  return out;
}

/** Who signed one receipt: the keyids whose signatures verify, or 'unsigned' (a receipt written before signing). */
export interface ReceiptSigners {
  runId: string;
  file: string;
  signers: string[] | 'unsigned';
}

export interface LoadedReceipts {
  receipts: Receipt[];
  /** Who signed each receipt, in the order of `receipts`. */
  signers: ReceiptSigners[];
  /** JSON files inside directories that are not receipts (skipped, listed). */
  skipped: string[];
  /** Receipts read twice (same run id, same content), counted once. */
  duplicates: string[];
  /** Receipts that repeat another's measurements under another name or run id (E_RECEIPT_DUPLICATE): shown, never counted. */
  repeats: { file: string; runId: string; of: string; reason: string }[];
}

/**
 * Read receipts from files and directories (recursively, *.json). A named file must be a valid
 * receipt; inside a directory other JSON documents (plans, summaries) are skipped and listed.
 */
export async function loadReceipts(args: string[]): Promise<LoadedReceipts> {
  const receipts = new Map<string, { receipt: Receipt; json: string; from: string; signers: ReceiptSigners['signers'] }>();
  const skipped: string[] = [];
  const duplicates: string[] = [];
  for (const arg of args) {
    const abs = resolve(arg);
    let st;
    try {
      st = await stat(abs);
    } catch (err) {
      throw new PdbError('E_RECEIPT_NOT_FOUND', `receipt path ${arg} does not exist`, {
        cause: err,
        hint: 'Pass receipt files or directories holding *.json receipts.',
      });
    }
    const files = st.isDirectory() ? await collectJson(abs) : [abs];
    for (const file of files) {
      const text = await readFile(file, 'utf8');
      let opened: OpenedReceipt;
      try {
        opened = openReceipt(JSON.parse(text));
      } catch (err) {
        throw new PdbError('E_SCHEMA_INVALID', `${shown(file)} is not valid JSON: ${(err as Error).message}`, { cause: err });
      }
      const doc = opened.document;
      const isReceipt = !!doc && typeof doc === 'object' && (doc as { kind?: unknown }).kind === 'pdb-env-receipt';
      if (!isReceipt) {
        if (st.isDirectory()) {
          skipped.push(shown(file));
          continue;
        }
        throw new PdbError('E_SCHEMA_INVALID', `${shown(file)} is not a pdb-env receipt (no "kind": "pdb-env-receipt")`, {
          hint: 'pdb-env bench writes receipts under receipts/.',
        });
      }
      if (opened.problems.length) throw signatureError(shown(file), opened.problems);
      if (hasSchema('receipt')) {
        const issues = validateAgainst('receipt', doc);
        if (issues.length > 0) {
          throw new PdbError('E_SCHEMA_INVALID', `${shown(file)} does not match schemas/receipt.schema.json: ${formatIssues(issues)}`, {
            hint: 'Reports read only schema-valid receipts; regenerate it with pdb-env bench or fix the listed fields.',
          });
        }
      }
      const receipt = doc as Receipt;
      // Version 1 receipts have no derived fields of this shape; version 2 and 3 are held to theirs.
      if ((receipt as { schemaVersion: number }).schemaVersion >= 2) {
        const wrong = receiptInconsistencies(receipt, { signed: opened.signatures !== null });
        if (wrong.length) throw inconsistencyError(shown(file), wrong);
      }
      const seen = receipts.get(receipt.runId);
      if (seen) {
        if (seen.json !== JSON.stringify(doc)) {
          throw new PdbError('E_SCHEMA_INVALID', `${shown(file)} and ${seen.from} share run id ${receipt.runId} but differ`, {
            hint: 'Each run id must name one receipt; remove the stale copy.',
          });
        }
        duplicates.push(shown(file));
        continue;
      }
      receipts.set(receipt.runId, { receipt, json: JSON.stringify(doc), from: shown(file), signers: signersOf(opened) });
    }
  }
  const { kept, repeats } = dropRepeats([...receipts.values()]);
  return {
    receipts: kept.map((x) => x.receipt),
    signers: kept.map((x) => ({ runId: x.receipt.runId, file: x.from, signers: x.signers })),
    skipped,
    duplicates,
    repeats,
  };
}

/**
 * Receipts that repeat another's measurements are dropped whatever their order on the command line:
 * the earliest run (by start, then run id) is the one kept, each dropped one named with it.
 */
function dropRepeats<T extends { receipt: Receipt; from: string }>(all: T[]): { kept: T[]; repeats: LoadedReceipts['repeats'] } {
  const ordered = [...all].sort(
    (a, b) => a.receipt.startedAt.localeCompare(b.receipt.startedAt) || a.receipt.runId.localeCompare(b.receipt.runId),
  );
  const kept: T[] = [];
  const spans: Parameters<typeof repeatOf>[1] = [];
  const repeats: LoadedReceipts['repeats'] = [];
  for (const x of ordered) {
    const span = {
      runId: x.receipt.runId,
      hostId: x.receipt.host.hostId,
      startedAt: x.receipt.startedAt,
      finishedAt: x.receipt.finishedAt,
      prints: measurementPrint(x.receipt.cases),
    };
    const of = repeatOf(span, spans);
    if (of) repeats.push({ file: x.from, runId: x.receipt.runId, of: of.runId, reason: of.why });
    else {
      spans.push(span);
      kept.push(x);
    }
  }
  return { kept, repeats };
}

/** The report's lines about each receipt: who signed it, whether a gate counts it, and what was read twice or skipped. */
function receiptLines(admissions: Admission[], loaded: LoadedReceipts): string[] {
  const lines = admissions.map(
    (a) =>
      `  ${a.file}: ${a.signers === 'unsigned' ? 'unsigned' : `signed by ${a.signers.join(', ')}${a.trustedHost ? ` (trusted: ${a.trustedHost})` : ''}`}${a.counted ? '' : ` - not counted, ${a.code}: ${a.reason}`}`,
  );
  const unsignedIn = admissions.filter((a) => a.counted && a.signers === 'unsigned');
  if (unsignedIn.length) lines.push(`admitted unsigned: ${unsignedIn.map((a) => a.file).join(', ')}`);
  if (loaded.duplicates.length) lines.push(`counted once (same run id): ${loaded.duplicates.join(', ')}`);
  for (const r of loaded.repeats) lines.push(`not counted, E_RECEIPT_DUPLICATE: ${r.file} repeats ${r.of}: ${r.reason}`);
  if (loaded.skipped.length) lines.push(`skipped (not receipts): ${loaded.skipped.join(', ')}`);
  return lines;
}

/** How each receipt stands for a gate: counted, or left out with a typed reason (shown, never counted). */
export interface Admission {
  runId: string;
  file: string;
  signers: string[] | 'unsigned';
  /** The trusted signer's host label, when a trusted key signed it. */
  trustedHost: string | null;
  counted: boolean;
  /** The code and words of why it is not counted; null when counted. */
  code: string | null;
  reason: string | null;
}

/**
 * Which loaded receipts a gate counts. An unsigned receipt whose phases record no start cannot have
 * its overhead bounded, so no gate counts it; under requireSigned only receipts a trusted, unrevoked
 * key signed for its own host count. Every other receipt is counted, and an unsigned one is named so.
 */
export function admit(loaded: LoadedReceipts, trusted: TrustedSigners | null, requireSigned: boolean): Admission[] {
  return loaded.receipts.map((r, i) => {
    const s = loaded.signers[i]!;
    const trust = trusted ? trustOf(s.signers, r.host, trusted) : null;
    const base = { runId: r.runId, file: s.file, signers: s.signers, trustedHost: trust?.status === 'trusted' ? trust.signer.host : null };
    if (s.signers === 'unsigned' && !timesBounded(r))
      return { ...base, counted: false, code: 'E_RECEIPT_UNSIGNED', reason: UNBOUNDED_UNSIGNED };
    if (requireSigned && trust && trust.status === 'refused') return { ...base, counted: false, code: trust.code, reason: trust.reason };
    return { ...base, counted: true, code: null, reason: null };
  });
}

/** Write report.md (with its charts), report.html and report.json under `out`; the names written, for messages. */
async function writeReport(input: Parameters<typeof renderJson>[0], out: string, inlineSvg: boolean): Promise<string[]> {
  const md = renderMarkdown(input, { charts: inlineSvg ? 'inline' : 'files' });
  const files: Record<string, string> = {
    'report.md': md.markdown,
    'report.html': renderHtml(input),
    'report.json': renderJson(input),
    ...md.files,
  };
  const written: string[] = [];
  for (const [name, text] of Object.entries(files)) {
    await writeAtomic(join(out, name), text);
    written.push(shown(join(out, name)));
  }
  return written;
}

/** Each receipt's admission, by --signers or the requireSigned policy's own signers, and the gate's exclusions from them. */
function admissionsFor(loaded: LoadedReceipts, policy: Policy | null, policyFile?: string, signersFile?: string) {
  const trusted = signersFile
    ? readTrustedSigners(resolve(signersFile), signersFile)
    : policy?.requireSigned
      ? policySigners(policy, policyFile!)
      : null;
  const admissions = admit(loaded, trusted, policy?.requireSigned === true);
  const excluded = admissions.filter((a) => !a.counted).map((a) => ({ runId: a.runId, reason: `${a.code}: ${a.reason}` }));
  return { admissions, excluded };
}

/** The trusted signers a policy names: its trustedSigners (default signers.json), beside the policy file. */
export function policySigners(policy: Policy, policyFile: string): TrustedSigners {
  const file = resolve(dirname(resolve(policyFile)), policy.trustedSigners ?? 'signers.json');
  return readTrustedSigners(file, shown(file));
}

/** E_RECEIPT_SIGNATURE: the receipt's envelope does not hold (a signature fails, or its unsigned copy differs). */
export function signatureError(what: string, problems: string[]): PdbError {
  return new PdbError('E_RECEIPT_SIGNATURE', `${what} fails its signature: ${problems.slice(0, 3).join('; ')}`, {
    hint: 'A signed receipt is read only as it was written; one edited since fails. Use the receipt as it was written, or run the benchmark again.',
  });
}

/** E_RECEIPT_SIGNER for every receipt not signed by a key the policy names (an unsigned one included). */
export function requireSigners(signers: ReceiptSigners[], allowed: readonly string[], policyName: string): void {
  const refused = signers.filter((s) => s.signers === 'unsigned' || !s.signers.some((k) => allowed.includes(k)));
  if (refused.length === 0) return;
  const who = (s: ReceiptSigners) =>
    s.signers === 'unsigned' ? 'unsigned' : `signed by ${s.signers.map((k) => k.slice(0, 16)).join(', ') || 'no valid key'}`;
  throw new PdbError(
    'E_RECEIPT_SIGNER',
    `policy ${policyName} takes receipts signed by ${allowed.map((k) => k.slice(0, 16)).join(', ')} only: ${refused
      .slice(0, 5)
      .map((s) => `${s.file} is ${who(s)}`)
      .join('; ')}${refused.length > 5 ? ` (and ${refused.length - 5} more)` : ''}`,
    {
      hint: "pdb-env keys shows the keyid this host signs with; leave out the receipts of other signers, or name their keys in the policy's signers.",
    },
  );
}

export async function loadPolicy(file: string): Promise<Policy> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new PdbError('E_POLICY_INVALID', `policy ${file} cannot be read`, {
      cause: err,
      hint: 'policies/*.json are the shipped policies.',
    });
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new PdbError('E_POLICY_INVALID', `policy ${shown(resolve(file))} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  return validatePolicy(doc, `policy ${shown(resolve(file))}`);
}

async function writeAtomic(file: string, data: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, data);
  await rename(tmp, file);
}

const report: DefineCommand<'report'> = (cmd) =>
  cmd
    .argument('<receipt...>', 'receipt files, or directories searched for *.json receipts')
    .addHelpText(
      'after',
      `
Reads receipts (schema versions 1 to 4), keeps every testbed (host + store filesystem)
and every fixture apart, and answers first, per testbed and fixture: which backends were
correct there and the fastest correct one (ratio to full-copy and CI, or "too few
blocks to tell"). Then the policy verdict, and per backend x workload x fixture x phase
x testbed: counts, median with an order-statistic 95% CI, p95 (n >= 20), min, max, IQR,
CV; the paired per-block ratio to full-copy with a seeded bootstrap CI and a sign-flip
permutation p-value; failure, mismatch and clone-fallback rates with 95% upper bounds
(environment cases never count); and diagnostics. Receipts of schema version 1, or of
a run at a dirty or changing commit, are shown but never gate evidence. --json prints
the report JSON (numbers and gate) on stdout.

Example:
  pdb-env report receipts/ --policy policies/reflink-linux.json --out reports/current`,
    )
    .action(async (paths, _o, command) => {
      const o = command.optsWithGlobals();
      const json = o.json === true;
      const seed = o.seed === undefined ? undefined : Number(o.seed);
      if (seed !== undefined && !(Number.isInteger(seed) && seed >= 0 && seed < 2 ** 32)) {
        throw new PdbError('E_USAGE', `--seed must be an integer from 0 to 2^32 - 1, got ${o.seed}`);
      }
      const policy = o.policy ? await loadPolicy(o.policy) : null;
      const loaded = await loadReceipts(paths);
      if (policy?.signers) requireSigners(loaded.signers, policy.signers, policy.name);
      const trusted = o.signers
        ? readTrustedSigners(resolve(o.signers), o.signers)
        : policy?.requireSigned
          ? policySigners(policy, o.policy!)
          : null;
      const admissions = admit(loaded, trusted, policy?.requireSigned === true);
      const excluded = admissions.filter((a) => !a.counted).map((a) => ({ runId: a.runId, reason: `${a.code}: ${a.reason}` }));
      if (loaded.receipts.length === 0) {
        throw new PdbError('E_RECEIPT_NOT_FOUND', `no receipts found in ${paths.join(', ')}`, {
          hint: 'npm run proof or pdb-env bench --plan FILE writes receipts under receipts/.',
        });
      }
      const data = analyzeReceipts(loaded.receipts, { baseline: policy?.baseline, alpha: policy?.alpha, seed });
      const gate = policy ? evaluateGate(loaded.receipts, policy, { seed, analysis: data, excluded }) : null;
      const signers = Object.fromEntries(loaded.signers.map((x) => [x.runId, x.signers]));
      const admission = Object.fromEntries(admissions.map((a) => [a.runId, a]));
      const input = { data, gate, policy, signers, admission, repeats: loaded.repeats };
      const written =
        o.out !== undefined || !json ? await writeReport(input, resolve(o.out ?? join('reports', 'out')), o.inlineSvg === true) : [];
      if (json) {
        process.stdout.write(renderJson(input));
        return;
      }
      const lines: string[] = [];
      lines.push(
        `${loaded.receipts.length} receipt(s), ${data.testbeds.length} testbed(s): ${data.testbeds.map((t) => `${t.id} ${t.os}/${t.storeFs}${t.synthetic ? ' (synthetic)' : ''}`).join(', ')}`,
      );
      lines.push(...receiptLines(admissions, loaded));
      if (gate) {
        lines.push(`${gate.verdict}: ${gate.candidate} under policy ${gate.policy}`);
        for (const f of gate.findings.filter((x) => x.status !== 'met'))
          lines.push(`  ${f.status.toUpperCase().padEnd(6)} ${f.criterion}: ${f.message}`);
      }
      lines.push(
        `wrote ${written.filter((f) => !f.includes('charts')).join(', ')} (+ ${written.filter((f) => f.includes('charts')).length} chart file(s))`,
      );
      emit(false, null, () => lines.join('\n'));
    });

export const commands: CommandDefinitions<'report'> = { report };
