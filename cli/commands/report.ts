import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { hasSchema, validateAgainst, formatIssues } from '../../model/schemas.js';
import { inconsistencyError, receiptInconsistencies } from '../../harness/receipt/consistency.js';
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

export interface LoadedReceipts {
  receipts: Receipt[];
  /** JSON files inside directories that are not receipts (skipped, listed). */
  skipped: string[];
  /** Receipts read twice (same run id, same content), counted once. */
  duplicates: string[];
}

/**
 * Read receipts from files and directories (recursively, *.json). A named file must be a valid
 * receipt; inside a directory other JSON documents (plans, summaries) are skipped and listed.
 */
export async function loadReceipts(args: string[]): Promise<LoadedReceipts> {
  const receipts = new Map<string, { receipt: Receipt; text: string; from: string }>();
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
      let doc: unknown;
      try {
        doc = JSON.parse(text);
      } catch (err) {
        throw new PdbError('E_SCHEMA_INVALID', `${shown(file)} is not valid JSON: ${(err as Error).message}`, { cause: err });
      }
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
        const wrong = receiptInconsistencies(receipt);
        if (wrong.length) throw inconsistencyError(shown(file), wrong);
      }
      const seen = receipts.get(receipt.runId);
      if (seen) {
        if (seen.text.trim() !== text.trim() && JSON.stringify(JSON.parse(seen.text)) !== JSON.stringify(doc)) {
          throw new PdbError('E_SCHEMA_INVALID', `${shown(file)} and ${seen.from} share run id ${receipt.runId} but differ`, {
            hint: 'Each run id must name one receipt; remove the stale copy.',
          });
        }
        duplicates.push(shown(file));
        continue;
      }
      receipts.set(receipt.runId, { receipt, text, from: shown(file) });
    }
  }
  return { receipts: [...receipts.values()].map((x) => x.receipt), skipped, duplicates };
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
Reads receipts (schema version 1 or 2), keeps every testbed (host + store filesystem)
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
      if (loaded.receipts.length === 0) {
        throw new PdbError('E_RECEIPT_NOT_FOUND', `no receipts found in ${paths.join(', ')}`, {
          hint: 'npm run proof or pdb-env bench --plan FILE writes receipts under receipts/.',
        });
      }
      const data = analyzeReceipts(loaded.receipts, { baseline: policy?.baseline, alpha: policy?.alpha, seed });
      const gate = policy ? evaluateGate(loaded.receipts, policy, { seed, analysis: data }) : null;
      const input = { data, gate, policy };
      const written: string[] = [];
      if (o.out !== undefined || !json) {
        const out = resolve(o.out ?? join('reports', 'out'));
        const md = renderMarkdown(input, { charts: o.inlineSvg === true ? 'inline' : 'files' });
        const files: Record<string, string> = {
          'report.md': md.markdown,
          'report.html': renderHtml(input),
          'report.json': renderJson(input),
          ...md.files,
        };
        for (const [name, text] of Object.entries(files)) {
          await writeAtomic(join(out, name), text);
          written.push(shown(join(out, name)));
        }
      }
      if (json) {
        process.stdout.write(renderJson(input));
        return;
      }
      const lines: string[] = [];
      lines.push(
        `${loaded.receipts.length} receipt(s), ${data.testbeds.length} testbed(s): ${data.testbeds.map((t) => `${t.id} ${t.os}/${t.storeFs}${t.synthetic ? ' (synthetic)' : ''}`).join(', ')}`,
      );
      if (loaded.duplicates.length) lines.push(`counted once (same run id): ${loaded.duplicates.join(', ')}`);
      if (loaded.skipped.length) lines.push(`skipped (not receipts): ${loaded.skipped.join(', ')}`);
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
