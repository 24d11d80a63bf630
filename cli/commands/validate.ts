import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { PdbError } from '../../model/errors.js';
import { findPathIssues } from '../../harness/receipt/path-free.js';
import { receiptInconsistencies } from '../../harness/receipt/consistency.js';
import type { Receipt } from '../../harness/receipt/receipt-types.js';
import { SCHEMA_NAMES, detectSchema, hasSchema, validateAgainst, type SchemaName } from '../../model/schemas.js';
import { loadPlanModules, planIssues, readPlanDocument, type Plan } from '../../harness/plan/plan.js';
import { planVarNames } from '../../harness/plan/plan-vars.js';
import { WORKLOADS } from '../../workloads/registry.js';
import type { Workload } from '../../workloads/types.js';
import { emit } from '../output.js';
import type { CommandDefinitions, DefineCommand } from '../context.js';

/** Plan fields that hold URL paths (an HTTP milestone, an HTTP change to observe), never file paths. */
const URL_PATH_FIELD = /\/(?:http\/path|then\/httpChange)$/;

interface FileReport {
  file: string;
  schema: SchemaName | null;
  valid: boolean;
  problems: Array<{ pointer: string; message: string }>;
  /** What does not make the document invalid but is worth knowing (a plan holding a local path). */
  warnings: Array<{ pointer: string; message: string }>;
}

/**
 * A schema-valid plan against the registries, by the very function bench uses (planIssues): a plan
 * validate calls ok is one bench runs. Its ${NAME} placeholders are listed, as bench needs their values.
 */
function planProblems(doc: unknown): { problems: FileReport['problems']; warnings: FileReport['warnings'] } {
  const plan = doc as Plan;
  const problems = planIssues(plan, WORKLOADS as Record<string, Workload>).map((i) => ({
    pointer: i.pointer,
    message: `${i.message}${i.hint ? ` (${i.hint})` : ''}`,
  }));
  const vars = planVarNames(plan);
  const warnings = vars.length
    ? [
        {
          pointer: '/workloads',
          message: `bench needs a value for ${vars.map((v) => `\${${v}}`).join(', ')}: --var NAME=VALUE (or --source DIR)`,
        },
      ]
    : [];
  return { problems, warnings };
}

export function validateFile(file: string, forced?: SchemaName): FileReport {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    return {
      file,
      schema: forced ?? null,
      valid: false,
      problems: [{ pointer: '', message: `cannot read JSON: ${(err as Error).message}` }],
      warnings: [],
    };
  }
  const schema = forced ?? detectSchema(doc);
  if (!schema)
    return {
      file,
      schema: null,
      valid: false,
      problems: [{ pointer: '', message: 'not a receipt, plan, policy, Snapshot or Changeset (no "kind" marker); pass --schema NAME' }],
      warnings: [],
    };
  if (!hasSchema(schema))
    return {
      file,
      schema,
      valid: false,
      problems: [{ pointer: '', message: `schemas/${schema}.schema.json is not installed` }],
      warnings: [],
    };
  let problems: FileReport['problems'];
  try {
    problems = validateAgainst(schema, doc).map((i) => ({ pointer: i.pointer || '/', message: i.message }));
  } catch (err) {
    problems = [{ pointer: '', message: (err as Error).message }];
  }
  const warnings: FileReport['warnings'] = [];
  // A receipt must also agree with itself: every derived field is recomputed from the cases.
  if (schema === 'receipt' && problems.length === 0 && (doc as { schemaVersion?: number }).schemaVersion !== 1) {
    for (const i of receiptInconsistencies(doc as Receipt))
      problems.push({
        pointer: i.pointer,
        message: `E_RECEIPT_INCONSISTENT: recorded ${JSON.stringify(i.recorded)}, recomputed ${JSON.stringify(i.recomputed)}`,
      });
  }
  if (schema === 'plan' && problems.length === 0) {
    const more = planProblems(doc);
    problems.push(...more.problems);
    warnings.push(...more.warnings);
  }
  // Evidence must be path-free; a plan is not evidence (it is never copied into a receipt), so a
  // local path in it is only worth a word: the plan will not run on another machine as it is.
  for (const leak of findPathIssues(doc)) {
    if (schema === 'plan' && URL_PATH_FIELD.test(leak.pointer)) continue; // "/health" is a URL path on the session's port
    if (schema === 'plan')
      warnings.push({
        pointer: leak.pointer || '/',
        message: `${leak.message}: this plan is tied to this machine; a \${NAME} placeholder keeps it shareable`,
      });
    else problems.push({ pointer: leak.pointer || '/', message: `${leak.message} (documents must be path-free)` });
  }
  return { file, schema, valid: problems.length === 0, problems, warnings };
}

const validate: DefineCommand<'validate'> = (cmd, ctx) =>
  cmd
    .argument('<file...>', 'JSON documents to check')
    .addHelpText(
      'after',
      `
Validates each JSON file against its schema (picked from its "kind": receipt, plan,
policy; or Snapshot/Changeset by shape) with ajv in strict mode, and checks that it
holds no absolute path, user name or host name. A plan is also checked against the
backend and workload registries exactly as bench checks it (workload names, each
workload's parameters); a local path in a plan is a note, not an error (plans are not
evidence), and its \${NAME} placeholders are listed. Every problem names the JSON
pointer that failed. Exit status 1 when any file is invalid.

Schemas: ${SCHEMA_NAMES.join(', ')}.

Example:
  pdb-env validate receipts/*.json plans/default.json`,
    )
    .action(async (files, _o, command) => {
      const o = command.optsWithGlobals();
      const forced = o.schema;
      if (forced !== undefined && !(SCHEMA_NAMES as readonly string[]).includes(forced)) {
        throw new PdbError('E_USAGE', `--schema must be one of ${SCHEMA_NAMES.join(', ')}, got "${forced}"`);
      }
      // A plan's backend modules are loaded first, as bench loads them: the plan may name their backends.
      const moduleProblems = new Map<string, string>();
      for (const f of files) {
        const doc = readPlanDocument(f);
        if ((doc as { kind?: unknown } | null)?.kind !== 'pdb-env-plan') continue;
        await loadPlanModules(doc, dirname(resolve(f))).catch((err: Error) => moduleProblems.set(f, err.message));
      }
      const reports = files.map((f) => {
        const r = validateFile(f, forced as SchemaName | undefined);
        const problem = moduleProblems.get(f);
        return problem ? { ...r, valid: false, problems: [{ pointer: '/backendModules', message: problem }, ...r.problems] } : r;
      });
      emit(o.json === true, { valid: reports.every((r) => r.valid), files: reports }, () =>
        reports
          .map(
            (r) =>
              (r.valid
                ? `ok       ${r.file} (${r.schema})`
                : `INVALID  ${r.file}${r.schema ? ` (${r.schema})` : ''}\n${r.problems.map((p) => `  ${p.pointer} ${p.message}`).join('\n')}`) +
              r.warnings.map((w) => `\n  note: ${w.pointer} ${w.message}`).join(''),
          )
          .join('\n'),
      );
      ctx.exitCode = reports.every((r) => r.valid) ? 0 : 1;
    });

export const commands: CommandDefinitions<'validate'> = { validate };
