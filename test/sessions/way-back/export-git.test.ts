// export --git: a commit on pdb-env/NAME whose parent is the source's HEAD at import and whose
// tree is HEAD's tree with the session's changes (ignored and excluded paths as in HEAD), made
// with plumbing only: the user's HEAD, index, branch and status stay byte for byte the same. A
// property over random changesets; PDB_EXPORT_RUNS changes the run count (default 8).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isPdbError } from '../../../model/errors.js';
import { SessionService } from '../../../sessions/service.js';
import { tempDir } from '../../helpers/index.js';
import { filesOf, forRandomChangesets, gitRun, makeRepo } from '../../helpers/way-back-fixture.js';

const RUNS = Number(process.env.PDB_EXPORT_RUNS ?? 8);
const t = tempDir('pdb-export-');
test.after(() => t.cleanup());

const userState = (dir: string) => ({
  head: gitRun(dir, ['rev-parse', 'HEAD']),
  branch: gitRun(dir, ['symbolic-ref', 'HEAD']),
  status: gitRun(dir, ['status', '--porcelain', '--ignored']),
  index: readFileSync(join(dir, '.git/index')).toString('base64'),
});

/** The files of `commit`, extracted with git archive. */
async function commitFiles(repo: string, commit: string, into: string) {
  mkdirSync(into, { recursive: true });
  execFileSync('sh', ['-c', `git -C "$1" archive "$2" | tar -x -C "$3"`, 'sh', repo, commit, into]);
  return filesOf(into);
}

test(`export --git: the branch's tree is the session's result without what git ignores (${RUNS} random changesets); the user's repository untouched`, async () => {
  await forRandomChangesets(
    t.dir,
    RUNS,
    async ({ dir, src, svc, expected, ops }) => {
      const before = userState(src);
      const r = await svc.exportGit('s');
      assert.equal(userState(src), before, 'HEAD, branch, index and status unchanged');
      assert.is(r.branch, 'pdb-env/s');
      assert.is(gitRun(src, ['rev-parse', 'pdb-env/s^']).trim(), before.head.trim());
      assert.equal(r.ignored, ['.env']);
      const want = expected.filter((e) => e.path !== '.env');
      assert.equal(await commitFiles(src, r.commit, join(dir, 'out')), want, JSON.stringify(ops));
    },
    // .env is ignored by git: changed in the session, never exported.
    { beforeCheckpoint: (root) => writeFileSync(join(root, '.env'), 'SECRET=changed\n') },
  );
});

test('export --git refuses a branch that would not fast-forward (E_BRANCH_EXISTS), and the checked-out branch', async () => {
  const src = makeRepo(join(t.dir, 'branch/src'));
  const svc = await SessionService.open(join(t.dir, 'branch/store'), { create: true });
  const s = await svc.create('s', { from: src });
  writeFileSync(join(s.root, 'a.txt'), 'one\n');
  await svc.checkpoint('s');
  const first = await svc.exportGit('s', { message: 'first' });
  assert.is(gitRun(src, ['log', '-1', '--format=%s', first.commit]).trim(), 'first');
  for (const branch of ['pdb-env/s', 'main']) {
    try {
      await svc.exportGit('s', { branch });
      assert.unreachable('export should refuse');
    } catch (err) {
      assert.ok(isPdbError(err, 'E_BRANCH_EXISTS'), String(err));
    }
  }
  assert.is(gitRun(src, ['rev-parse', 'pdb-env/s']).trim(), first.commit, 'the branch did not move');
});

test('export --branch refuses what git check-ref-format --branch refuses, HEAD, @, names starting with - and full refs', async () => {
  const src = makeRepo(join(t.dir, 'names/src'));
  const svc = await SessionService.open(join(t.dir, 'names/store'), { create: true });
  const s = await svc.create('s', { from: src });
  writeFileSync(join(s.root, 'a.txt'), 'one\n');
  await svc.checkpoint('s');
  const refsBefore = gitRun(src, ['for-each-ref', '--format=%(refname)']);
  for (const branch of ['HEAD', '@', '-x', '--force', 'refs/heads/master', 'refs/x', 'a..b', 'x.lock', 'a b', '@{-1}', 'foo@{1}', '']) {
    try {
      await svc.exportGit('s', { branch });
      assert.unreachable(`export --branch ${JSON.stringify(branch)} should be refused`);
    } catch (err) {
      assert.ok(isPdbError(err, 'E_USAGE'), `${JSON.stringify(branch)}: ${String(err)}`);
      assert.match((err as Error).message, /branch/);
    }
  }
  assert.is(gitRun(src, ['for-each-ref', '--format=%(refname)']), refsBefore, 'no ref was made');
  gitRun(src, ['checkout', '-q', '-b', 'still-works']);
  const ok = await svc.exportGit('s', { branch: 'feature/ok' });
  assert.is(ok.branch, 'feature/ok');
});

// The README's two agents: agent-a publishes a.txt, agent-b publishes b.txt with --rebase. Its
// result is its own work (docs/way-back.md, "What a session's result is"): every way back of
// agent-b carries b.txt, never the a.txt that came from agent-a through the rebase.
test("after publish --rebase, diff, export --patch, export --git and apply carry the same set: the session's own changes", async () => {
  const src = makeRepo(join(t.dir, 'two-agents/src'));
  const svc = await SessionService.open(join(t.dir, 'two-agents/store'), { create: true });
  const a = await svc.create('agent-a', { from: src });
  const b = await svc.create('agent-b', { from: src });
  const h = await svc.envHead('main');
  writeFileSync(join(a.root, 'a-new.txt'), 'a\n');
  writeFileSync(join(b.root, 'b-new.txt'), 'b\n');
  await svc.checkpoint('agent-a');
  await svc.checkpoint('agent-b');
  const h2 = (await svc.publish('agent-a', 'main', h)).head;
  await svc.publish('agent-b', 'main', h2, { rebase: true });
  const want = ['b-new.txt'];
  assert.equal(
    (await svc.diff('agent-b')).changes.map((c) => c.path),
    want,
    'diff',
  );
  const patchFile = join(t.dir, 'two-agents/b.patch');
  await svc.exportPatch('agent-b', patchFile);
  const patched = [...readFileSync(patchFile, 'utf8').matchAll(/^diff --git a\/(\S+) /gm)].map((m) => m[1]);
  assert.equal(patched, want, 'export --patch');
  const exported = await svc.exportGit('agent-b');
  const committed = gitRun(src, ['diff-tree', '-r', '--name-only', '--no-commit-id', exported.parent, exported.commit]).trim().split('\n');
  assert.equal(committed, want, 'export --git');
  const applied = await svc.apply('agent-b');
  assert.is(applied.changes, want.length, 'apply');
  assert.ok(existsSync(join(src, 'b-new.txt')), 'apply wrote b-new.txt');
  assert.not.ok(existsSync(join(src, 'a-new.txt')), "apply did not bring agent-a's file");
});

test.run();
