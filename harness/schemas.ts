// The harness's schemas by name (plan, receipt, policy, snapshot, changeset, and the benchmark
// scripts' bench-receipt), and which one a document claims. Loading and validating is model/schema-validator.ts (one strict ajv for all).
import * as validator from '../model/schema-validator.js';
import type { SchemaIssue } from '../model/schema-validator.js';

export { formatIssues, type SchemaIssue } from '../model/schema-validator.js';

export const SCHEMA_NAMES = ['plan', 'receipt', 'policy', 'snapshot', 'changeset', 'bench-receipt'] as const;
export type SchemaName = (typeof SCHEMA_NAMES)[number];

/** The schema document, or null when it is not installed. */
export function loadSchema(name: SchemaName): Record<string, unknown> | null {
  return validator.loadSchema(name);
}

export function hasSchema(name: SchemaName): boolean {
  return validator.hasSchema(name);
}

/** Validate a document; returns the issues (empty when valid), most specific first, deduplicated. */
export function validateAgainst(name: SchemaName, doc: unknown): SchemaIssue[] {
  return validator.validateAgainst(name, doc);
}

/** Which schema a document claims by its `kind` marker or shape; null when it is none of ours. */
export function detectSchema(doc: unknown): SchemaName | null {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return null;
  const d = doc as Record<string, unknown>;
  switch (d.kind) {
    case 'pdb-env-receipt':
      return 'receipt';
    case 'pdb-env-plan':
      return 'plan';
    case 'pdb-env-policy':
      return 'policy';
    case 'pdb-env-bench-receipt':
      return 'bench-receipt';
    default:
      break;
  }
  if ('entries' in d && 'excludes' in d) return 'snapshot';
  if ('changes' in d && 'result' in d) return 'changeset';
  if ('workloads' in d && 'backends' in d && 'blocks' in d) return 'plan';
  if ('cases' in d && 'host' in d) return 'receipt';
  return null;
}
