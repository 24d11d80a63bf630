// Policy documents: validated against schemas/policy.schema.json (the one strict ajv setup of
// model/schema-validator.ts) before any receipt is read, so a typo in a policy fails at once with
// the field it is about.
import { PdbError } from '../../model/errors.js';
import { assertSchema, loadSchema } from '../../model/schema-validator.js';
import type { Policy } from './gate.js';

export function policySchema(): Record<string, unknown> {
  const schema = loadSchema('policy');
  if (!schema)
    throw new PdbError('E_SCHEMA_INVALID', 'schemas/policy.schema.json is not installed', {
      hint: 'Reinstall pdb-env; the schemas ship in its package.',
    });
  return schema;
}

/** Check a parsed policy document; throws E_POLICY_INVALID naming every offending field. */
export function validatePolicy(doc: unknown, source = 'policy'): Policy {
  return assertSchema<Policy>('policy', doc, {
    code: 'E_POLICY_INVALID',
    what: source,
    hint: 'Fix the listed fields; policies/*.json are valid examples.',
    limit: Infinity,
  });
}
