// Per-session cgroup v2 tracking through the real CLI. This host has cgroup v1 only, so the test
// re-runs itself in a private mount namespace (unshare -m) with a cgroup2 hierarchy mounted in a
// temp dir: only that process and its children see the mount, and pdb-env finds it in mountinfo
// as it finds /sys/fs/cgroup/unified on a hybrid host. A run's whole tree lands in the session's
// leaf, including a process that left the run's process group (setsid), which process-group
// tracking alone cannot see; `ps` lists it, `stop` ends it, and the leaf goes with the run.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import * as uvuAssert from 'uvu/assert';
import { readProcStat } from '../../../model/os/proc.js';
import { cgroup2Mount } from '../../../sessions/runtime/processes.js';
import { CLI, hasCommand, isRoot, processAlive, skipTest, until, writeTree } from '../../helpers/index.js';

const INNER = 'PDB_ENV_TEST_CGROUP_NS';

/** The scenario, inside the private namespace (plain asserts; the outer test reads the exit status). */
async function inner(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pdb-cgroup-'));
  const cg = join(dir, 'cg');
  mkdirSync(cg);
  execFileSync('mount', ['-t', 'cgroup2', 'none', cg]);
  const store = join(dir, 'store');
  const env = { ...process.env, PDB_ENV_STORE: store };
  const cli = (...args: string[]) => execFileSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8' });
  let run: ReturnType<typeof spawn> | null = null;
  try {
    // /sys/fs/cgroup holds v1 controllers here, so the temp mount is the hierarchy pdb-env finds.
    const found = cgroup2Mount();
    assert.ok(found === cg || found === '/sys/fs/cgroup' || found === '/sys/fs/cgroup/unified', `found ${found}`);
    const src = join(dir, 'src');
    // A child in the run's group, and one that leaves it with setsid (still in the cgroup).
    writeTree(src, { 'tree.sh': 'sleep 300 & echo $! > child.pid\nsetsid sleep 301 & echo $! > escaped.pid\necho $$ > top.pid\nwait\n' });
    cli('create', 's', '--from', src, '--json');
    const root = cli('path', 's').trim();
    run = spawn(process.execPath, [CLI, 'run', 's', '--', 'sh', 'tree.sh'], { env, stdio: 'ignore' });
    const pid = (f: string) => Number(readFileSync(join(root, f), 'utf8').trim()) || null;
    // A pid file exists before the shell has written it: only whole pids count.
    const [top, child] = await until('the pids', () => {
      if (!['top.pid', 'child.pid', 'escaped.pid'].every((f) => existsSync(join(root, f)))) return null;
      const got = [pid('top.pid'), pid('child.pid')];
      return got.every((p) => p !== null) && got;
    });
    const escaped = await until('the escaped pid', () => pid('escaped.pid'));
    // The escaped process really left the run's process group.
    const pgid = (p: number) => readProcStat(p)!.pgid;
    // setsid(2) runs just after the fork whose pid the shell wrote: wait for it.
    await until('the escape from the process group', () => pgid(escaped) !== pgid(top!));
    const ps = JSON.parse(cli('ps', 's', '--json')) as { tracking: string; processes: Array<{ pid: number }> };
    assert.equal(ps.tracking, 'cgroup');
    const listed = new Set(ps.processes.map((p) => p.pid));
    for (const p of [top!, child!, escaped]) assert.ok(listed.has(p), `ps lists ${p}: ${[...listed].join(', ')}`);
    // Each process's own cgroup (from /proc) is the session's leaf: the same one for all three.
    const cgroupOf = (p: number) => /^0::(.*)$/m.exec(readFileSync(`/proc/${p}/cgroup`, 'utf8'))![1]!;
    const rel = cgroupOf(top!);
    assert.match(rel, /^\/pdb-env\/[0-9a-f]{12}-s$/);
    for (const p of [child!, escaped]) assert.equal(cgroupOf(p), rel, `${p} in the session's cgroup`);
    assert.notEqual(cgroupOf(process.pid), rel, 'the test itself is not in the leaf');
    const leaf = join(found!, rel);
    cli('stop', 's');
    for (const p of [top!, child!, escaped]) await until(`${p} gone`, () => !processAlive(p), 5_000);
    await until('the leaf removed', () => !existsSync(leaf), 5_000);
    // A program that never starts leaves no leaf behind.
    assert.throws(() => cli('run', 's', '--', 'pdb-env-no-such-command'));
    assert.ok(!existsSync(leaf), 'no leaf after a run that could not start');
    console.log(`cgroup v2: run tree of 3 (1 outside its process group) tracked in ${leaf}, stopped, leaf removed`);
  } finally {
    try {
      cli('stop', 's'); // after a failed assert, nothing of the run may outlive the test
    } catch {
      // the session was never made: nothing runs
    }
    run?.kill('SIGKILL');
    try {
      rmdirSync(join(cgroup2Mount() ?? cg, 'pdb-env'));
    } catch {
      // a leaf still in use is reported by the asserts above
    }
    execFileSync('umount', [cg]);
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.env[INNER] === '1') {
  await inner();
} else {
  test("as root on cgroup v2, a run's whole tree is tracked in the session's leaf, even outside its process group; stop ends it", () => {
    if (!isRoot()) return skipTest('cgroup v2 tracking', 'cgroup2', 'mounting a cgroup2 hierarchy needs root');
    if (!hasCommand('unshare')) return skipTest('cgroup v2 tracking', 'cgroup2', 'unshare (util-linux) is not installed');
    const r = spawnSync('unshare', ['-m', '--propagation', 'private', process.execPath, fileURLToPath(import.meta.url)], {
      env: { ...process.env, [INNER]: '1' },
      encoding: 'utf8',
      timeout: 120_000,
    });
    if (r.status !== 0 && /mount.*(permission|not permitted|unknown filesystem)/i.test(r.stderr))
      return skipTest('cgroup v2 tracking', 'cgroup2', `no cgroup2 mount here: ${r.stderr.trim().split('\n').pop()}`);
    process.stdout.write(r.stdout);
    uvuAssert.is(r.status, 0, r.stderr);
    uvuAssert.match(r.stdout, /tracked in .*-s, stopped, leaf removed/);
  });
  test.run();
}
