#!/usr/bin/env node
// Runs every compiled test file (dist/test/**/*.test.js) in its own process, sequentially, and ends
// with "N passed, N failed, N skipped". Counting does not trust what the reporter prints about
// skips: uvu counts a test that returned early as passed, so the runner reads the structured
// "SKIP test|part [capability] name: reason" lines (test/helpers/index.ts) wherever they appear, takes
// skipped tests off the passed count, adds skipped parts, and names every one of them. Failures are
// uvu's total minus its passed count, so test.only and test.skip (which uvu reports as skipped
// without running) never make a count negative.
//
//   npm test                                    build, then every test file
//   node dist/test/run-tests.js cli sessions    only files whose path contains "cli" or "sessions"
//   PDB_ENV_REQUIRE=btrfs,xfs npm test          a skip for btrfs or xfs fails instead
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { packageFile, packageRoot } from '../model/paths.js';
import { formatDuration, isMainModule } from '../scripts/lib.js';
import { CAPABILITIES, REQUIRED_LINE, requiredCapabilities, SKIP_LINE } from './helpers/index.js';
import { sweepStaleTempDirs } from './helpers/stale-temp.js';

export interface FileCounts {
  passed: number;
  failed: number;
  skipped: number;
  /** "name [capability]: reason" of every skip, and of uvu's unnamed skips. */
  skips: string[];
  /** Required capabilities that were missing. */
  required: string[];
  /** Why the file counts as failed beyond its failed tests (a crash, an exit code), or null. */
  problem: string | null;
}

/** The counts of one test file from its output and exit code. */
export function countFile(output: string, code: number | null): FileCounts {
  const text = output.replace(/\x1b\[[0-9;]*m/g, '');
  const total = Number(/Total:\s+(\d+)/.exec(text)?.[1] ?? NaN);
  const ok = Number(/Passed:\s+(\d+)/.exec(text)?.[1] ?? NaN);
  const uvuSkipped = Number(/Skipped:\s+(\d+)/.exec(text)?.[1] ?? 0);
  const skips: string[] = [];
  let skippedTests = 0;
  let skippedParts = 0;
  for (const m of text.matchAll(SKIP_LINE)) {
    if (m[1] === 'test') skippedTests++;
    else skippedParts++;
    skips.push(`${m[3]} [${m[2]}]${m[1] === 'part' ? ' (part of a test)' : ''}: ${m[4]}`);
  }
  const required = [...text.matchAll(REQUIRED_LINE)].map((m) => `${m[2]} [${m[1]}]: ${m[3]}`);
  if (uvuSkipped > 0) skips.push(`${uvuSkipped} test(s) not run (test.skip, or others beside a test.only)`);
  if (Number.isNaN(total) || Number.isNaN(ok))
    return { passed: 0, failed: 1, skipped: 0, skips, required, problem: `crashed before reporting, exit ${code}` };
  const failedTests = total - ok;
  // A test that printed its skip and then returned is among uvu's passed ones.
  const passed = Math.max(0, ok - skippedTests);
  const problem = failedTests === 0 && code !== 0 ? `all tests passed but the process exited ${code}` : null;
  return {
    passed,
    failed: failedTests + (problem ? 1 : 0),
    skipped: uvuSkipped + skippedTests + skippedParts,
    skips,
    required,
    problem,
  };
}

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
    // No test starts a daemon on demand and leaves it behind (native/client.c): a daemon test file
    // uses one it starts itself (and stops, by pid); any other runs every command in node.
    const daemon = relative(packageRoot(), file).includes('daemon') ? 'manual' : '0';
    const child = spawn(process.execPath, [file], {
      cwd: packageRoot(),
      env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1', PDB_ENV_DAEMON: daemon },
    });
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

async function main(filter: string[]): Promise<number> {
  const unknown = requiredCapabilities().filter((c) => !(CAPABILITIES as readonly string[]).includes(c));
  if (unknown.length) {
    console.error(`PDB_ENV_REQUIRE names unknown capabilities: ${unknown.join(', ')} (known: ${CAPABILITIES.join(', ')})`);
    return 2;
  }
  // What an earlier, killed test run left mounted or attached (never a live run's dirs).
  const swept = await sweepStaleTempDirs();
  if (swept.dirs.length || swept.kept.length)
    console.log(
      `released ${swept.dirs.length} temp dirs of killed test runs (${swept.unmounted.length} mounts, ${swept.detached.length} loop devices)` +
        (swept.kept.length ? `; could not release: ${swept.kept.join(', ')}` : ''),
    );
  const totals = { passed: 0, failed: 0, skipped: 0 };
  const skipped: string[] = [];
  const failedFiles: string[] = [];
  const files = collect(packageFile('dist', 'test')).filter((f) => filter.length === 0 || filter.some((x) => f.includes(x)));
  const started = Date.now();
  for (const file of files) {
    const rel = relative(packageFile('dist'), file);
    const t0 = Date.now();
    const { code, output } = await runFile(file);
    const c = countFile(output, code);
    totals.passed += c.passed;
    totals.failed += c.failed;
    totals.skipped += c.skipped;
    skipped.push(...c.skips.map((s) => `${rel}: ${s}`));
    if (c.failed > 0)
      failedFiles.push(
        `${rel} (${c.problem ?? `${c.failed} failed`}${c.required.length ? `; required but missing: ${c.required.join('; ')}` : ''})`,
      );
    console.log(`-- ${rel}: ${formatDuration(Date.now() - t0, 1)}`);
  }
  console.log(`\n${files.length} test files in ${formatDuration(Date.now() - started, 0)}`);
  if (requiredCapabilities().length) console.log(`required (PDB_ENV_REQUIRE): ${requiredCapabilities().join(', ')}`);
  if (skipped.length) console.log(`skipped (did not run):\n${skipped.map((r) => `  ${r}`).join('\n')}`);
  if (failedFiles.length) console.log(`failed:\n${failedFiles.map((r) => `  ${r}`).join('\n')}`);
  console.log(`${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
  return totals.failed > 0 ? 1 : 0;
}

// Imported by its own test (countFile); runs only when started as the script.
if (isMainModule(import.meta.url)) process.exitCode = await main(process.argv.slice(2));
