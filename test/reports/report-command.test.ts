import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, cliJson, REPO_ROOT, tempDir } from '../helpers/index.js';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'receipts');
const POLICY = join(REPO_ROOT, 'policies', 'reflink-linux.json');

test('pdb-env report writes Markdown (+ SVG charts), HTML and JSON and names the verdict', () => {
  const t = tempDir();
  try {
    const out = join(t.dir, 'out');
    const r = cli(['report', FIXTURES, '--policy', POLICY, '--out', out]);
    assert.is(r.code, 0, r.stderr);
    assert.match(r.stdout, /2 receipt\(s\), 2 testbed\(s\): T1 linux\/btrfs \(synthetic\), T2 linux\/xfs \(synthetic\)/);
    assert.match(r.stdout, /HOLD: reflink under policy reflink-linux/);
    for (const f of ['report.md', 'report.html', 'report.json']) assert.ok(existsSync(join(out, f)), f);
    const charts = readdirSync(join(out, 'charts'));
    assert.ok(charts.length >= 4 && charts.every((c) => c.endsWith('.svg')));
    const md = readFileSync(join(out, 'report.md'), 'utf8');
    for (const c of charts) assert.ok(md.includes(`charts/${c}`), c);
    for (const f of ['report.md', 'report.html', 'report.json'])
      assert.not.ok(readFileSync(join(out, f), 'utf8').includes(t.dir), `${f} holds no absolute path`);
    const json = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    assert.is(json.gate.verdict, 'HOLD');
    assert.is(json.testbeds.length, 2);
  } finally {
    t.cleanup();
  }
});

test('--json prints the report; directories skip other JSON; a receipt read twice counts once', () => {
  const t = tempDir();
  try {
    const dir = join(t.dir, 'evidence');
    mkdirSync(join(dir, 'job-a'), { recursive: true });
    mkdirSync(join(dir, 'job-b'), { recursive: true });
    copyFileSync(join(FIXTURES, 'synthetic-host-a.json'), join(dir, 'job-a', 'r.json'));
    copyFileSync(join(FIXTURES, 'synthetic-host-a.json'), join(dir, 'job-b', 'same.json'));
    copyFileSync(join(FIXTURES, 'synthetic-host-b.json'), join(dir, 'job-b', 'r.json'));
    writeFileSync(join(dir, 'job-b', 'notes.json'), '{"kind":"something-else"}');
    const text = cli(['report', dir, '--out', join(t.dir, 'o')], { cwd: t.dir });
    assert.is(text.code, 0, text.stderr);
    assert.match(text.stdout, /counted once \(same run id\): evidence\/job-b\/same\.json/);
    assert.match(text.stdout, /skipped \(not receipts\): evidence\/job-b\/notes\.json/);
    const json = cliJson(['report', dir]);
    assert.is(json.kind, 'pdb-env-report');
    assert.is(json.receipts.length, 2);
    assert.is(json.gate, null);
    assert.ok(Array.isArray(json.comparisons) && json.comparisons.length > 0);
  } finally {
    t.cleanup();
  }
});

test('bad inputs fail with a stable code and a hint', () => {
  const t = tempDir();
  try {
    writeFileSync(join(t.dir, 'policy.json'), JSON.stringify({ kind: 'pdb-env-policy', policyVersion: 1, name: 'x' }));
    const badPolicy = cli(['report', FIXTURES, '--policy', join(t.dir, 'policy.json'), '--json']);
    assert.is(badPolicy.code, 1);
    assert.is(JSON.parse(badPolicy.stdout).error.code, 'E_POLICY_INVALID');
    writeFileSync(join(t.dir, 'plan.json'), '{"kind":"pdb-env-plan"}');
    const notReceipt = cli(['report', join(t.dir, 'plan.json'), '--json']);
    assert.is(JSON.parse(notReceipt.stdout).error.code, 'E_SCHEMA_INVALID');
    const broken = JSON.parse(readFileSync(join(FIXTURES, 'synthetic-host-a.json'), 'utf8'));
    delete broken.host;
    writeFileSync(join(t.dir, 'broken.json'), JSON.stringify(broken));
    const invalid = cli(['report', join(t.dir, 'broken.json'), '--json']);
    assert.is(JSON.parse(invalid.stdout).error.code, 'E_SCHEMA_INVALID');
    assert.match(JSON.parse(invalid.stdout).error.message, /host/);
    const missing = cli(['report', join(t.dir, 'nope')]);
    assert.is(missing.code, 1);
    assert.match(missing.stderr, /does not exist/);
    const empty = join(t.dir, 'empty');
    mkdirSync(empty);
    assert.match(cli(['report', empty]).stderr, /no receipts found/);
    assert.is(cli(['report', FIXTURES, '--seed', 'x']).code, 2);
  } finally {
    t.cleanup();
  }
});

test.run();
