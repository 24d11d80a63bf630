// A mount at a session root that its backend did not make (a bind mount): run and checkpoint
// refuse the session (E_SESSION_DAMAGED naming the mount) instead of working in what is mounted
// there; discard and gc stop with a typed error whose hint says `umount ROOT` (not a raw EBUSY),
// and finish once it is unmounted (issue 41, "also seen").
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mountPointsUnder } from '../../../model/os/mounts.js';
import { pdb } from '../../helpers/faults/fault-helpers.js';
import { skipTest, tempDir, writeTree } from '../../helpers/index.js';
import { SessionService } from '../../../sessions/service.js';

const t = tempDir('pdb-root-mount-');
test.after(() => {
  // The test's own mounts only (below its temp dir), wherever a discard may have moved them.
  for (const m of mountPointsUnder(t.dir).reverse()) execFileSync('umount', [m]);
  t.cleanup();
});

/** Bind-mount `from` at `to`; why not, when this host does not allow it. */
function bind(from: string, to: string): string | null {
  try {
    execFileSync('mount', ['--bind', from, to], { stdio: 'pipe' });
  } catch (err) {
    return `mount --bind is not permitted here: ${String((err as { stderr?: Buffer }).stderr ?? err).trim()}`;
  }
  return null;
}

function unbind(to: string): void {
  execFileSync('umount', [to]);
}

test('a bind mount at a session root: run and checkpoint refuse it, discard and gc say umount ROOT, and finish after it', async () => {
  const src = join(t.dir, 'src');
  writeTree(src, { 'a.txt': 'alpha\n' });
  const store = join(t.dir, 'store');
  const svc = await SessionService.open(store, { create: true });
  const s = await svc.create('s', { from: src, backend: 'full-copy' });
  const other = join(t.dir, 'other');
  mkdirSync(other);
  writeFileSync(join(other, 'elsewhere.txt'), 'not the session\n');
  const why = bind(other, s.root);
  if (why) return skipTest('a bind mount at a session root', 'root', why);
  for (const args of [
    ['run', 's', '--json', '--', 'true'],
    ['checkpoint', 's', '--json'],
  ]) {
    const r = pdb(store, args);
    assert.is(r.code, 1, `${args[0]}: ${r.stdout}${r.stderr}`);
    const e = JSON.parse(r.stdout).error as { code: string; message: string; hint: string };
    assert.is(e.code, 'E_SESSION_DAMAGED', `${args[0]}: ${r.stdout}`);
    assert.match(e.message, new RegExp(`mounted at the root .*${s.root}`));
    assert.match(e.hint, new RegExp(`umount ${s.root}`));
  }
  const d = pdb(store, ['discard', 's', '--json']);
  assert.is(d.code, 1, d.stdout + d.stderr);
  const de = JSON.parse(d.stdout).error as { code: string; hint: string };
  assert.is(de.code, 'E_SESSION_DAMAGED', d.stdout);
  assert.match(de.hint, new RegExp(`umount ${s.root}`));
  assert.is(readFileSync(join(other, 'elsewhere.txt'), 'utf8'), 'not the session\n', 'nothing of the mounted directory removed');
  unbind(s.root);
  assert.is(pdb(store, ['discard', 's']).code, 0);
  // gc: a session left unfinished (its record says discarding, no discard running), with a mount at its root.
  const u = await svc.create('u', { from: src, backend: 'full-copy' });
  const rec = join(store, 'sessions', 'u', 'session.json');
  writeFileSync(rec, JSON.stringify({ ...JSON.parse(readFileSync(rec, 'utf8')), state: 'discarding' }));
  assert.is(bind(other, u.root), null);
  const gc = pdb(store, ['gc', '--json']);
  assert.is(gc.code, 1, gc.stdout + gc.stderr);
  const failed = (JSON.parse(gc.stdout).failed as Array<{ code: string; hint?: string }>)[0]!;
  assert.is(failed.code, 'E_SESSION_DAMAGED', gc.stdout);
  assert.match(failed.hint ?? '', new RegExp(`umount ${u.root}`));
  assert.is(readFileSync(join(other, 'elsewhere.txt'), 'utf8'), 'not the session\n');
  unbind(u.root);
  const again = pdb(store, ['gc', '--json']);
  assert.is(again.code, 0, again.stdout + again.stderr);
  assert.equal(
    (await svc.list()).map((x) => x.name),
    [],
  );
});

test.run();
