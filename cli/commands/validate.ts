import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { PdbError } from '../../model/errors.js';
import { findPathIssues } from '../../harness/receipt/path-free.js';
import { checkReceipt, type Inconsistency } from '../../harness/receipt/consistency.js';
import { benchReceiptInconsistencies, type BenchReceiptFigures } from '../../harness/receipt/bench-consistency.js';
import { openReceipt, signersOf, type OpenedReceipt } from '../../harness/receipt/envelope.js';
import type { Receipt } from '../../harness/receipt/receipt-types.js';
import { SCHEMA_NAMES, detectSchema, hasSchema, tooDeep, validateAgainst, type SchemaName } from '../../model/schemas.js';
import { planIssues, readPlanDocument, type Plan } from '../../harness/plan/plan.js';
import { hashBackendModule } from '../../backends/module.js';
import { parseCassette } from '../../agents/cassette/cassette.js';
import { planVarNames } from '../../harness/plan/plan-vars.js';
import { WORKLOADS } from '../../workloads/registry.js';
import type { Workload } from '../../workloads/types.js';
import { loadSigningKey, SIGNING_KEY_ENV } from '../../model/signing/key-store.js';
import { emit } from '../output.js';
import type { CliContext, CommandDefinitions, DefineCommand, SubcommandStubs } from '../context.js';
import { arch, cpus, platform } from 'node:os';
import { hostIdOf, machineId } from '../../harness/receipt/host.js';
import { readTrustedSigners, trustOf, type TrustedSigner, type TrustedSigners } from '../../harness/receipt/admission.js';
import { dssePayload, isDsseEnvelope } from '../../model/signing/dsse.js';
import { packageFile } from '../../model/paths.js';

/** Plan fields that hold URL paths (an HTTP milestone, an HTTP change to observe), never file paths. */
const URL_PATH_FIELD = /\/(?:http\/path|then\/httpChange)$/;

interface FileReport {
  file: string;
  schema: SchemaName | null;
  valid: boolean;
  problems: Array<{ pointer: string; message: string }>;
  /** What does not make the document invalid but is worth knowing (a plan holding a local path). */
  warnings: Array<{ pointer: string; message: string }>;
  /** A receipt's signers (keyids whose signatures verify), 'unsigned' for a plain receipt; absent for other documents. */
  signers?: string[] | 'unsigned';
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

export interface ValidateOptions {
  /** A receipt whose schedule cannot be replayed (no plan of its own, none committed with its digest) is invalid. */
  requirePlan?: boolean;
  /** A receipt not signed by one of these trusted signers, for its own host, is invalid. */
  trusted?: TrustedSigners;
}

export function validateFile(file: string, forced?: SchemaName, options: ValidateOptions = {}): FileReport {
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
  // A signed receipt is a DSSE envelope: its signatures are checked and its payload is the document.
  const opened = openReceipt(doc);
  doc = opened.document;
  const sealed = signatureReport(opened);
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
  if (problems.length === 0) {
    const more = evidenceProblems(doc, schema, options, opened.signatures !== null && opened.problems.length === 0);
    problems.push(...more.problems);
    warnings.push(...more.warnings);
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
  if (schema === 'receipt' || schema === 'bench-receipt') problems.unshift(...sealed.problems);
  if ((schema === 'receipt' || schema === 'bench-receipt') && options.trusted && sealed.problems.length === 0) {
    const host = (doc as { host?: Parameters<typeof trustOf>[1] }).host;
    const trust = host ? trustOf(sealed.signers, host, options.trusted) : null;
    if (trust?.status === 'refused') problems.push({ pointer: '/signatures', message: `${trust.code}: ${trust.reason}` });
  }
  const signers = schema === 'receipt' || schema === 'bench-receipt' ? { signers: sealed.signers } : {};
  return { file, schema, valid: problems.length === 0, problems, warnings, ...signers };
}

/**
 * A plan's backend modules, checked without running them (issue 41: validating a plan once imported
 * and so ran its modules): each must be a readable file, named by its sha256. What a module
 * declares (its backend's name, testOnly) is known only by importing it, so a backend name no
 * built-in has is a note here; bench imports the modules and refuses what they do not declare.
 */
function withPlanModules(f: string, r: FileReport): FileReport {
  if (r.schema === 'cassette') return withCassetteSteps(f, r);
  if (r.schema !== 'plan') return r;
  const names = (readPlanDocument(f) as { backendModules?: unknown } | null)?.backendModules;
  if (!Array.isArray(names) || names.length === 0) return r;
  const problems = [...r.problems];
  const warnings = [...r.warnings];
  const digests: string[] = [];
  names.forEach((m, i) => {
    if (typeof m !== 'string') return;
    try {
      digests.push(hashBackendModule(resolve(dirname(resolve(f)), m)).digest);
    } catch (err) {
      problems.push({ pointer: `/backendModules/${i}`, message: (err as Error).message });
    }
  });
  const undeclared = /not built in, and no backend module declares it/;
  for (const p of r.problems.filter((x) => x.pointer.startsWith('/backends/') && undeclared.test(x.message))) {
    problems.splice(problems.indexOf(p), 1);
    const backend = /"([^"]+)"/.exec(p.message)?.[1] ?? '?';
    warnings.push({
      pointer: p.pointer,
      message: `"${backend}" comes from a backend module validate does not run (${digests.map((d) => d.slice(0, 19)).join(', ')}…): bench imports it and checks what it declares`,
    });
  }
  return { ...r, valid: problems.length === 0, problems, warnings };
}

