import { readFileSync } from 'node:fs';
import { PdbError } from '../../model/errors.js';
import { findPathIssues } from '../../harness/path-free.js';
import { SCHEMA_NAMES, detectSchema, hasSchema, validateAgainst, type SchemaName } from '../../harness/schemas.js';
import { emit } from '../output.js';
import type { DefineCommand } from '../program.js';

interface FileReport {
  file: string;
  schema: SchemaName | null;
  valid: boolean;
  problems: Array<{ pointer: string; message: string }>;
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
    };
  }
  const schema = forced ?? detectSchema(doc);
  if (!schema)
    return {
      file,
      schema: null,
      valid: false,
      problems: [{ pointer: '', message: 'not a receipt, plan, policy, Snapshot or Changeset (no "kind" marker); pass --schema NAME' }],
    };
  if (!hasSchema(schema))
    return { file, schema, valid: false, problems: [{ pointer: '', message: `schemas/${schema}.schema.json is not installed` }] };
  let problems: FileReport['problems'];
  try {
    problems = validateAgainst(schema, doc).map((i) => ({ pointer: i.pointer || '/', message: i.message }));
  } catch (err) {
    problems = [{ pointer: '', message: (err as Error).message }];
  }
  for (const leak of findPathIssues(doc))
    problems.push({ pointer: leak.pointer || '/', message: `${leak.message} (documents must be path-free)` });
  return { file, schema, valid: problems.length === 0, problems };
}

const validate: DefineCommand = (cmd, ctx) =>
  cmd
    .argument('<file...>', 'JSON documents to check')
    .option('--schema <name>', `force the schema: ${SCHEMA_NAMES.join(' | ')}`)
    .addHelpText(
      'after',
      `
Validates each JSON file against its schema (picked from its "kind": receipt, plan,
policy; or Snapshot/Changeset by shape) with ajv in strict mode, and checks that it
holds no absolute path, user name or host name. Every problem names the JSON
pointer that failed. Exit status 1 when any file is invalid.

Example:
  pdb-env validate receipts/*.json plans/default.json`,
    )
    .action(async (files, _o, command) => {
      const o = command.optsWithGlobals();
      const forced = o.schema;
      if (forced !== undefined && !(SCHEMA_NAMES as readonly string[]).includes(forced)) {
        throw new PdbError('E_USAGE', `--schema must be one of ${SCHEMA_NAMES.join(', ')}, got "${forced}"`);
      }
      const reports = files.map((f) => validateFile(f, forced as SchemaName | undefined));
      emit(o.json === true, { valid: reports.every((r) => r.valid), files: reports }, () =>
        reports
          .map((r) =>
            r.valid
              ? `ok       ${r.file} (${r.schema})`
              : `INVALID  ${r.file}${r.schema ? ` (${r.schema})` : ''}\n${r.problems.map((p) => `  ${p.pointer} ${p.message}`).join('\n')}`,
          )
          .join('\n'),
      );
      ctx.exitCode = reports.every((r) => r.valid) ? 0 : 1;
    });

export const commands: Record<string, DefineCommand> = { validate };
