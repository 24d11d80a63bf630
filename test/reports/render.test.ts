import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { findPathIssues, pathFreeViolation } from '../../harness/path-free.js';
import type { Receipt } from '../../harness/receipt-types.js';
import { analyzeReceipts } from '../../reports/analyze.js';
import { buildDocument } from '../../reports/document.js';
import { evaluateGate } from '../../reports/gate.js';
import { validatePolicy } from '../../reports/policy.js';
import { renderHtml, renderJson, renderMarkdown } from '../../reports/render.js';
import { hasCommand, REPO_ROOT, skipTest, tempDir } from '../helpers.js';

const fixtures = ['synthetic-host-a.json', 'synthetic-host-b.json'].map(
  (f) => JSON.parse(readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'receipts', f), 'utf8')) as Receipt,
);
const policy = validatePolicy(JSON.parse(readFileSync(join(REPO_ROOT, 'policies', 'reflink-linux.json'), 'utf8')));
const input = { data: analyzeReceipts(fixtures), gate: evaluateGate(fixtures, policy), policy };

test('Markdown, HTML and JSON carry the same numbers', () => {
  const md = renderMarkdown(input).markdown;
  const html = renderHtml(input);
  const json = JSON.parse(renderJson(input));
  assert.is(json.kind, 'pdb-env-report');
  assert.is(json.gate.verdict, 'HOLD');
  assert.is(json.testbeds.length, 2);
  const cmp = input.data.comparisons.find((c) => c.testbed === 'T1' && c.phase === 'create')!;
  const shown = cmp.medianRatio!.toFixed(3);
  const ci = `[${cmp.ci!.lower.toFixed(3)}, ${cmp.ci!.upper.toFixed(3)}]`;
  for (const doc of [md, html]) {
    assert.ok(doc.includes(shown), `median ratio ${shown}`);
    assert.ok(doc.includes(ci), `CI ${ci}`);
    assert.ok(doc.includes('HOLD'));
    assert.ok(doc.includes('SYNTHETIC'));
  }
  assert.is(
    json.comparisons.find((c: { testbed: string; phase: string }) => c.testbed === 'T1' && c.phase === 'create').medianRatio,
    cmp.medianRatio,
  );
  // Same rendering twice: reports are deterministic.
  assert.is(renderHtml(input), html);
});

test('Markdown links chart files by default and inlines SVG on request', () => {
  const files = renderMarkdown(input);
  const names = Object.keys(files.files);
  assert.ok(names.length >= 4 && names.every((n) => /^charts\/[a-z0-9-]+\.svg$/.test(n)));
  for (const n of names) assert.ok(files.markdown.includes(`](${n})`), n);
  assert.not.ok(files.markdown.includes('<svg'));
  const inline = renderMarkdown(input, { charts: 'inline' });
  assert.equal(inline.files, {});
  assert.is(inline.markdown.split('<svg').length - 1, names.length);
});

test('HTML is self-contained: inline CSS and SVG, no script, no external resource', () => {
  const html = renderHtml(input);
  assert.ok(html.startsWith('<!doctype html>'));
  assert.ok(html.includes('<style>'));
  assert.not.ok(/<script|<link|<img|@import|url\(/i.test(html));
  // The only URL is the SVG namespace identifier.
  const urls = [...html.matchAll(/https?:\/\/[^\s"'<>]+/g)].map((m) => m[0]);
  assert.ok(
    urls.every((u) => u === 'http://www.w3.org/2000/svg'),
    urls.join(' '),
  );
  const blocks = buildDocument(input);
  assert.is(html.split('<svg').length - 1, blocks.filter((b) => b.kind === 'chart').length);
});

test('no absolute path, user or host name reaches a report', () => {
  const all = renderMarkdown(input, { charts: 'inline' }).markdown + renderHtml(input) + renderJson(input);
  assert.not.ok(/(^|[\s"'(])\/(home|root|tmp|Users|var|mnt|work)\//m.test(all));
  assert.not.ok(all.includes(REPO_ROOT));
  // The harness's own receipt scanner agrees for the JSON and the Markdown (HTML end tags look like paths to it).
  assert.equal(findPathIssues(JSON.parse(renderJson(input))), []);
  assert.is(pathFreeViolation(renderMarkdown(input, { charts: 'inline' }).markdown.replace(/<\/[a-z]+>/g, '')), null);
});

/** Blue-ish pixels: the reflink series colour (#2563eb) in dots, boxes and intervals; text is grey/black. */
function countChartPixels(pngFile: string): number {
  const png = PNG.sync.read(readFileSync(pngFile));
  let n = 0;
  for (let i = 0; i < png.data.length; i += 4) {
    const r = png.data[i]!;
    const g = png.data[i + 1]!;
    const b = png.data[i + 2]!;
    if (b > 150 && b - r > 60 && b - g > 30) n++;
  }
  return n;
}

function screenshot(htmlFile: string, pngFile: string, dir: string, height: number): void {
  const profile = join(dir, `profile-${Math.random().toString(36).slice(2)}`);
  mkdirSync(profile);
  execFileSync(
    'chromium',
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--hide-scrollbars',
      `--user-data-dir=${profile}`,
      `--screenshot=${pngFile}`,
      `--window-size=1200,${height}`,
      `file://${htmlFile}`,
    ],
    { stdio: 'ignore', timeout: 90_000 },
  );
}

test('headless Chromium draws the charts of the HTML report', () => {
  if (!hasCommand('chromium'))
    return skipTest('chromium screenshot', 'chromium', 'chromium is not installed (apt-get install -y chromium)');
  const t = tempDir('pdb-report-shot-');
  try {
    const html = renderHtml(input);
    const withCharts = join(t.dir, 'report.html');
    const withoutCharts = join(t.dir, 'blank.html');
    writeFileSync(withCharts, html);
    // The control: the same page with every chart replaced by an empty box of the same size.
    writeFileSync(withoutCharts, html.replace(/<svg[\s\S]*?<\/svg>/g, '<div style="width:760px;height:300px"></div>'));
    screenshot(withCharts, join(t.dir, 'report.png'), t.dir, 6000);
    screenshot(withoutCharts, join(t.dir, 'blank.png'), t.dir, 6000);
    const drawn = countChartPixels(join(t.dir, 'report.png'));
    const control = countChartPixels(join(t.dir, 'blank.png'));
    assert.ok(control < 50, `control page has ${control} chart-coloured pixels`);
    assert.ok(drawn > 3000, `charts drew only ${drawn} chart-coloured pixels`);

    // Each distribution chart on its own also draws (dots, boxes, medians).
    const dist = buildDocument(input).find((b) => b.kind === 'chart' && b.name.startsWith('dist-'));
    assert.ok(dist && dist.kind === 'chart');
    const distFile = join(t.dir, 'dist.html');
    writeFileSync(distFile, `<!doctype html><html><body style="margin:0;background:#fff">${dist.svg}</body></html>`);
    screenshot(distFile, join(t.dir, 'dist.png'), t.dir, 1000);
    assert.ok(countChartPixels(join(t.dir, 'dist.png')) > 500, 'distribution chart drew its series');
  } finally {
    t.cleanup();
  }
});

test.run();
