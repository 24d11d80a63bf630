// The per-run registry of running cases: killAll reaches every process (and process group) that
// carries a registered case token, and nothing else.
import { spawn, type ChildProcess } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CASE_TOKEN_ENV, createCaseProcessRegistry, findCaseProcesses, newCaseToken } from '../../../harness/case/processes.js';

function startTagged(token: string): ChildProcess {
  return spawn('sleep', ['30'], { env: { ...process.env, [CASE_TOKEN_ENV]: token }, detached: true, stdio: 'ignore' });
}

const exited = (child: ChildProcess) => new Promise<string | null>((res) => child.once('exit', (_code, signal) => res(signal)));

test('killAll kills the processes of registered cases only; a removed case is no longer reached', async () => {
  const registry = createCaseProcessRegistry();
  const [a, b, other] = [newCaseToken(), newCaseToken(), newCaseToken()];
  const pa = startTagged(a);
  const pb = startTagged(b);
  const po = startTagged(other);
  try {
    await new Promise((r) => setTimeout(r, 100)); // let exec finish, so /proc shows the tagged environment
    registry.add(a);
    registry.add(b);
    registry.remove(b);
    assert.is(findCaseProcesses(a).length, 1);
    const gone = exited(pa);
    assert.is(registry.killAll(), 1, 'only the registered case a is reached');
    assert.is(await gone, 'SIGKILL');
    assert.is(findCaseProcesses(b).length, 1, 'case b was removed before killAll');
    assert.is(findCaseProcesses(other).length, 1, 'an unregistered token is untouched');
    assert.is(registry.killAll(), 0, 'nothing of case a is left');
  } finally {
    for (const c of [pa, pb, po]) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }
});

test('two registries are independent (no module-level state)', async () => {
  const first = createCaseProcessRegistry();
  const second = createCaseProcessRegistry();
  const token = newCaseToken();
  const child = startTagged(token);
  try {
    await new Promise((r) => setTimeout(r, 100));
    first.add(token);
    assert.is(second.killAll(), 0);
    assert.is(findCaseProcesses(token).length, 1);
    const gone = exited(child);
    assert.is(first.killAll(), 1);
    assert.is(await gone, 'SIGKILL');
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

test.run();
