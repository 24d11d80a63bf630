// The receipt contract is written twice: harness/receipt/receipt-types.ts (for the code) and
// schemas/receipt.schema.json (for every other reader). This test holds them to one another: the
// same fields in every record of schema version 2, and the same one-line description on each.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadSchema } from '../../../model/schemas.js';
import { REPO_ROOT } from '../../helpers/index.js';

type S = Record<string, any>;

/** Interface name -> JSON pointer of its object schema in receipt.schema.json. */
const MIRRORS: Record<string, string> = {
  Receipt: '/$defs/receiptV2',
  Provenance: '/$defs/provenance',
  HostFingerprint: '/$defs/hostFingerprint',
  BackendCapabilities: '/$defs/backendAvailability/properties/capabilities',
  BackendAvailability: '/$defs/backendAvailability',
  PhaseRecord: '/$defs/phaseRecord',
  CheckReference: '/$defs/checkReference',
  SideCounts: '/$defs/sideCounts',
  CheckRecord: '/$defs/checkRecord',
  FailureRecord: '/$defs/failureRecord',
  FixtureRecord: '/$defs/fixtureRecord',
  VolatileDrop: '/$defs/volatileDrop',
  ProjectionRecord: '/$defs/projectionRecord',
  CaseRecord: '/$defs/caseRecord',
  AgentRecord: '/$defs/agentRecord',
  HarnessPhaseMemory: '/$defs/harnessPhaseMemory',
  HarnessMemory: '/$defs/harnessMemory',
  BlockRecord: '/$defs/blockRecord',
  ReceiptSummary: '/$defs/receiptSummary',
  WorkloadOverhead: '/$defs/workloadOverhead',
};

/** Records receipt-types.ts re-exports from the layer that fills them, and the file that defines them (with their doc comments). */
const DEFINED_BELOW: Record<string, string> = { AgentRecord: 'workloads/types.ts' };

/** Every interface of a TypeScript file: its members' names and their one-line doc comments. */
function interfaces(file: string): Map<string, Map<string, string | null>> {
  return interfaceDetails(file).docs;
}

/** The same, plus each interface's optional (`?`) members. */
function interfaceDetails(file: string): { docs: Map<string, Map<string, string | null>>; optional: Map<string, Set<string>> } {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const out = new Map<string, Map<string, string | null>>();
  const optional = new Map<string, Set<string>>();
  sf.forEachChild((node) => {
    if (!ts.isInterfaceDeclaration(node)) return;
    const members = new Map<string, string | null>();
    const opt = new Set<string>();
    for (const m of node.members) {
      if (!ts.isPropertySignature(m)) continue;
      if (m.questionToken) opt.add(m.name.getText(sf));
      const doc = ts
        .getJSDocCommentsAndTags(m)
        .filter(ts.isJSDoc)
        .map((d) => ts.getTextOfJSDocComment(d.comment) ?? '')
        .join(' ')
        .replace(/\s+/g, ' ')
        .trim();
      members.set(m.name.getText(sf), doc || null);
    }
    out.set(node.name.text, members);
    optional.set(node.name.text, opt);
  });
  return { docs: out, optional };
}

function at(schema: S, pointer: string): S {
  return pointer
    .split('/')
    .slice(1)
    .reduce((s: S, k) => s[k], schema);
}

/** A property's description: its own, or that of the definition it refers to. */
function description(schema: S, prop: S): string | undefined {
  if (typeof prop.description === 'string') return prop.description;
  if (typeof prop.$ref === 'string') return at(schema, prop.$ref.slice(1)).description;
  return undefined;
}

test('every version 2 record has the same fields, each with the same description, in the types and the schema', () => {
  const schema = loadSchema('receipt') as S;
  const { docs: types, optional } = interfaceDetails(join(REPO_ROOT, 'harness', 'receipt', 'receipt-types.ts'));
  const problems: string[] = [];
  for (const [name, pointer] of Object.entries(MIRRORS)) {
    const below = DEFINED_BELOW[name];
    const home = below ? interfaceDetails(join(REPO_ROOT, below)) : { docs: types, optional };
    const members = home.docs.get(name);
    const opt = home.optional.get(name);
    const def = at(schema, pointer);
    if (!members) {
      problems.push(`${name}: no such interface`);
      continue;
    }
    const props: S = def.properties ?? {};
    const tsNames = [...members.keys()].sort();
    const schemaNames = Object.keys(props).sort();
    if (JSON.stringify(tsNames) !== JSON.stringify(schemaNames))
      problems.push(`${name}: fields differ (types ${tsNames.join(', ')}; schema ${schemaNames.join(', ')})`);
    for (const [field, doc] of members) {
      if (!props[field]) continue;
      const want = description(schema, props[field]);
      if (doc === null) problems.push(`${name}.${field}: no doc comment (schema says "${want}")`);
      else if (doc !== want) problems.push(`${name}.${field}: "${doc}" in the types, "${want}" in the schema`);
    }
    // A field optional in the types (`?`) is not required by the schema; every other field is.
    const required = [...(def.required ?? [])].sort();
    const mustRequire = schemaNames.filter((f) => !opt?.has(f));
    if (JSON.stringify(required) !== JSON.stringify(mustRequire))
      problems.push(`${name}: the schema requires ${required.join(', ')}; the types make required ${mustRequire.join(', ')}`);
  }
  assert.equal(problems, []);
});

test('a record defined below the harness is the one receipt-types.ts re-exports', () => {
  const text = readFileSync(join(REPO_ROOT, 'harness', 'receipt', 'receipt-types.ts'), 'utf8');
  for (const [name, home] of Object.entries(DEFINED_BELOW)) {
    const spec = `../../${home.replace(/\.ts$/, '.js')}`;
    assert.ok(new RegExp(`export type \\{[^}]*\\b${name}\\b[^}]*\\} from '${spec}'`).test(text), `${name} re-exported from ${spec}`);
    assert.not.ok(interfaces(join(REPO_ROOT, 'harness', 'receipt', 'receipt-types.ts')).has(name), `${name} defined twice`);
  }
});

test('the mirror check can fail: a renamed field or a changed description is seen', () => {
  const schema = loadSchema('receipt') as S;
  const prop = schema.$defs.provenance.properties.commit;
  assert.is(description(schema, prop), 'Git commit of the pdb-env checkout when the run started; null outside a git checkout.');
  const types = interfaces(join(REPO_ROOT, 'harness', 'receipt', 'receipt-types.ts'));
  assert.is(types.get('Provenance')!.get('commit'), prop.description);
  assert.not.ok(types.get('Provenance')!.has('dirtyAtEnd'));
});

test.run();
