// model/os/run-tool.ts: the one runner for short tools. How a tool ended (exit code, stderr, a
// missing program, a timeout) is a result, never a throw; stdin, env and bytes go through as given.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runTool } from '../../../model/os/run-tool.js';

const sh = (script: string, options: Parameters<typeof runTool>[2] = {}) => runTool('sh', ['-c', script], options);

test('exit code, stdout and stderr of a tool that fails', async () => {
  const r = await sh('echo out; echo err >&2; exit 3');
  assert.equal(r, { exitCode: 3, signal: null, stdout: 'out\n', stderr: 'err\n', error: null, timedOut: false });
});

test('a missing program is ENOENT in the result, not a throw', async () => {
  const r = await runTool('pdb-env-no-such-tool', ['--version']);
  assert.is(r.error?.code, 'ENOENT');
  assert.is(r.exitCode, null);
  assert.is(r.stdout, '');
});

test('stdin input, env additions over LC_ALL=C, the working directory', async () => {
  const r = await sh('cat; printf "|%s|%s|%s" "$LC_ALL" "$PDB_RUN_TOOL" "$(pwd)"', { input: 'in', env: { PDB_RUN_TOOL: 'x' }, cwd: '/' });
  assert.is(r.stdout, 'in|C|x|/');
  const own = await sh('printf %s "$LC_ALL"', { env: { LC_ALL: 'POSIX' } });
  assert.is(own.stdout, 'POSIX', 'a caller may set LC_ALL itself');
});

test('stdout as bytes', async () => {
  const r = await runTool('sh', ['-c', "printf '\\377\\000\\001'"], { encoding: 'buffer' });
  assert.ok(Buffer.isBuffer(r.stdout));
  assert.equal([...r.stdout], [0xff, 0, 1]);
});

test('a timeout kills the tool and says so', async () => {
  const t0 = performance.now();
  const r = await runTool('sleep', ['30'], { timeoutMs: 100 });
  assert.equal([r.timedOut, r.exitCode, r.signal], [true, null, 'SIGTERM']);
  assert.ok(performance.now() - t0 < 5_000);
});

test.run();
