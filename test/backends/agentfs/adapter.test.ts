// The adapter's steps, bounds and cleanup, driven by the STAND-IN (test/fixtures/agentfs-stand-in),
// which is not AgentFS: a tool of kind 'stand-in' whose mount check accepts its bind mount, built in
// the test. Its mounts need root; without root these tests say what did not run.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { agentfsDb, mountAgentfs, runTrial, type AgentfsTool } from '../../../backends/agentfs/adapter.js';
import { createAgentfsSession, releaseAgentfsSession, resumeAgentfsSession } from '../../../backends/agentfs/agentfs.js';
import { unmountAt } from '../../../backends/agentfs/exec.js';
import { mountAt } from '../../../model/os/mounts.js';
import { readProcStat } from '../../../model/os/proc.js';
import { scanTree } from '../../../model/scan/scan.js';
import { isRoot, skipTest, tempDir } from '../../helpers/index.js';
import { leftovers, standInEnv, standInTool, type StandInMode } from '../../helpers/agentfs-stand-in.js';

const t = tempDir('pdb-agentfs-adapter-');
test.after(() => t.cleanup());

let n = 0;
function fresh(name: string): string {
  const d = join(t.dir, `${name}-${++n}`);
  mkdirSync(d);
  return d;
}

function alive(pid: number): boolean {
  // A zombie (reparented to a PID 1 that does not reap) has ended; only its entry is left.
  const stat = readProcStat(pid);
  return stat !== null && stat.state !== 'Z';
}

function needsRoot(name: string): boolean {
  if (isRoot()) return false;
  skipTest(name, 'bind-mount', 'the AgentFS stand-in bind-mounts, which needs root');
  return true;
}

test('the trial passes with a stand-in that behaves (a trial result, not availability)', async () => {
  if (needsRoot('stand-in trial')) return;
  const probeDir = fresh('probe');
  const r = await runTrial(standInTool('ok'), probeDir);
  assert.ok(r.passed, JSON.stringify(r));
  assert.equal(leftovers(probeDir), []);
});

test('write, read and unmount failures are named by step, and cleaned up', async () => {
  if (needsRoot('stand-in step failures')) return;
  const cases: [StandInMode, string, RegExp][] = [
    ['mount-ro', 'write', /write through the mount exited 1: .*EROFS/],
    ['mount-leaky', 'read', /the write reached the base directory/],
    ['mount-busy', 'unmount', /could not unmount the AgentFS mount: umount exited 32/],
  ];
  for (const [mode, step, detail] of cases) {
    const probeDir = fresh('probe');
    const r = await runTrial(standInTool(mode), probeDir);
    assert.equal(r.passed ? 'passed' : [r.step, r.timedOut], [step, false], mode);
    if (!r.passed) assert.match(r.detail, detail);
    assert.equal(leftovers(probeDir), [], mode);
  }
});

test('a hung mount: the call returns within its bound, and its escaped daemon, mount and state go', async () => {
  if (needsRoot('stand-in mount hang')) return;
  const dir = fresh('hang');
  const pidFile = join(dir, 'daemon-pids');
  const tool: AgentfsTool = { ...standInTool('mount-hang'), env: standInEnv('mount-hang', { AGENTFS_STAND_IN_PIDFILE: pidFile }) };
  const stateDir = join(dir, 'state');
  mkdirSync(join(stateDir, '.agentfs'), { recursive: true });
  writeFileSync(agentfsDb({ stateDir, id: 'x' }), '{}');
  mkdirSync(join(dir, 'mnt'));
  const started = performance.now();
  const err = await mountAgentfs(tool, { stateDir, id: 'x' }, join(dir, 'mnt')).then(
    () => null,
    (e: { code: string; message: string }) => e,
  );
  assert.ok(performance.now() - started < 5_000, `took ${performance.now() - started} ms`);
  assert.is(err?.code, 'E_TIMEOUT');
  const pids = readFileSync(pidFile, 'utf8').trim().split('\n').map(Number);
  assert.is(pids.length, 1, 'the stand-in started its daemon before hanging');
  assert.equal(
    pids.filter((p) => alive(p)),
    [],
    'the daemon left the process group; it was found by its state path and killed',
  );
  assert.equal(leftovers(dir), []);
});

test('a session: create mounts the base at the root, resume re-mounts after the mount is gone, release leaves nothing', async () => {
  if (needsRoot('stand-in session')) return;
  const dir = fresh('session');
  const base = join(dir, 'base');
  mkdirSync(join(base, 'src'), { recursive: true });
  writeFileSync(join(base, 'src', 'a.txt'), 'a\n');
  writeFileSync(join(base, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
  const root = join(dir, 'root');
  const stateDir = join(dir, 'state');
  const tool = standInTool('ok');
  await createAgentfsSession(tool, base, root, stateDir);
  assert.ok(existsSync(agentfsDb({ stateDir, id: 'session' })), 'the database is where AgentFS keeps it');
  assert.ok(mountAt(root));
  const scan = async (d: string) => (await scanTree(d, { excludes: [] })).entries;
  assert.equal(await scan(root), await scan(base));
  writeFileSync(join(root, 'src', 'a.txt'), 'changed\n');
  assert.is(readFileSync(join(base, 'src', 'a.txt'), 'utf8'), 'a\n', 'the base is never written');

  const resume = (tl: AgentfsTool) =>
    resumeAgentfsSession({ root, stateDir, base, timeouts: tl.timeouts, ownsMount: tl.ownsMount, tool: async () => tl });
  // Live and answering: nothing to do (a tool that would fail is never asked for).
  await resume(standInTool('mount-fail'));
  // As after a reboot: the mount is gone, resume mounts again and the session's writes are still there.
  assert.ok((await unmountAt(root, { lazy: false, timeoutMs: 5_000 })).ok);
  assert.not.ok(mountAt(root));
  await resume(tool);
  assert.is(readFileSync(join(root, 'src', 'a.txt'), 'utf8'), 'changed\n');

  await releaseAgentfsSession(root, stateDir, tool.timeouts);
  assert.not.ok(mountAt(root));
  assert.not.ok(existsSync(stateDir));
  assert.equal(leftovers(dir), []);
  await releaseAgentfsSession(root, stateDir, tool.timeouts); // again: nothing to do, no error
});

test('a create that fails leaves no mount, state or process behind', async () => {
  if (needsRoot('stand-in create rollback')) return;
  for (const mode of ['mount-fail', 'mount-noop', 'init-fail'] as const) {
    const dir = fresh('rollback');
    mkdirSync(join(dir, 'base'));
    const root = join(dir, 'root');
    const stateDir = join(dir, 'state');
    const err = await createAgentfsSession(standInTool(mode), join(dir, 'base'), root, stateDir).then(
      () => null,
      (e: { code: string }) => e,
    );
    assert.is(err?.code, 'E_MOUNT_FAILED', mode);
    assert.not.ok(mountAt(root), mode);
    assert.not.ok(existsSync(stateDir), mode);
    assert.equal(leftovers(dir), [], mode);
  }
});

test.run();
