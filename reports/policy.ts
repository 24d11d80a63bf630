// Policy documents: validated against schemas/policy.schema.json (ajv, strict, draft 2020-12)
// before any receipt is read, so a typo in a policy fails at once with the field it is about.
import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { PdbError } from '../model/errors.js';
import type { Policy } from './gate.js';

/** schemas/ from dist/reports/ (compiled) or reports/ (source). */
const SCHEMA_URL = new URL(
  import.meta.url.includes('/dist/') ? '../../schemas/policy.schema.json' : '../schemas/policy.schema.json',
  import.meta.url,
);

let validator: ValidateFunction | null = null;

export function policySchema(): Record<string, unknown> {
  return JSON.parse(readFileSync(SCHEMA_URL, 'utf8')) as Record<string, unknown>;
}

function compiled(): ValidateFunction {
  if (!validator) {
    const ajv = new Ajv2020({ strict: true, allErrors: true, useDefaults: false });
    validator = ajv.compile(policySchema());
  }
  return validator;
}

/** Check a parsed policy document; throws E_POLICY_INVALID naming every offending field. */
export function validatePolicy(doc: unknown, source = 'policy'): Policy {
  const validate = compiled();
  if (validate(doc)) return doc as unknown as Policy;
  const problems = (validate.errors ?? []).map(
    (e) =>
      `${e.instancePath || '/'} ${e.message ?? 'is invalid'}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`,
  );
  throw new PdbError('E_POLICY_INVALID', `${source} does not match schemas/policy.schema.json: ${problems.join('; ')}`, {
    hint: 'Fix the listed fields; policies/*.json are valid examples.',
  });
}
