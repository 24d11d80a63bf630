// The bench command as users run it: a real interruption (SIGINT) mid-run, then --resume, which
// must not repeat finished cases; plus --json output and the exit status.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Receipt } from '../../harness/receipt/receipt-types.js';
import { CLI, cli, tempDir } from '../helpers/index.js';
import { readReceiptFile } from '../../harness/receipt/envelope.js';

const PLAN = {
  kind: 'pdb-env-plan',
  name: 'cli-resume',
  backends: ['full-copy'],
  workloads: [{ name: 'two-agent', params: { nestedFiles: 2 } }],
  blocks: 4,
  warmupBlocks: 0,
  seed: 11,
  caseTimeoutMs: 60_000,
};

/** Run bench and send SIGINT as soon as the first case has finished (an event on its output, not a sleep). */
function runUntilFirstCase(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, NO_COLOR: '1' } });
    let output = '';
    let sent = false;
    const onData = (d: Buffer) => {
      output += d.toString();
      if (!sent && /case 1 of 4: .* ok in/.test(output)) {
        sent = true;
        child.kill('SIGINT');
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('close', (code) => resolve({ code, output }));
  });
}

test('SIGINT leaves a resumable run; --resume finishes it without repeating finished cases', async () => {
  const t = tempDir();
  try {
    const planFile = join(t.dir, 'plan.json');
    writeFileSync(planFile, JSON.stringify(PLAN));
    const out = join(t.dir, 'out');
    const first = await runUntilFirstCase(['bench', '--plan', planFile, '--out', out, '--store', t.dir]);
    assert.is(first.code, 130, first.output);
    const runId = /--resume (\S+)/.exec(first.output)?.[1];
    assert.ok(runId, first.output);
    const journal = join(out, '.pdb-runs', runId!, 'cases.jsonl');
    const done = readFileSync(journal, 'utf8').trim().split('\n').filter(Boolean).length;
    assert.ok(done >= 1 && done < 4, `finished before the interruption: ${done}`);
    assert.equal(
      readdirSync(out).filter((f) => f.endsWith('.json')),
      [],
    );

    const second = cli(['bench', '--resume', runId!, '--out', out, '--store', t.dir]);
    assert.is(second.code, 0, second.stdout + second.stderr);
    const started = second.stderr.match(/^case \d+ of 4: .*elapsed/gm) ?? [];
    assert.is(started.length, 4 - done, `cases started on resume:\n${started.join('\n')}`);
    const receiptFile = readdirSync(out).find((f) => f.endsWith('.json'))!;
    const receipt = readReceiptFile(join(out, receiptFile)).document as Receipt;
    assert.is(receipt.runId, runId);
    assert.equal(
      receipt.cases.map((c) => c.id),
      ['b0-p0', 'b1-p0', 'b2-p0', 'b3-p0'],
    );
    assert.ok(receipt.cases.every((c) => c.outcome === 'ok'));
    assert.not.ok(existsSync(join(out, '.pdb-runs')));
    assert.equal(
      readdirSync(t.dir).filter((f) => f.startsWith('pdb-bench-')),
      [],
      'the interrupted attempt’s store was removed by the resume',
    );
  } finally {
    t.cleanup();
  }
});

test('--json prints the receipt path and summary; a bad plan exits 1 with E_PLAN_INVALID', () => {
  const t = tempDir();
  try {
    const planFile = join(t.dir, 'plan.json');
    writeFileSync(planFile, JSON.stringify({ ...PLAN, name: 'cli-json', blocks: 1 }));
    const r = cli(['bench', '--plan', planFile, '--out', join(t.dir, 'out'), '--store', t.dir, '--summary', '--json']);
    assert.is(r.code, 0, r.stdout + r.stderr);
    const doc = JSON.parse(r.stdout) as { receipt: string; markdown: string; summary: { ok: number; planned: number } };
    assert.is(doc.summary.ok, 1);
    assert.is(doc.summary.planned, 1);
    assert.ok(existsSync(doc.receipt.startsWith('/') ? doc.receipt : join(process.cwd(), doc.receipt)));
    const md = readFileSync(doc.markdown.startsWith('/') ? doc.markdown : join(process.cwd(), doc.markdown), 'utf8');
    // A full-copy-only plan: its one case is held to the expectation (there is no other case to compare).
    assert.match(md, '| expected |');
    assert.match(md, "Oracle (each case against its block's full-copy case): 0 checked");

    writeFileSync(planFile, JSON.stringify({ ...PLAN, blocks: 'many' }));
    const bad = cli(['bench', '--plan', planFile, '--out', join(t.dir, 'out'), '--json']);
    assert.is(bad.code, 1);
    const err = JSON.parse(bad.stdout) as { error: { code: string; message: string } };
    assert.is(err.error.code, 'E_PLAN_INVALID');
    assert.match(err.error.message, '/blocks');
  } finally {
    t.cleanup();
  }
});

test.run();
