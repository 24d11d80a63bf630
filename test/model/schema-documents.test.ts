import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadSchema, validateAgainst } from '../../model/schemas.js';

type S = Record<string, any>;

/** Walk a schema; report objects without additionalProperties and properties without a description. */
function audit(schema: S): string[] {
  const problems: string[] = [];
  const defs: S = schema.$defs ?? {};
  const described = (s: S): boolean =>
    typeof s.description === 'string' ||
    (typeof s.$ref === 'string' && s.$ref.startsWith('#/$defs/') && typeof defs[s.$ref.slice(8)]?.description === 'string');
  const visit = (s: S, at: string): void => {
    if (!s || typeof s !== 'object') return;
    if (s.type === 'object' && s.properties && s.additionalProperties !== false)
      problems.push(`${at}: object without additionalProperties: false`);
    for (const [k, v] of Object.entries<S>(s.properties ?? {})) {
      if (!described(v)) problems.push(`${at}/properties/${k}: no description`);
      visit(v, `${at}/properties/${k}`);
    }
    for (const key of ['items', 'additionalProperties']) if (s[key] && typeof s[key] === 'object') visit(s[key], `${at}/${key}`);
    for (const key of ['anyOf', 'oneOf', 'allOf']) for (const [i, v] of (s[key] ?? []).entries()) visit(v, `${at}/${key}/${i}`);
    for (const [k, v] of Object.entries<S>(s.$defs ?? {})) visit(v, `${at}/$defs/${k}`);
  };
  visit(schema, '');
  return problems;
}

for (const name of ['receipt', 'plan', 'snapshot', 'changeset', 'bench-receipt'] as const) {
  test(`${name} schema: additionalProperties false everywhere, a description on every field`, () => {
    const schema = loadSchema(name);
    assert.ok(schema, `${name}.schema.json exists`);
    assert.equal(audit(schema!), []);
  });
}

test('snapshot and changeset schemas accept real documents and reject bad paths', () => {
  const d = `sha256:${'0'.repeat(64)}`;
  const snap = {
    version: 1,
    base: null,
    excludes: [],
    entries: [
      { path: 'a', kind: 'dir' },
      { path: 'a/b.txt', kind: 'file', digest: d, size: 3, exec: false },
      { path: 'l', kind: 'symlink', target: '../x' },
    ],
  };
  assert.equal(validateAgainst('snapshot', snap), []);
  for (const bad of ['/abs', 'a/../b', './a', 'a//b', 'a/']) {
    const s = { ...snap, entries: [{ path: bad, kind: 'dir' }] };
    assert.ok(validateAgainst('snapshot', s).length > 0, `${bad} is rejected`);
  }
  const cs = { version: 1, base: d, result: d, changes: [{ path: 'a/b.txt', kind: 'add', before: null, after: snap.entries[1] }] };
  assert.equal(validateAgainst('changeset', cs), []);
  assert.ok(validateAgainst('changeset', { ...cs, changes: [{ ...cs.changes[0], kind: 'moved' }] }).length > 0);
});

test('the default plan is valid', async () => {
  const { readFileSync } = await import('node:fs');
  const plan = JSON.parse(readFileSync(new URL('../../../plans/default.json', import.meta.url), 'utf8'));
  assert.equal(validateAgainst('plan', plan), []);
  assert.ok(validateAgainst('plan', { ...plan, blocks: 0 }).some((i) => i.pointer === '/blocks'));
  assert.ok(validateAgainst('plan', { ...plan, backends: ['full-copy', 'NFS magic'] }).some((i) => i.pointer === '/backends/1'));
});

test.run();
