// Every figure docs/figures.json lists is computed again from its receipt, the way the text says
// (median of per-round ratios, ratio of medians, a recorded field), formatted as quoted, and must
// be both what the receipt gives and what the document's line says. The figures file is the one
// place a re-run updates: point a figure at the new receipt and quote what it gives.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readReceiptFile } from '../harness/receipt/envelope.js';
import { computeFigure, formatFigure, quotingLine, row, type BenchRowDoc, type Compute, type Figure } from './helpers/figures.js';
import { REPO_ROOT } from './helpers/index.js';

const FIGURES = JSON.parse(readFileSync(join(REPO_ROOT, 'docs', 'figures.json'), 'utf8')) as { figures: Figure[] };

test('the figures file is well formed: unique ids, each figure with its receipt, method and the line that quotes it', () => {
  assert.ok(FIGURES.figures.length >= 20, `only ${FIGURES.figures.length} figures`);
  assert.is(new Set(FIGURES.figures.map((f) => f.id)).size, FIGURES.figures.length, 'ids are unique');
  for (const f of FIGURES.figures) {
    assert.ok(f.method && f.receipt && f.line && f.quoted, f.id);
    assert.ok(/^(README\.md|docs\/[\w-]+\.md)$/.test(f.doc), `${f.id}: ${f.doc}`);
  }
});

test('every quoted figure is what its receipt gives, computed the way the text says', () => {
  const wrong: string[] = [];
  for (const f of FIGURES.figures) {
    const doc = readReceiptFile(join(REPO_ROOT, f.receipt)).document;
    const got = formatFigure(computeFigure(doc, f.compute), f.format);
    if (got !== f.quoted) wrong.push(`${f.id}: quoted ${f.quoted}, ${f.receipt} gives ${got} (${f.method})`);
  }
  assert.equal(wrong, [], `figures that disagree with their receipts:\n${wrong.join('\n')}`);
});

test('every figure is quoted on the line the figures file names', () => {
  const missing: string[] = [];
  for (const f of FIGURES.figures) {
    const line = quotingLine(readFileSync(join(REPO_ROOT, f.doc), 'utf8'), f);
    if (line === null) missing.push(`${f.id}: no line of ${f.doc} holds "${f.line}"${f.after ? ` after "${f.after}"` : ''}`);
    else if (!line.includes(f.quoted))
      missing.push(`${f.id}: the line of ${f.doc} holding "${f.line}" does not quote ${f.quoted}: ${line}`);
  }
  assert.equal(missing, [], missing.join('\n'));
});

test('the check can fail: a changed quote, a changed method, a changed sample', () => {
  const cow = readReceiptFile(join(REPO_ROOT, 'receipts', 'bench', 'bench-cow-20261202T082927Z-aab7b6.json')).document as {
    results: BenchRowDoc[];
  };
  const perRound: Compute = { kind: 'per-round-ratio', row: ['xfs', 'reflink'], baseline: ['xfs', 'cp --reflink=always'] };
  const fmt = { decimals: 2, suffix: 'x' };
  assert.is(formatFigure(computeFigure(cow, perRound), fmt), '0.87x');
  assert.is(
    formatFigure(computeFigure(cow, { ...perRound, kind: 'ratio-of-medians' } as Compute), fmt),
    '1.00x',
    'the other method gives another figure',
  );
  const edited = structuredClone(cow);
  row(edited, ['xfs', 'reflink']).samplesMs = row(edited, ['xfs', 'reflink']).samplesMs.map((x) => x * 1.2);
  assert.is.not(formatFigure(computeFigure(edited, perRound), fmt), '0.87x');
});

test.run();
