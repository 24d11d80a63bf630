#!/usr/bin/env node
// Runs every compiled test file (dist/test/**/*.test.js) in its own process, sequentially, and
// ends with one line "N passed, N failed[, N skipped]". uvu prints per-file totals; skipped
// tests print "SKIP <name>: <reason>" lines, which are repeated in the closing summary.
//
//   npm test                              build, then every test file
//   node dist/test/run-tests.js cli sessions   only files whose path contains "cli" or "sessions"
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { packageFile, packageRoot } from '../model/paths.js';
import { formatDuration } from '../scripts/lib.js';

const root = packageRoot();
const testDir = packageFile('dist', 'test');
const filter = process.argv.slice(2);

function collect(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...collect(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

/** Run one test file with its output passed through; resolves with its exit code and output. */
function runFile(file: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [file], { cwd: root, env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' } });
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString();
      process.stdout.write(d);
    });
    child.stderr.on('data', (d: Buffer) => {
      output += d.toString();
      process.stderr.write(d);
    });
    child.on('close', (code) => resolve({ code, output }));
  });
}

const strip = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '');
let passed = 0;
let failed = 0;
let skipped = 0;
const skipReasons: string[] = [];
const failedFiles: string[] = [];
const files = collect(testDir).filter((f) => filter.length === 0 || filter.some((x) => f.includes(x)));
const started = Date.now();

for (const file of files) {
  const rel = relative(packageFile('dist'), file);
  const t0 = Date.now();
  const { code, output } = await runFile(file);
  const text = strip(output);
  const total = Number(/Total:\s+(\d+)/.exec(text)?.[1] ?? NaN);
  const ok = Number(/Passed:\s+(\d+)/.exec(text)?.[1] ?? NaN);
  const sk = Number(/Skipped:\s+(\d+)/.exec(text)?.[1] ?? 0);
  for (const m of text.matchAll(/^SKIP (.+)$/gm)) skipReasons.push(`${rel}: ${m[1]}`);
  if (Number.isNaN(total) || Number.isNaN(ok)) {
    failed += 1;
    failedFiles.push(`${rel} (crashed, exit ${code})`);
  } else {
    passed += ok;
    skipped += sk;
    const f = total - ok - sk;
    failed += f;
    if (f > 0 || code !== 0) failedFiles.push(`${rel} (${f} failed, exit ${code})`);
    if (f === 0 && code !== 0) failed += 1;
  }
  console.log(`-- ${rel}: ${formatDuration(Date.now() - t0, 1)}`);
}

console.log(`\n${files.length} test files in ${formatDuration(Date.now() - started, 0)}`);
if (skipReasons.length) console.log(`skipped:\n${skipReasons.map((r) => `  ${r}`).join('\n')}`);
if (failedFiles.length) console.log(`failed:\n${failedFiles.map((r) => `  ${r}`).join('\n')}`);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exitCode = failed > 0 ? 1 : 0;
