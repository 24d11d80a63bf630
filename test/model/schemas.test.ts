// One strict ajv over the package's schemas/: documents are validated by schema name, a schema
// may $ref another, and a mismatch becomes the caller's typed error listing the JSON pointers.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isPdbError, PdbError } from '../../model/errors.js';
import { readdirSync } from 'node:fs';
import { packageFile } from '../../model/paths.js';
import {
  SCHEMA_NAMES,
  assertSchema,
  formatIssues,
  hasSchema,
  loadSchema,
  schemaFile,
  validateAgainst,
  type SchemaName,
} from '../../model/schemas.js';

const digest = `sha256:${'0'.repeat(64)}`;
const entry = { path: 'a.txt', kind: 'file', digest, size: 1, exec: false };

test('schemas are found in the package by name', () => {
  assert.ok(schemaFile('plan').endsWith('/schemas/plan.schema.json'));
  assert.ok(hasSchema('receipt'));
  assert.not.ok(hasSchema('no-such' as SchemaName));
  assert.is(loadSchema('no-such' as SchemaName), null);
  assert.is(loadSchema('policy')?.$id, 'https://pdb-env.dev/schemas/policy.schema.json');
});

test('the registry names every schema the package ships, and each compiles', () => {
  const files = readdirSync(packageFile('schemas'))
    .filter((f) => f.endsWith('.schema.json'))
    .map((f) => f.slice(0, -'.schema.json'.length))
    .sort();
  assert.equal([...SCHEMA_NAMES].sort(), files);
  for (const name of SCHEMA_NAMES) assert.ok(Array.isArray(validateAgainst(name, {})), name);
});

test('a schema that $refs another validates (changeset -> snapshot)', () => {
  const cs = { version: 1, base: digest, result: digest, changes: [{ path: 'a.txt', kind: 'add', before: null, after: entry }] };
  const issues = validateAgainst('changeset', cs);
  if (issues.length) assert.unreachable(formatIssues(issues));
  assert.ok(validateAgainst('changeset', { ...cs, changes: [{ ...cs.changes[0], path: '../out' }] }).length > 0);
});

test('issues name the JSON pointer; assertSchema throws the caller’s code with them', () => {
  const issues = validateAgainst('policy', { kind: 'pdb-env-policy', surprise: 1 });
  assert.ok(issues.some((i) => i.pointer === '/surprise' && /not allowed/.test(i.message)));
  assert.ok(issues.some((i) => i.pointer === '' && /missing required property "candidate"/.test(i.message)));
  try {
    assertSchema('policy', { kind: 'pdb-env-policy', surprise: 1 }, { code: 'E_POLICY_INVALID', what: 'policy x.json', hint: 'fix it' });
    assert.unreachable('an invalid document was accepted');
  } catch (err) {
    assert.ok(isPdbError(err, 'E_POLICY_INVALID'), String(err));
    assert.match((err as PdbError).message, /^policy x\.json does not match schemas\/policy\.schema\.json: .*\/surprise/);
    assert.is((err as PdbError).hint, 'fix it');
  }
  const doc = { kind: 'pdb-env-plan' };
  assert.throws(
    () => assertSchema('plan', doc, { code: 'E_PLAN_INVALID', what: 'the plan' }),
    (e: unknown) => isPdbError(e, 'E_PLAN_INVALID'),
  );
});

test('a schema that is not installed is E_SCHEMA_INVALID, not a crash', () => {
  assert.throws(
    () => validateAgainst('no-such' as SchemaName, {}),
    (e: unknown) => isPdbError(e, 'E_SCHEMA_INVALID'),
  );
});

test.run();
