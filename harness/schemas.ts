// The JSON Schemas under schemas/, compiled once with ajv in strict mode (JSON Schema 2020-12).
// Everything that writes or reads a plan, receipt, policy, Snapshot or Changeset validates here.
import { existsSync, readFileSync } from 'node:fs';
import ajv2020 from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { PdbError } from '../model/errors.js';

type AjvCtor = typeof ajv2020.default;
// ajv and ajv-formats are CommonJS: under NodeNext their default export is the `default` property.
const Ajv2020: AjvCtor = (ajv2020 as unknown as { default: AjvCtor }).default;
const addFormats = (ajvFormats as unknown as { default: typeof ajvFormats.default }).default;

export const SCHEMA_NAMES = ['plan', 'receipt', 'policy', 'snapshot', 'changeset'] as const;
export type SchemaName = (typeof SCHEMA_NAMES)[number];

export const SCHEMAS_DIR = new URL('../../schemas/', import.meta.url);

export interface SchemaIssue {
  /** JSON pointer into the document ("" is the root). */
  pointer: string;
  message: string;
}

let ajvInstance: InstanceType<AjvCtor> | null = null;
const compiled = new Map<SchemaName, ValidateFunction>();
const schemaErrors = new Map<SchemaName, string>();

function ajv(): InstanceType<AjvCtor> {
  if (ajvInstance) return ajvInstance;
  // strict: unknown keywords, ambiguous types and missing `type` next to type keywords are errors.
  // Union types ("string" | "null") are part of our contract, so they are allowed explicitly.
  ajvInstance = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
  addFormats(ajvInstance);
  for (const name of SCHEMA_NAMES) {
    const schema = loadSchema(name);
    if (!schema) continue;
    try {
      ajvInstance.addSchema(schema);
    } catch (err) {
      // A broken schema must not take the others down; validating against it reports this.
      schemaErrors.set(name, (err as Error).message);
    }
  }
  return ajvInstance;
}

export function schemaPath(name: SchemaName): URL {
  return new URL(`${name}.schema.json`, SCHEMAS_DIR);
}

/** The schema document, or null when it is not installed (policy belongs to the reports layer). */
export function loadSchema(name: SchemaName): Record<string, unknown> | null {
  const url = schemaPath(name);
  if (!existsSync(url)) return null;
  return JSON.parse(readFileSync(url, 'utf8')) as Record<string, unknown>;
}

export function hasSchema(name: SchemaName): boolean {
  return existsSync(schemaPath(name));
}

function validator(name: SchemaName): ValidateFunction {
  let v = compiled.get(name);
  if (!v) {
    const a = ajv();
    const id = loadSchema(name)?.$id;
    const broken = schemaErrors.get(name);
    if (broken) throw new PdbError('E_SCHEMA_INVALID', `schemas/${name}.schema.json is not a valid strict JSON Schema: ${broken}`);
    const found = typeof id === 'string' ? a.getSchema(id) : undefined;
    if (!found)
      throw new PdbError('E_SCHEMA_INVALID', `schemas/${name}.schema.json is not installed or has no $id`, {
        hint: 'Reinstall pdb-env; the schemas ship in its package.',
      });
    v = found;
    compiled.set(name, v);
  }
  return v;
}

function describe(e: ErrorObject): SchemaIssue {
  const pointer = e.instancePath;
  switch (e.keyword) {
    case 'additionalProperties':
      return {
        pointer: `${pointer}/${String((e.params as { additionalProperty: string }).additionalProperty)}`,
        message: 'is not allowed here (no additional properties)',
      };
    case 'required':
      return { pointer, message: `is missing required property "${String((e.params as { missingProperty: string }).missingProperty)}"` };
    case 'enum':
      return { pointer, message: `must be one of ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}` };
    case 'const':
      return { pointer, message: `must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}` };
    default:
      return { pointer, message: e.message ?? e.keyword };
  }
}

/** Validate a document; returns the issues (empty when valid), most specific first, deduplicated. */
export function validateAgainst(name: SchemaName, doc: unknown): SchemaIssue[] {
  const v = validator(name);
  if (v(doc)) return [];
  const seen = new Set<string>();
  const out: SchemaIssue[] = [];
  // anyOf/oneOf branches repeat their inner errors; keep one line per pointer + message.
  for (const e of v.errors ?? []) {
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf') continue;
    const issue = describe(e);
    const key = `${issue.pointer} ${issue.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(issue);
    }
  }
  if (out.length === 0) for (const e of v.errors ?? []) out.push(describe(e));
  return out.sort((a, b) => b.pointer.length - a.pointer.length);
}

export function formatIssues(issues: SchemaIssue[], limit = 8): string {
  const lines = issues.slice(0, limit).map((i) => `${i.pointer || '/'} ${i.message}`);
  if (issues.length > limit) lines.push(`... and ${issues.length - limit} more`);
  return lines.join('; ');
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
    default:
      break;
  }
  if ('entries' in d && 'excludes' in d) return 'snapshot';
  if ('changes' in d && 'result' in d) return 'changeset';
  if ('workloads' in d && 'backends' in d && 'blocks' in d) return 'plan';
  if ('cases' in d && 'host' in d) return 'receipt';
  return null;
}
