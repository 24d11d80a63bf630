// The JSON Schemas under the package's schemas/ dir, by name, compiled by one ajv instance in
// strict mode (JSON Schema 2020-12, with ajv-formats). Every layer that validates a document
// (plans, receipts, policies, Snapshots, Changesets, workspace policies, the AgentFS pin, the
// benchmark scripts' receipts, the scripted model's cassettes) validates here, and only against a name in SCHEMA_NAMES.
import { existsSync, readFileSync } from 'node:fs';
import ajv2020 from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { PdbError, type PdbErrorCode } from './errors.js';
import { packageFile } from './paths.js';

type AjvCtor = typeof ajv2020.default;
type Ajv = InstanceType<AjvCtor>;
// ajv and ajv-formats are CommonJS: under NodeNext their default export is the `default` property.
const Ajv2020: AjvCtor = (ajv2020 as unknown as { default: AjvCtor }).default;
const addFormats = (ajvFormats as unknown as { default: typeof ajvFormats.default }).default;

const SUFFIX = '.schema.json';

/** Every schema the package ships, one file each: `schemas/<name>.schema.json`. */
export const SCHEMA_NAMES = [
  'plan',
  'receipt',
  'policy',
  'snapshot',
  'changeset',
  'bench-receipt',
  'workspace-policy',
  'agentfs-config',
  'cassette',
  'signers',
] as const;
export type SchemaName = (typeof SCHEMA_NAMES)[number];

export function isSchemaName(name: string): name is SchemaName {
  return (SCHEMA_NAMES as readonly string[]).includes(name);
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
    case 'pdb-env-cassette':
      return 'cassette';
    case 'pdb-env-signers':
      return 'signers';
    default:
      break;
  }
  if ('entries' in d && 'excludes' in d) return 'snapshot';
  if ('changes' in d && 'result' in d) return 'changeset';
  if ('workloads' in d && 'backends' in d && 'blocks' in d) return 'plan';
  if ('cases' in d && 'host' in d) return 'receipt';
  return null;
}

export interface SchemaIssue {
  /** JSON pointer into the document ("" is the root). */
  pointer: string;
  message: string;
}

/** The file of schema `name`: `<package>/schemas/<name>.schema.json`. */
export function schemaFile(name: SchemaName): string {
  return packageFile('schemas', `${name}${SUFFIX}`);
}

export function hasSchema(name: SchemaName): boolean {
  return existsSync(schemaFile(name));
}

/** The schema document, or null when it is not installed. */
export function loadSchema(name: SchemaName): Record<string, unknown> | null {
  const file = schemaFile(name);
  if (!existsSync(file)) return null;
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

interface Registry {
  ajv: Ajv;
  /** Schemas that did not compile, by name, with ajv's reason. */
  broken: Map<string, string>;
  compiled: Map<string, ValidateFunction>;
}

let registry: Registry | null = null;

/** The one ajv instance, holding every installed schema (so one may $ref another), built on first use. */
function schemas(): Registry {
  if (registry) return registry;
  // strict: unknown keywords, ambiguous types and missing `type` next to type keywords are errors.
  // Union types ("string" | "null") are part of our contract, so they are allowed explicitly.
  const ajv = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
  addFormats(ajv);
  const broken = new Map<string, string>();
  for (const name of SCHEMA_NAMES) {
    if (!hasSchema(name)) continue;
    try {
      ajv.addSchema(loadSchema(name)!);
    } catch (err) {
      // A broken schema must not take the others down; validating against it reports this.
      broken.set(name, (err as Error).message);
    }
  }
  registry = { ajv, broken, compiled: new Map() };
  return registry;
}

function validator(name: SchemaName): ValidateFunction {
  const r = schemas();
  const known = r.compiled.get(name);
  if (known) return known;
  const broken = r.broken.get(name);
  if (broken) throw new PdbError('E_SCHEMA_INVALID', `schemas/${name}${SUFFIX} is not a valid strict JSON Schema: ${broken}`);
  const id = loadSchema(name)?.$id;
  const found = typeof id === 'string' ? r.ajv.getSchema(id) : undefined;
  if (!found)
    throw new PdbError('E_SCHEMA_INVALID', `schemas/${name}${SUFFIX} is not installed or has no $id`, {
      hint: 'Reinstall pdb-env; the schemas ship in its package.',
    });
  r.compiled.set(name, found);
  return found;
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

/**
 * How deep a JSON document pdb-env reads may nest. No document it writes comes near (a receipt is
 * about 8 levels); a deeper one is refused before anything walks it, so no reader's recursion
 * (ajv's, canonical JSON's, a report's) meets a stack overflow (issue 41: 5,000 levels crashed
 * validate with E_INTERNAL).
 */
export const MAX_JSON_DEPTH = 512;

/** The pointer of the first value nested deeper than `limit`, or null. Iterative: any depth is safe. */
export function tooDeep(doc: unknown, limit = MAX_JSON_DEPTH): string | null {
  const stack: Array<[unknown, number, string]> = [[doc, 0, '']];
  while (stack.length > 0) {
    const [v, depth, pointer] = stack.pop()!;
    if (!v || typeof v !== 'object') continue;
    if (depth >= limit) return pointer || '/';
    if (Array.isArray(v)) v.forEach((x, i) => stack.push([x, depth + 1, `${pointer}/${i}`]));
    else for (const [k, x] of Object.entries(v)) stack.push([x, depth + 1, `${pointer}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`]);
  }
  return null;
}

/** Validate a document against schemas/<name>.schema.json; the issues (empty when valid), most specific first, deduplicated. */
export function validateAgainst(name: SchemaName, doc: unknown): SchemaIssue[] {
  const deep = tooDeep(doc);
  if (deep !== null)
    return [{ pointer: deep, message: `is nested deeper than ${MAX_JSON_DEPTH} levels (the limit for any document pdb-env reads)` }];
  const v = validator(name);
  if (v(doc)) return [];
  const seen = new Set<string>();
  const out: SchemaIssue[] = [];
  // anyOf/oneOf branches repeat their inner errors, and a failed if/then says only that its "then"
  // failed after the inner errors; keep one line per pointer + message.
  for (const e of v.errors ?? []) {
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'if') continue;
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

export interface SchemaErrorOptions {
  /** The code of the error thrown when the document does not match (E_PLAN_INVALID, E_POLICY_INVALID, ...). */
  code: PdbErrorCode;
  /** What the document is, for the message ("the plan", "policy policies/x.json"). */
  what: string;
  hint?: string;
  /** How many issues the message lists (default 8). */
  limit?: number;
}

/** The document as `T` when it matches schemas/<name>.schema.json; otherwise a PdbError with `code` listing the issues. */
export function assertSchema<T>(name: SchemaName, doc: unknown, o: SchemaErrorOptions): T {
  const issues = validateAgainst(name, doc);
  if (issues.length === 0) return doc as T;
  throw new PdbError(o.code, `${o.what} does not match schemas/${name}${SUFFIX}: ${formatIssues(issues, o.limit)}`, { hint: o.hint });
}
