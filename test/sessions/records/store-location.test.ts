// Finding the project from a subdirectory (create imports the project root; list finds its store
// and shows each session's source), short digests (--expect, --base, pin), and create --fork.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isPdbError } from '../../../model/errors.js';
import { realpathOr } from '../../../model/paths.js';
import { findProjectRoot } from '../../../sessions/records/store-location.js';
import { SessionService } from '../../../sessions/service.js';
import { cli, cliJson, tempDir } from '../../helpers/index.js';
import { makeRepo } from '../../helpers/way-back-fixture.js';

const t = tempDir('pdb-find-');
test.after(() => t.cleanup());

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    assert.ok(isPdbError(err), String(err));
    return (err as { code: string }).code;
  }
}

test('create in src/lib imports the project root (the git top level); list there finds the store and shows the source', () => {
  const repo = realpathOr(makeRepo(join(t.dir, 'proj')));
  const sub = join(repo, 'lib', 'sub');
  const env = { XDG_DATA_HOME: join(t.dir, 'data'), PDB_ENV_STORE: '' };
  const made = cliJson(['create', 'a'], { cwd: sub, env });
  assert.is(readFileSync(join(made.root, 'a.txt'), 'utf8'), 'alpha\n', 'the whole project, not lib/sub');
  const listed = cliJson(['list'], { cwd: sub, env });
  assert.equal(
    listed.sessions.map((s: { name: string; sourceDir: string }) => [s.name, s.sourceDir]),
    [['a', repo]],
  );
  const text = cli(['list'], { cwd: repo, env });
  assert.match(text.stdout, /SOURCE/);
  assert.match(text.stdout, /a\s+full-copy.*\s\.\n/);
  // A directory already imported wins over the git top level.
  assert.is(findProjectRoot(sub), repo);
});

test('short digests: a unique prefix of 7+ hex is accepted; E_DIGEST_UNKNOWN and E_DIGEST_AMBIGUOUS otherwise', async () => {
  const src = makeRepo(join(t.dir, 'short/src'));
  const svc = await SessionService.open(join(t.dir, 'short/store'), { create: true });
  const s = await svc.create('s', { from: src });
  const head = await svc.envHead('main');
  writeFileSync(join(s.root, 'a.txt'), 'changed\n');
  const cp = await svc.checkpoint('s');
  assert.is((await svc.publish('s', 'main', head.slice(7, 14))).head, cp.snapshot);
  assert.is((await svc.create('b', { base: cp.snapshot.slice(0, 20) as never })).base, cp.snapshot);
  assert.is((await svc.pin(`sha256:${cp.snapshot.slice(7, 17)}`)).digest, cp.snapshot);
  assert.is(await code(svc.publish('s', 'main', '0000000')), 'E_DIGEST_UNKNOWN');
  assert.is(await code(svc.publish('s', 'main', 'abc')), 'E_USAGE');
  const dir = join(svc.store.paths.objects, 'ab');
  mkdirSync(dir, { recursive: true });
  for (const tail of ['1', '2']) writeFileSync(join(dir, `cdef01${tail.repeat(56)}`), 'x');
  assert.is(await code(svc.pin('abcdef0')), 'E_DIGEST_AMBIGUOUS');
});

test('create --fork OTHER: from its last checkpoint, with its source; E_USAGE before it has one', async () => {
  const src = makeRepo(join(t.dir, 'fork/src'));
  const svc = await SessionService.open(join(t.dir, 'fork/store'), { create: true });
  const a = await svc.create('a', { from: src });
  assert.is(await code(svc.create('f0', { fork: 'a' })), 'E_USAGE');
  writeFileSync(join(a.root, 'forked.txt'), 'from a\n');
  const cp = await svc.checkpoint('a');
  const f = await svc.create('f', { fork: 'a' });
  assert.is(f.base, cp.snapshot);
  assert.is(readFileSync(join(f.root, 'forked.txt'), 'utf8'), 'from a\n');
  const rec = await svc.readSession('f');
  assert.is(rec.sourceDir, (await svc.readSession('a')).sourceDir);
  // export --git of the fork carries a's change too (from the import at HEAD).
  writeFileSync(join(f.root, 'more.txt'), 'from f\n');
  await svc.checkpoint('f');
  const g = await svc.exportGit('f');
  const { gitRun } = await import('../../helpers/way-back-fixture.js');
  assert.equal(
    gitRun(src, ['diff', '--name-only', `${g.parent}`, g.commit])
      .trim()
      .split('\n'),
    ['forked.txt', 'more.txt'],
  );
});

test("read-only commands make no store; create below another store's source says which store and why, and refuses (issue 41)", () => {
  const top = join(t.dir, 't10');
  const proj = join(top, 'proj');
  mkdirSync(proj, { recursive: true });
  writeFileSync(join(top, 'secret'), 'not for the session\n');
  writeFileSync(join(proj, 'p.txt'), 'p\n');
  const data = join(t.dir, 'data-t10');
  const env = { XDG_DATA_HOME: data, PDB_ENV_STORE: '' };
  for (const args of [['backends'], ['list'], ['doctor'], ['path', 'x'], ['du']]) {
    cli(args, { cwd: top, env });
    assert.not.ok(
      existsSync(join(data, 'pdb-env', 'stores')) && readdirSync(join(data, 'pdb-env', 'stores')).length > 0,
      `${args[0]} made a store`,
    );
  }
  const backends = cliJson<{ backends: Array<{ name: string }> }>(['backends'], { cwd: top, env });
  assert.ok(
    backends.backends.some((b) => b.name === 'full-copy'),
    'backends still probes without a store',
  );
  // A store made for t10 (as a create there makes it), then a create in t10/proj:
  cliJson(['create', 'whole', '--from', top], { cwd: top, env });
  const refused = cli(['create', 'p'], { cwd: proj, env });
  assert.is(refused.code, 2, refused.stdout); // E_USAGE
  assert.match(refused.stderr, 'E_USAGE');
  assert.match(refused.stderr, /would import .*t10 .*store .* made for it/);
  const mine = cliJson<{ root: string }>(['create', 'p', '--from', proj], { cwd: proj, env });
  assert.not.ok(existsSync(join(mine.root, 'secret')), 'only the directory asked for');
  assert.ok(existsSync(join(mine.root, 'p.txt')));
});

test.run();
