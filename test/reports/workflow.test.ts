// The evidence workflow cannot run here, so it is checked statically: a registry linter
// (action-validator) accepts it, and every command it calls exists in this package.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { cli, REPO_ROOT, skipTest } from '../helpers/index.js';

const WORKFLOW = join(REPO_ROOT, '.github', 'workflows', 'evidence.yml');

interface Step {
  name?: string;
  run?: string;
  uses?: string;
  if?: string;
  with?: Record<string, unknown>;
}
interface Job {
  'runs-on': string;
  needs?: string | string[];
  steps: Step[];
  strategy?: { matrix: { include: { name: string; runner: string; fs: string }[] } };
}

const workflow = parse(readFileSync(WORKFLOW, 'utf8')) as { jobs: Record<string, Job> };
const runs = Object.values(workflow.jobs).flatMap((j) => j.steps.filter((s) => s.run).map((s) => s.run!));
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };

/** Shell words of every command line, with `sudo`, `sudo -E env PATH=...` and `$SUDO` removed. */
function commandLines(): string[][] {
  const lines = runs
    .flatMap((r) => r.split('\n'))
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  return lines.map((l) =>
    l
      .replace(/^(for|if|then|else|do)\b.*?;\s*(do|then)\s*/, '')
      .split(/\s+/)
      .filter((w, i, ws) => !(w === 'sudo' || w === '-E' || w === '$SUDO' || (w === 'env' && ws[i - 1] === '-E') || /^"?PATH=/.test(w))),
  );
}

/** The source of `node dist/x/y.js` (x/y.ts), or the file itself when it is not built. */
function sourceOf(file: string): string {
  const m = /^dist\/(.+)\.(c?)js$/.exec(file);
  return m ? `${m[1]}.${m[2]}ts` : file;
}

/** `node dist/x/y.js` exists once built: its source is x/y.ts (or the file itself for scripts). */
function sourceExists(file: string): boolean {
  return existsSync(join(REPO_ROOT, file)) || existsSync(join(REPO_ROOT, sourceOf(file)));
}

const cliCommands = (() => {
  const help = cli(['--help']);
  const names = [...help.stdout.matchAll(/^ {2}([a-z][a-z-]*) {2,}/gm)].map((m) => m[1]!);
  return { ok: help.code === 0, names };
})();

test('the workflow is valid for GitHub Actions (action-validator from the npm registry)', () => {
  const bin = join(REPO_ROOT, 'node_modules', '.bin', 'action-validator');
  if (!existsSync(bin))
    return skipTest(
      'action-validator',
      'action-validator',
      '@action-validator/cli is not installed (npm ci installs it as a dev dependency)',
    );
  const r = spawnSync(bin, [WORKFLOW], { encoding: 'utf8' });
  assert.is(r.status, 0, `${r.stdout}${r.stderr}`);
  // The validator must be able to fail: a misspelt key is rejected.
  const bad = readFileSync(WORKFLOW, 'utf8').replace('runs-on: ubuntu-24.04\n', 'runz-on: ubuntu-24.04\n');
  const r2 = spawnSync('sh', ['-c', `"${bin}" /dev/stdin`], { input: bad, encoding: 'utf8' });
  assert.is.not(r2.status, 0, 'a broken workflow must fail the linter');
});

test('a matrix over Linux btrfs/XFS (host-setup) and macOS APFS, then a job that rolls receipts into reports', () => {
  const evidence = workflow.jobs.evidence!;
  const include = evidence.strategy!.matrix.include;
  const pairs = include.map((m) => `${m.runner.startsWith('macos') ? 'macos' : 'linux'}/${m.fs}`);
  for (const want of ['linux/btrfs', 'linux/xfs', 'macos/apfs']) assert.ok(pairs.includes(want), want);
  const steps = evidence.steps;
  assert.ok(
    steps.some((s) => s.run?.includes('npm ci')),
    'npm ci',
  );
  assert.ok(
    steps.some((s) => s.run?.includes('sudo node dist/scripts/host-setup.js up')),
    'host-setup up as root',
  );
  assert.ok(
    steps.some((s) => s.run?.includes('sudo node dist/scripts/host-setup.js down') && s.if?.includes('always()')),
    'host-setup down always',
  );
  assert.ok(
    steps.some((s) => s.run?.includes('npm run proof')),
    'npm run proof',
  );
  assert.ok(
    steps.some((s) => s.run?.includes('plans/*.json')),
    'the plans',
  );
  const upload = steps.find((s) => s.uses?.startsWith('actions/upload-artifact@'));
  assert.ok(
    upload && upload.if?.includes('always()') && String(upload.with?.path).startsWith('receipts'),
    'receipts uploaded even after a failure',
  );
  const report = workflow.jobs.report!;
  assert.equal([report.needs].flat(), ['evidence']);
  assert.ok(report.steps.some((s) => s.uses?.startsWith('actions/download-artifact@')));
  assert.ok(report.steps.some((s) => s.run?.includes('dist/cli/pdb-env.cjs report')));
});

test('every npm script, node file, policy and pdb-env command the workflow calls exists', () => {
  const lines = commandLines();
  let checked = 0;
  for (const words of lines) {
    for (let i = 0; i < words.length; i++) {
      const w = words[i]!;
      if (w === 'npm' && words[i + 1] === 'run') {
        assert.ok(words[i + 2]! in pkg.scripts, `npm run ${words[i + 2]} is not a package.json script`);
        checked++;
      }
      if (w === 'node' && words[i + 1] && !words[i + 1]!.startsWith('-')) {
        const file = words[i + 1]!;
        assert.ok(sourceExists(file), `node ${file}: no such file (or source)`);
        checked++;
        if (file === 'dist/scripts/host-setup.js') {
          const sub = words[i + 2]!;
          assert.ok(readFileSync(join(REPO_ROOT, sourceOf(file)), 'utf8').includes(`cmd === '${sub}'`), `host-setup has no "${sub}"`);
        }
      }
    }
  }
  assert.ok(checked >= 5, `only ${checked} commands found`);
  // Policies named in the report loop.
  const loop = /for policy in ([^;]+);/.exec(runs.join('\n'));
  assert.ok(loop, 'report loop over policies');
  for (const name of loop![1]!.trim().split(/\s+/))
    assert.ok(existsSync(join(REPO_ROOT, 'policies', `${name}.json`)), `policies/${name}.json`);
});

test('every pdb-env command and option the workflow uses is in the CLI', () => {
  if (!cliCommands.ok) {
    assert.unreachable(`pdb-env --help failed; cannot list commands`);
  }
  // Direct CLI calls, and the CLI call inside `npm run proof` with the flags passed after `--`.
  const calls: string[][] = [];
  for (const words of commandLines()) {
    const at = words.findIndex((w) => w === 'dist/cli/pdb-env.cjs' || w === 'pdb-env');
    if (at >= 0) calls.push(words.slice(at + 1));
    const proof = words.findIndex((w, i) => w === 'run' && words[i - 1] === 'npm' && words[i + 1] === 'proof');
    if (proof >= 0) {
      const script = pkg.scripts.proof!.split('&&').pop()!.trim().split(/\s+/);
      const extra = words.indexOf('--') >= 0 ? words.slice(words.indexOf('--') + 1) : [];
      const direct = script.indexOf('dist/cli/pdb-env.cjs');
      if (direct >= 0) calls.push([...script.slice(direct + 1), ...extra]);
      else {
        // A script entry (dist/scripts/proof.js): its source exists and declares every flag passed after `--`.
        const file = script.find((w) => /^dist\/scripts\/.+\.js$/.test(w));
        assert.ok(
          file && existsSync(join(REPO_ROOT, sourceOf(file))),
          `npm run proof runs ${script.join(' ')}, which is neither the CLI nor a script file`,
        );
        const text = readFileSync(join(REPO_ROOT, sourceOf(file!)), 'utf8');
        for (const flag of extra.filter((w) => w.startsWith('--')))
          assert.ok(text.includes(`${flag.slice(2)}: { type:`), `${file} takes no ${flag}`);
      }
    }
  }
  assert.ok(calls.length >= 3, `found ${calls.length} CLI calls`);
  for (const call of calls) {
    const cmd = call[0]!;
    assert.ok(cliCommands.names.includes(cmd), `pdb-env ${cmd} is not a CLI command (have: ${cliCommands.names.join(', ')})`);
    const help = cli([cmd, '--help']).stdout;
    for (const flag of call.filter((w) => w.startsWith('--'))) assert.ok(help.includes(flag), `pdb-env ${cmd} has no ${flag}`);
  }
});

test.run();