/**
 * A receipt must also agree with itself (every derived field is recomputed from the cases) and with
 * what ran (the schedule is rebuilt from its plan and seed, every case held to it); a benchmark
 * receipt's figures are recomputed from its samples.
 */
function evidenceProblems(
  doc: unknown,
  schema: SchemaName,
  options: ValidateOptions,
  signed: boolean,
): { problems: FileReport['problems']; warnings: FileReport['warnings'] } {
  const problems: FileReport['problems'] = [];
  const warnings: FileReport['warnings'] = [];
  if (schema === 'bench-receipt') problems.push(...benchReceiptInconsistencies(doc as BenchReceiptFigures).map(inconsistencyProblem));
  if (schema !== 'receipt' || (doc as { schemaVersion?: number }).schemaVersion === 1) return { problems, warnings };
  const checked = checkReceipt(doc as Receipt, { signed });
  problems.push(...checked.issues.map(inconsistencyProblem));
  if (!signed && !timesBounded(doc as Receipt)) warnings.push({ pointer: '/cases', message: UNBOUNDED_UNSIGNED });
  if (checked.plan.from === 'committed')
    warnings.push({
      pointer: '/planDigest',
      message: `no plan in the receipt: replayed from ${checked.plan.file}, the committed plan with its digest`,
    });
  if (checked.plan.from === 'none') {
    const none = {
      pointer: '/plan',
      message: 'no plan: schedule not replayed (no plan in the receipt, none committed under plans/ with its digest)',
    };
    if (options.requirePlan) problems.push(none);
    else warnings.push(none);
  }
  return { problems, warnings };
}

/** What an unsigned receipt without phase starts is told: nothing holds its overhead to its clock. */
export const UNBOUNDED_UNSIGNED =
  'unsigned, and its phases record no start (schema version 3 or older): time moved from a phase into overhead could not be seen, so no gate counts it (sign it by running it again)';

/** Whether every phase of `r` records its start, so the gaps between phases bound its overhead. */
export function timesBounded(r: Pick<Receipt, 'cases'>): boolean {
  return r.cases.every((c) => c.phases.every((p) => typeof p.startMs === 'number'));
}

/** A field that disagrees: its pointer, both values and the rule it breaks. */
function inconsistencyProblem(i: Inconsistency): FileReport['problems'][number] {
  return {
    pointer: i.pointer,
    message: `E_RECEIPT_INCONSISTENT: recorded ${JSON.stringify(i.recorded)}, recomputed ${JSON.stringify(i.recomputed)} (rule: ${i.rule})`,
  };
}

/** A cassette is also checked as the runner loads it (parseCassette): paths in the root, no step through a link. */
function withCassetteSteps(f: string, r: FileReport): FileReport {
  const doc = readPlanDocument(f);
  if (doc === null || tooDeep(doc) !== null || validateAgainst('cassette', doc).length > 0) return r; // already said
  try {
    parseCassette(doc);
    return r;
  } catch (err) {
    return { ...r, valid: false, problems: [...r.problems, { pointer: '/steps', message: (err as Error).message }] };
  }
}

/** An envelope's failures as problems (E_RECEIPT_SIGNATURE), and its signers. */
function signatureReport(opened: OpenedReceipt): { problems: FileReport['problems']; signers: string[] | 'unsigned' } {
  return {
    problems: opened.problems.map((message) => ({ pointer: '/signatures', message: `E_RECEIPT_SIGNATURE: ${message}` })),
    signers: signersOf(opened),
  };
}

