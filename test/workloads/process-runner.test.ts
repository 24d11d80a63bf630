import { existsSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createProcessRunner } from '../../workloads/process-runner.js';
import { skipTest, tempDir } from '../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());
const proc = createProcessRunner();
const hasTime = existsSync('/usr/bin/time');

test('run: exit code, output and (with GNU time) child CPU and peak RSS', async () => {
  const r = await proc.run(
    process.execPath,
    ['-e', 'let x = 0; for (let i = 0; i < 3e7; i++) x += i; console.log("sum", x > 0); process.exit(3)'],
    { cwd: t.dir, timeoutMs: 30_000 },
  );
  assert.is(r.exitCode, 3);
  assert.match(r.stdout, /sum true/);
  assert.is(r.timedOut, false);
  if (!hasTime) return skipTest('run: CPU and RSS', 'time', '/usr/bin/time (Debian package time) is not installed');
  assert.ok(r.peakRssBytes! > 10 * 1024 * 1024, `peak RSS ${r.peakRssBytes}`);
  assert.ok(r.cpuUserMs !== null && r.cpuSystemMs !== null);
});

test('run: a timeout kills the whole process group, grandchildren included', async () => {
  const t0 = performance.now();
  const r = await proc.run('sh', ['-c', 'sleep 30 & sleep 30; wait'], { cwd: t.dir, timeoutMs: 300 });
  assert.is(r.timedOut, true);
  assert.ok(performance.now() - t0 < 10_000, 'did not wait for the sleeps');
});

test('start/stop: a watcher is stopped through its own signal, and GNU time still reports CPU and RSS', async () => {
  const w = proc.start(process.execPath, ['-e', 'setInterval(() => {}, 1000); console.log("ready")'], { cwd: t.dir });
  await w.waitForOutput((o) => o.includes('ready'), 20_000, 'ready line');
  const r = await w.stop();
  assert.ok(r.signal !== null || r.exitCode !== null);
  if (!hasTime) return skipTest('start/stop: CPU and RSS', 'time', '/usr/bin/time (Debian package time) is not installed');
  assert.ok(r.peakRssBytes !== null && r.peakRssBytes > 0, 'time wrote its report: the command, not time, got the signal');
});

test('waitForOutput rejects with E_TIMEOUT when the signal never comes, and with E_STEP_FAILED when the process exits first', async () => {
  const quiet = proc.start('sh', ['-c', 'sleep 30'], { cwd: t.dir });
  await quiet
    .waitForOutput((o) => o.includes('never'), 200, 'a line')
    .then(
      () => assert.unreachable(),
      (err) => assert.is(err.code, 'E_TIMEOUT'),
    );
  await quiet.stop();
  const quick = proc.start('sh', ['-c', 'echo bye'], { cwd: t.dir });
  await quick
    .waitForOutput((o) => o.includes('never'), 20_000, 'a line')
    .then(
      () => assert.unreachable(),
      (err) => assert.is(err.code, 'E_STEP_FAILED'),
    );
  await quick.stop();
});

test.run();
