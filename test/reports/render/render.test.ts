import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { findPathIssues, pathFreeViolation } from '../../../harness/receipt/path-free.js';
import type { Receipt } from '../../../harness/receipt/receipt-types.js';
import { analyzeReceipts } from '../../../reports/analysis/analyze.js';
import { buildDocument } from '../../../reports/document/document.js';
import { evaluateGate } from '../../../reports/gate/gate.js';
import { validatePolicy } from '../../../reports/gate/gate-policy.js';
import { renderHtml, renderJson, renderMarkdown } from '../../../reports/render/render.js';
import { distributionChart, ratioChart } from '../../../reports/document/svg.js';
import { syntheticReceipt } from '../../helpers/synthetic-receipts.js';
import { hasCommand, REPO_ROOT, skipTest, tempDir } from '../../helpers/index.js';

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

test('the answer comes first: per testbed and fixture, correct backends and the fastest; then the verdict', () => {
  const blocks = buildDocument(input);
  const headings = blocks.filter((b) => b.kind === 'heading').map((b) => (b as { text: string }).text);
  const answer = headings.indexOf('What the evidence says, per testbed and fixture');
  const decision = headings.findIndex((h) => h.startsWith('Decision:'));
  assert.ok(answer === 1 && decision > answer, headings.slice(0, 6).join(' | '));
  assert.ok(input.data.answers.length >= 2);
  const a = input.data.answers.find((x) => x.testbed === 'T1')!;
  assert.equal(
    a.backends.map((b) => [b.backend, b.status]),
    [
      ['full-copy', 'correct'],
      ['reflink', 'correct'],
    ],
  );
  assert.is(a.fastest?.backend, 'reflink');
  const md = renderMarkdown(input).markdown;
  assert.match(
    md,
    /\| fileops \| fileops-small@1 \| full-copy, reflink \| the source files as each checkpoint recorded them \(not re-read from their bytes\) \| reflink: 0\.\d{3}x full-copy's whole-case time, 95% CI/,
  );
});

test('"too few blocks to tell" is said in words; a policy line only on a chart holding its candidate', () => {
  const few = syntheticReceipt({ runId: '20260101T000000Z-0000ff', blocks: 4 });
  const data = analyzeReceipts([few]);
  assert.ok(data.comparisons.every((c) => c.words === 'too few blocks to tell'));
  assert.match(data.answers[0]!.fastest!.words, 'too few blocks to tell whether reflink is faster');
  const cs = data.comparisons;
  assert.match(ratioChart('t', cs, data.backends, { backend: 'reflink', ratio: 0.5 }), 'policy 0.5 (reflink)');
  assert.not.match(ratioChart('t', cs, data.backends, { backend: 'apfs-clone', ratio: 0.5 }), 'policy 0.5');
});

test('one axis rule per distribution chart: every panel log, or every panel linear, and each says which', () => {
  const wide = syntheticReceipt({ runId: '20260101T000000Z-0000aa', createMs: { 'full-copy': 5000, reflink: 20 } });
  const data = analyzeReceipts([wide]);
  const cells = data.cells.filter((c) => c.testbed === 'T1');
  const svg = distributionChart('t', cells, data.phases, data.backends);
  const rules = [...svg.matchAll(/\(ms, (log|linear) scale\)/g)].map((m) => m[1]);
  assert.ok(rules.length >= 4);
  assert.equal([...new Set(rules)], ['log'], 'create spans 250x, so every panel is log');
  const narrow = analyzeReceipts([syntheticReceipt({ runId: '20260101T000000Z-0000ab', createMs: { 'full-copy': 300, reflink: 200 } })]);
  const rules2 = [...distributionChart('t', narrow.cells, narrow.phases, narrow.backends).matchAll(/\(ms, (log|linear) scale\)/g)].map(
    (m) => m[1],
  );
  assert.equal([...new Set(rules2)], ['linear']);
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
