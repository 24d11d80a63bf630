// The workspace policy's semantics: ordinary paths read-write; hidden and credential paths denied
// unless allowed; never-writable directories at any depth; deny beats allow; scopes are literal,
// case-insensitive prefixes; '..', NUL and backslashes fail closed; composing only narrows.
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkOne, checkPath, defaultPolicy, parsePolicy, type WorkspacePolicyDoc } from '../../model/workspace-policy.js';

const def = defaultPolicy();
const read = (p: string, pol = def) => checkOne(pol, p, 'read');
const write = (p: string, pol = def) => checkOne(pol, p, 'write');

test('ordinary paths are readable and writable, with the rule that allowed them', () => {
  assert.equal(write('src/a.ts'), { allowed: true, rule: 'default:write /' });
  assert.equal(read('/workspace/src/a.ts'), { allowed: true, rule: 'default:read /' });
  assert.is(write('./README.md').allowed, true);
});

test('dependency and build directories are never writable at any depth, but readable', () => {
  assert.equal(write('node_modules/x/index.js'), { allowed: false, rule: 'default:never-writable node_modules' });
  assert.is(write('packages/app/Node_Modules/y.js').allowed, false, 'case-insensitive');
  for (const d of ['target/debug/x', 'a/dist/b.js', '.next/cache/x']) assert.is(write(d).allowed, false, d);
  assert.is(read('node_modules/x/index.js').allowed, true);
  const opened = parsePolicy({ write: ['node_modules'] }, 'p.json');
  assert.is(write('node_modules/x.js', opened).allowed, false, 'no allow opens them');
});

test('hidden and credential paths are denied unless allowed; allowSensitive is the stronger opt-in', () => {
  assert.equal(read('.env'), { allowed: false, rule: 'default:credential .env' });
  for (const p of [
    '.env.local',
    'app/.npmrc',
    '.netrc',
    'keys/id_ed25519',
    'certs/server.pem',
    'tls/x.key',
    '.aws/credentials',
    'h/.ssh/config',
  ])
    assert.is(read(p).allowed, false, p);
  assert.equal(read('.github/workflows/ci.yml'), { allowed: false, rule: 'default:hidden .github' });
  const pol = parsePolicy({ allowHidden: ['.github'], allowSensitive: ['config/.env.example'] }, 'pdb-env.json');
  assert.is(read('.github/workflows/ci.yml', pol).allowed, true);
  assert.is(read('.GitHub/x', pol).allowed, true, 'scopes compare case-insensitively');
  assert.is(read('.env', pol).allowed, false, 'allowHidden does not open a credential');
  assert.is(read('config/.env.example', pol).allowed, true);
  assert.is(parsePolicy({ allowHidden: ['.env'] }, 'x').doc.allowHidden.length, 1);
  assert.is(read('.env', parsePolicy({ allowHidden: ['.env'] }, 'x')).allowed, false, 'a credential needs allowSensitive');
});

test('deny beats allow; scopes are literal prefixes of whole components', () => {
  const pol = parsePolicy({ write: ['generated'], denyWrite: ['generated/locked'] }, 'p');
  assert.is(write('generated/report.md', pol).allowed, true);
  assert.equal(write('generated/locked/a', pol), { allowed: false, rule: 'p:denyWrite generated/locked' });
  assert.is(write('other/generated/report.md', pol).allowed, false, 'not a glob');
  assert.is(write('generatedX/a', pol).allowed, false, 'whole components');
  assert.is(read('other/x', pol).allowed, true, 'read defaults to everything ordinary');
  const deny = parsePolicy({ denyRead: ['secret'] }, 'p');
  assert.is(read('SECRET/a', deny).allowed, false);
  assert.is(write('secret/a', deny).allowed, false, 'not readable: not writable');
});

test("'..', NUL and backslashes fail closed", () => {
  for (const p of ['../outside.txt', 'src/../../x', 'a\0b', 'src\\a.ts', '/workspace/../etc/passwd']) {
    assert.is(read(p).allowed, false, JSON.stringify(p));
    assert.is(write(p).allowed, false, JSON.stringify(p));
    assert.match(read(p).rule, /unsafe-path/);
  }
});

test('a policy document is checked against the schema', () => {
  assert.throws(() => parsePolicy({ writable: ['/'] }, 'bad.json'), /E_POLICY_INVALID|workspace-policy/);
  assert.throws(() => parsePolicy({ write: ['../x'] }, 'bad.json'), /workspace-policy/);
});

const segment = fc.constantFrom('src', 'a.ts', '.env', '.github', 'node_modules', 'dist', 'x', 'id_rsa', 'Gen', 'gen', '..', 'k.pem');
const pathArb = fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join('/'));
const scopes = fc.array(pathArb, { maxLength: 3 });
const docArb: fc.Arbitrary<WorkspacePolicyDoc> = fc.record(
  { read: scopes, write: scopes, denyRead: scopes, denyWrite: scopes, allowHidden: scopes, allowSensitive: scopes },
  { requiredKeys: [] },
);

test('composing policies only narrows: compose(a, b) never allows what a or b denies', () => {
  fc.assert(
    fc.property(docArb, docArb, pathArb, fc.constantFrom('read' as const, 'write' as const), (da, db, path, access) => {
      const safe = (d: WorkspacePolicyDoc) =>
        Object.fromEntries(Object.entries(d).map(([k, v]) => [k, (v as string[]).filter((s) => !s.split('/').includes('..'))]));
      const a = parsePolicy(safe(da), 'a');
      const b = parsePolicy(safe(db), 'b');
      const both = checkPath([a, b], path, access);
      if (!checkOne(a, path, access).allowed || !checkOne(b, path, access).allowed) return both.allowed === false;
      return both.allowed === true;
    }),
    { numRuns: 500 },
  );
});

test.run();
