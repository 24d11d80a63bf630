// check-path through the CLI: src/a.ts writable with a rule; node_modules/x/index.js not writable;
// .env not readable; ../outside.txt never allowed (nor an absolute path outside the root); the
// pdb-env.json policy of the session applies and --policy narrows it; a bad policy is E_POLICY_INVALID.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, cliJson, tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());
const src = join(t.dir, 'src');
writeTree(src, { src: { 'a.ts': 'export {};\n' }, '.github': { 'ci.yml': 'on: push\n' } });
const env = { PDB_ENV_STORE: join(t.dir, 'store') };
cliJson(['create', 's', '--from', src], { env });
const root = cli(['path', 's'], { env }).stdout.trim();

const check = (...args: string[]) => cli(['check-path', 's', ...args, '--json'], { env });

test('the Done-when paths', () => {
  const ok = check('src/a.ts', '--write');
  assert.is(ok.code, 0, ok.stderr);
  assert.equal(JSON.parse(ok.stdout), {
    session: 's',
    path: 'src/a.ts',
    access: 'write',
    allowed: true,
    rule: 'default:write /',
    resolved: 'src/a.ts',
  });
  const nm = check('node_modules/x/index.js', '--write');
  assert.is(nm.code, 1);
  assert.equal(JSON.parse(nm.stdout).rule, 'default:never-writable node_modules');
  const env1 = check('.env');
  assert.is(env1.code, 1);
  assert.equal(JSON.parse(env1.stdout), {
    session: 's',
    path: '.env',
    access: 'read',
    allowed: false,
    rule: 'default:credential .env',
    resolved: '.env',
  });
  for (const p of ['../outside.txt', join(t.dir, 'outside.txt'), `${root}/../outside.txt`])
    for (const w of [[], ['--write']]) {
      const r = check(p, ...w);
      assert.is(r.code, 1, p);
      assert.is(JSON.parse(r.stdout).allowed, false, p);
    }
  assert.is(check(join(root, 'src/a.ts'), '--write').code, 0, 'an absolute path inside the root');
  const text = cli(['check-path', 's', 'node_modules/x/index.js', '--write'], { env });
  assert.is(text.stdout.trim(), 'denied  write default:never-writable node_modules\tnode_modules/x/index.js');
});

test("the session's pdb-env.json policy applies; --policy narrows it; a bad one is E_POLICY_INVALID", () => {
  assert.is(check('.github/ci.yml').code, 1);
  writeFileSync(join(root, 'pdb-env.json'), JSON.stringify({ policy: { allowHidden: ['.github'] } }));
  const hidden = check('.github/ci.yml');
  assert.is(hidden.code, 0, hidden.stdout);
  assert.is(JSON.parse(hidden.stdout).rule, 'pdb-env.json:read /');
  const narrow = join(t.dir, 'narrow.json');
  writeFileSync(narrow, JSON.stringify({ write: ['docs'] }));
  assert.is(check('src/a.ts', '--write', '--policy', narrow).code, 1, 'narrowed');
  assert.match(JSON.parse(check('src/a.ts', '--write', '--policy', narrow).stdout).rule, /narrow\.json:no-write-scope/);
  writeFileSync(narrow, JSON.stringify({ writable: ['/'] }));
  const bad = check('src/a.ts', '--policy', narrow);
  assert.is(bad.code, 1);
  assert.match(bad.stdout, /E_POLICY_INVALID/);
});

test('links inside the root are resolved as the ACP client resolves them, and the resolved path is reported', () => {
  symlinkSync('/etc', join(root, 'etclink'));
  writeFileSync(join(root, '.env'), 'SECRET=1\n');
  symlinkSync('.env', join(root, 'envlink'));
  mkdirSync(join(root, 'node_modules/x'), { recursive: true });
  writeFileSync(join(root, 'node_modules/x/index.js'), '');
  symlinkSync('node_modules/x', join(root, 'nmlink'));
  symlinkSync('src', join(root, 'srclink'));
  const out = check('etclink/passwd');
  assert.is(out.code, 1, out.stdout);
  assert.is(JSON.parse(out.stdout).allowed, false);
  assert.match(JSON.parse(out.stdout).rule, /outside-root/);
  // (the test before gave the root a pdb-env.json policy: the rules are its)
  const envl = JSON.parse(check('envlink').stdout);
  assert.equal([envl.allowed, envl.rule, envl.resolved], [false, 'pdb-env.json:credential .env', '.env']);
  const nm = JSON.parse(check('nmlink/index.js', '--write').stdout);
  assert.equal([nm.allowed, nm.rule, nm.resolved], [false, 'pdb-env.json:never-writable node_modules', 'node_modules/x/index.js']);
  const ok = JSON.parse(check('srclink/a.ts', '--write').stdout);
  assert.equal([ok.allowed, ok.resolved], [true, 'src/a.ts']);
  const text = cli(['check-path', 's', 'envlink'], { env });
  assert.match(text.stdout, /denied  read  pdb-env\.json:credential \.env\tenvlink -> \.env/);
});

test.run();
