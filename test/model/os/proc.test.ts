// model/os/proc.ts: the one /proc reader. A stat line whose command name holds spaces and
// parentheses, and this process's and a child's stat, environment and command line read back.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  ancestorPids,
  isProcessAlive,
  parseCmdline,
  parseEnviron,
  parseProcStat,
  procPids,
  processStartTime,
  readProcCmdline,
  readProcEnviron,
  readProcStat,
} from '../../../model/os/proc.js';
import { skipTest, tempDir, until } from '../../helpers/index.js';

const onLinux = process.platform === 'linux';

test("a stat line is split at the last ')': the command name may hold spaces and parentheses", () => {
  // Fields 3..22 after the name; 22 (start time) is 4242.
  const after = ['S', '7', '8', '9', ...Array.from({ length: 15 }, (_, i) => String(i)), '4242', '0', '0'];
  const stat = parseProcStat(`123 ((a b) c)) ${after.join(' ')}\n`);
  assert.equal(stat, { pid: 123, comm: '(a b) c)', state: 'S', ppid: 7, pgid: 8, sid: 9, startTime: '4242' });
  assert.is(parseProcStat('123 (short) S 1 2'), null, 'too few fields is not a stat line');
  assert.is(parseProcStat(''), null);
});

test('environ and cmdline text: NUL-separated, the last NUL optional, the first of two equal names wins', () => {
  assert.equal(parseEnviron('A=1\0B==2\0=x\0noeq\0A=3\0C=last'), { A: '1', B: '=2', C: 'last' });
  assert.equal(parseCmdline('node\0-e\0\0a b\0'), ['node', '-e', '', 'a b']);
  assert.equal(parseCmdline(''), [], 'a kernel thread or zombie has none');
});

test('this process: its start time matches its age, its environment and argv read back', () => {
  if (!onLinux) return skipTest('this process in /proc', 'procfs', `no /proc on ${process.platform}`);
  const own = readProcStat(process.pid)!;
  assert.is(own.pid, process.pid);
  assert.is(own.ppid, process.ppid);
  assert.is(processStartTime(process.pid), own.startTime);
  // Checked against /proc/uptime, which the reader does not read: ticks of 1/100 s since boot.
  const uptimeS = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
  const ageS = uptimeS - Number(own.startTime) / 100;
  assert.ok(Math.abs(ageS - process.uptime()) < 2, `started ${ageS} s ago by /proc, ${process.uptime()} s by node`);
  assert.is(readProcEnviron(process.pid)?.PATH, process.env.PATH);
  assert.equal(readProcCmdline(process.pid), [process.execPath, ...process.execArgv, ...process.argv.slice(1)]);
  assert.ok(procPids().includes(process.pid));
});

test('a child: parent, own process group, environment and argv; nothing once it is gone', async () => {
  if (!onLinux) return skipTest('a child in /proc', 'procfs', `no /proc on ${process.platform}`);
  const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore', env: { PATH: process.env.PATH, PDB_PROC_TEST: 'a b=c' } });
  const pid = child.pid!;
  try {
    // The fork runs node's code until exec: wait for sleep's own argv.
    await until('the exec of sleep', () => readProcCmdline(pid)?.[0] === 'sleep');
    const stat = readProcStat(pid)!;
    assert.equal([stat.ppid, stat.pgid, stat.sid, stat.comm], [process.pid, pid, pid, 'sleep'], 'detached: its own group and session');
    assert.equal(readProcEnviron(pid), { PATH: process.env.PATH!, PDB_PROC_TEST: 'a b=c' });
    assert.equal(readProcCmdline(pid), ['sleep', '30']);
    assert.ok(Number(stat.startTime) >= Number(processStartTime(process.pid)));
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
  assert.equal([readProcStat(pid), readProcEnviron(pid), readProcCmdline(pid), processStartTime(pid)], [null, null, null, null]);
});

test('ancestors: the parents up to init from the stat lines alone, this process left out; a loop or a gone parent ends the walk', () => {
  const t = tempDir('pdb-proc-');
  try {
    const stat = (pid: number, ppid: number) => {
      mkdirSync(join(t.dir, String(pid)));
      writeFileSync(join(t.dir, String(pid), 'stat'), `${pid} (sh) S ${ppid} ${Array.from({ length: 18 }, () => '0').join(' ')}\n`);
    };
    [
      [40, 30],
      [30, 20],
      [20, 1],
      [1, 0],
      [7, 8],
      [8, 7],
      [9, 99],
    ].forEach(([pid, ppid]) => stat(pid!, ppid!));
    assert.equal([...ancestorPids(40, t.dir)], [30, 20]);
    assert.equal([...ancestorPids(7, t.dir)], [8, 7], 'a cycle is walked once');
    assert.equal([...ancestorPids(9, t.dir)], [99], 'a parent whose stat is gone is the last');
    if (onLinux) assert.ok(ancestorPids(process.pid).has(process.ppid));
  } finally {
    t.cleanup();
  }
});

test('/proc roots elsewhere: a missing one reads as nothing', () => {
  assert.equal(procPids('/nonexistent-proc'), []);
  assert.is(readProcStat(1, '/nonexistent-proc'), null);
});

test('a zombie (exited, not reaped yet) is not alive: it holds no lease', async () => {
  if (!readProcStat(process.pid)) return skipTest('a zombie', 'procfs', 'no /proc here');
  // `sleep 0` becomes the child of `sleep 5` (exec'd by sh), which never reaps it.
  const parent = spawn('/bin/sh', ['-c', 'sleep 0 & echo $!; exec sleep 5'], { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  parent.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const pid = Number(await until('the child pid', () => /^\d+\n/.exec(out)?.[0]));
  await until('the zombie', () => readProcStat(pid)?.state === 'Z');
  const start = readProcStat(pid)!.startTime;
  assert.is(isProcessAlive(pid, start), false);
  assert.is(isProcessAlive(pid, null), false);
  assert.is(isProcessAlive(parent.pid!, null), true);
  parent.kill('SIGKILL');
});

test.run();