const validate: DefineCommand<'validate'> = (cmd, ctx) =>
  cmd
    .argument('<file...>', 'JSON documents to check')
    .addHelpText(
      'after',
      `
Validates each JSON file against its schema (picked from its "kind": receipt, plan,
policy; or Snapshot/Changeset by shape) with ajv in strict mode, and checks that it
holds no absolute path, user name or host name. A signed receipt (a DSSE envelope)
must verify: its signers' keyids are listed, and an unsigned one is named so. A plan is also checked against the
backend and workload registries exactly as bench checks it (workload names, each
workload's parameters); a local path in a plan is a note, not an error (plans are not
evidence), and its \${NAME} placeholders are listed. A receipt is recomputed from its
cases and replayed from its plan and seed (its own plan, or the committed one under
plans/ its planDigest names; --require-plan refuses a receipt with neither;
--require-trusted FILE refuses one that no key of that trusted signers file signed for
its own host, as a requireSigned policy leaves it out); a
benchmark receipt's medians, ratios and goals are recomputed from its samples
(E_RECEIPT_INCONSISTENT names the field, both values and the rule). Every problem names
the JSON pointer that failed. Exit status 1 when any file is invalid.

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
      const options = {
        requirePlan: o.requirePlan === true,
        trusted: o.requireTrusted === undefined ? undefined : readTrustedSigners(resolve(o.requireTrusted), o.requireTrusted),
      };
      const reports = files.map((f) => withPlanModules(f, validateFile(f, forced as SchemaName | undefined, options)));
      emit(o.json === true, { valid: reports.every((r) => r.valid), files: reports }, () =>
        reports
          .map(
            (r) =>
              (r.valid
                ? `ok       ${r.file} (${r.schema}${r.signers ? `, ${r.signers === 'unsigned' ? 'unsigned' : `signed by ${r.signers.join(', ')}`}` : ''})`
                : `INVALID  ${r.file}${r.schema ? ` (${r.schema})` : ''}\n${r.problems.map((p) => `  ${p.pointer} ${p.message}`).join('\n')}`) +
              r.warnings.map((w) => `\n  note: ${w.pointer} ${w.message}`).join(''),
          )
          .join('\n'),
      );
      ctx.exitCode = reports.every((r) => r.valid) ? 0 : 1;
    });

// `pdb-env keys`: the public half of the key this host signs receipts with (made on first use,
// kept outside any project), so a policy can name it (signers: [keyid]) and a reader can tell
// this host's receipts from another signer's; beside validate, which checks those signatures.
const keys: DefineCommand<'keys'> = (cmd) =>
  cmd
    .addHelpText(
      'after',
      `
Prints the keyid (sha256 of the public key's DER, hex) and the public key (PEM) of the
ed25519 key that signs this host's receipts: ${SIGNING_KEY_ENV} when set (a CI secret
holding a PKCS#8 PEM), else the host's key under $XDG_CONFIG_HOME/pdb-env/keys
(~/.config/pdb-env/keys), made on first use, readable by its owner only. A policy's
"signers" names keyids; pdb-env report lists each receipt's signers.

--signer-entry prints, instead, the row to add to policies/signers.json (schemas/signers.schema.json)
so that a policy with requireSigned counts this host's receipts: the keyid and public key, the
host id its receipts record (salted; /var/lib/pdb-env/host-instance makes it this machine's own)
and its hardware. --host LABEL names it (never a real host name); --ci makes a row for a CI key
(role ci), trusted for any host id of this OS and architecture.

Example:
  pdb-env keys --json
  pdb-env keys --signer-entry --host dev-2026-12-05`,
    )
    .action((_o, command) => {
      const o = command.optsWithGlobals();
      const key = loadSigningKey();
      const publicKey = key.publicKey.export({ type: 'spki', format: 'pem' }).toString();
      const source = key.source === 'env' ? SIGNING_KEY_ENV : key.file;
      if (o.signerEntry === true) {
        const hostId = hostIdOf(machineId());
        const label = o.host ?? `host-${hostId.slice(0, 8)}`;
        if (!/^[A-Za-z0-9][A-Za-z0-9 ._-]{0,79}$/.test(label))
          throw new PdbError(
            'E_USAGE',
            `--host must be a label of letters, digits, space, dot, dash or underscore (at most 80), got ${JSON.stringify(label)}`,
          );
        const entry: TrustedSigner = {
          keyid: key.keyid,
          publicKey,
          host: label,
          role: o.ci === true ? 'ci' : 'host',
          hostIds: o.ci === true ? [] : [hostId],
          hardware:
            o.ci === true
              ? { os: platform(), arch: arch() }
              : { os: platform(), arch: arch(), cpuModel: (cpus()[0]?.model ?? 'unknown').trim(), cores: Math.max(1, cpus().length) },
          added: new Date().toISOString().slice(0, 10),
          revoked: null,
        };
        process.stdout.write(`${JSON.stringify(entry, null, 2)}\n`);
        return;
      }
      emit(o.json === true, { keyid: key.keyid, source: key.source, file: key.file, publicKey }, () =>
        [`keyid: ${key.keyid}`, `from: ${source}`, publicKey.trimEnd()].join('\n'),
      );
    });

/** One signature of a shown receipt: its key, whether it verifies, and who the trusted signers say it is. */
interface ShownSignature {
  keyid: string;
  valid: boolean;
  problem: string | null;
  /** The trusted signer's row for the key (its host label, role, revocation); null when the list does not have it. */
  trusted: { host: string; role: string; revoked: TrustedSigner['revoked'] } | null;
}

const show = (cmd: SubcommandStubs<'receipt'>['show'], ctx: CliContext) =>
  cmd
    .argument('<file>', 'a receipt (signed DSSE envelope or plain JSON)')
    .addHelpText(
      'after',
      `
Prints who signed the receipt (each signature's keyid, whether it verifies against the
payload, and the trusted signers' name for its key: policies/signers.json of this package
unless --signers FILE), then the signed payload itself as JSON: what the numbers are,
without decoding base64 by hand. A plain receipt (written before signing) prints as
unsigned. Exit status 1 when a signature fails or the envelope's unsigned copy differs.
--json prints {file, kind, signed, signatures, problems, payload}.

Example:
  pdb-env receipt show receipts/full-20261203T121559Z-fe5770.json --json`,
    )
    .action((file: string, _o, command) => {
      const o = command.optsWithGlobals();
      let raw: unknown;
      try {
        raw = JSON.parse(readFileSync(file, 'utf8'));
      } catch (err) {
        throw new PdbError('E_RECEIPT_NOT_FOUND', `${file} cannot be read as JSON: ${(err as Error).message}`, {
          cause: err,
          hint: 'Pass a receipt file (receipts/*.json).',
        });
      }
      const opened = openReceipt(raw);
      const kind = (opened.document as { kind?: unknown } | null)?.kind;
      if (kind !== 'pdb-env-receipt' && kind !== 'pdb-env-bench-receipt')
        throw new PdbError('E_SCHEMA_INVALID', `${file} is not a receipt (its payload's kind is ${JSON.stringify(kind ?? null)})`, {
          hint: 'pdb-env receipt show reads receipts written by pdb-env bench and the benchmark scripts.',
        });
      const listFile = o.signers ?? packageFile('policies', 'signers.json');
      const list =
        o.signers !== undefined || existsSync(listFile) ? readTrustedSigners(listFile, o.signers ?? 'policies/signers.json') : null;
      const signatures: ShownSignature[] = (opened.signatures ?? []).map((s) => {
        const row = list?.signers.find((x) => x.keyid === s.keyid) ?? null;
        return { ...s, trusted: row ? { host: row.host, role: row.role, revoked: row.revoked } : null };
      });
      const out = {
        file,
        kind,
        signed: opened.signatures !== null,
        payloadType: isDsseEnvelope(raw) ? raw.payloadType : null,
        payloadBytes: isDsseEnvelope(raw) ? dssePayload(raw).length : null,
        signatures,
        problems: opened.problems,
        payload: opened.document,
      };
      emit(o.json === true, out, () =>
        [
          `${file}: ${kind}, ${out.signed ? `signed (${out.payloadType}, ${out.payloadBytes} bytes)` : 'unsigned (plain JSON, written before signing)'}`,
          ...signatures.map(
            (s) =>
              `  signature ${s.keyid}: ${s.valid ? 'valid' : `INVALID (${s.problem})`}; ${
                s.trusted
                  ? `trusted signer ${s.trusted.host} (${s.trusted.role})${s.trusted.revoked ? `, REVOKED on ${s.trusted.revoked.on}: ${s.trusted.revoked.reason}` : ''}`
                  : list
                    ? 'not a trusted signer'
                    : 'no trusted signers list'
              }`,
          ),
          ...opened.problems.map((p) => `  problem: ${p}`),
          JSON.stringify(opened.document, null, 2),
        ].join('\n'),
      );
      ctx.exitCode = opened.problems.length ? 1 : 0;
    });

const receipt: DefineCommand<'receipt'> = (cmd, ctx, sub) => {
  cmd.addHelpText('after', '\nReceipts as written by pdb-env bench: see docs/evidence.md.');
  show(sub.show, ctx);
};

export const commands: CommandDefinitions<'validate'> = { validate, keys, receipt };
