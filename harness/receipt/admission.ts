// Which receipts a decision may count, beyond each one being consistent (consistency.ts): who signed
// it, against the organisation's trusted signers (policies/signers.json, schemas/signers.schema.json),
// and whether it repeats another receipt's measurements. A receipt that fails is shown with a typed
// reason and counted by no gate; nothing here changes a receipt.
//
// Trust comes from the committed document, never from the envelope: a signature's keyid is the
// sha256 of the public key it carries (dsse.ts checks that), so a listed keyid names the listed key.
import { createHash, createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { PdbError, type PdbErrorCode } from '../../model/errors.js';
import { assertSchema } from '../../model/schemas.js';
import { keyidOf } from '../../model/signing/dsse.js';
import type { HostFingerprint } from './receipt-types.js';

export interface TrustedSigner {
  keyid: string;
  publicKey: string;
  host: string;
  role: 'host' | 'ci';
  hostIds: string[];
  hardware: { os: string; arch: string; cpuModel?: string; cores?: number };
  added: string;
  revoked: { on: string; reason: string } | null;
}

export interface TrustedSigners {
  kind: 'pdb-env-signers';
  version: 1;
  signers: TrustedSigner[];
}

function signersError(message: string, cause?: unknown): PdbError {
  return new PdbError('E_SIGNERS_INVALID', message, {
    cause,
    hint: 'policies/signers.json lists the trusted keys (schemas/signers.schema.json); `pdb-env keys --signer-entry` prints the row for this host.',
  });
}

/** Check a parsed signers document: its schema, each row's keyid against its public key, no key listed twice. */
export function parseTrustedSigners(doc: unknown, source = 'signers'): TrustedSigners {
  const d = assertSchema<TrustedSigners>('signers', doc, {
    code: 'E_SIGNERS_INVALID',
    what: source,
    hint: 'Fix the listed fields; policies/signers.json is the shipped example.',
    limit: Infinity,
  });
  const seen = new Set<string>();
  d.signers.forEach((s, i) => {
    let id: string;
    try {
      id = keyidOf(createPublicKey(s.publicKey));
    } catch (err) {
      throw signersError(`${source} /signers/${i}: its publicKey does not parse (${(err as Error).message})`, err);
    }
    if (id !== s.keyid)
      throw signersError(`${source} /signers/${i}: keyid ${s.keyid.slice(0, 16)}… is not its public key's (${id.slice(0, 16)}…)`);
    if (seen.has(s.keyid)) throw signersError(`${source} /signers/${i}: key ${s.keyid.slice(0, 16)}… is listed twice`);
    seen.add(s.keyid);
    if (s.role === 'host' && s.hostIds.length === 0)
      throw signersError(`${source} /signers/${i} (${s.host}): a host key names the host ids it signs for`);
  });
  return d;
}

export function readTrustedSigners(file: string, shown = file): TrustedSigners {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw signersError(`trusted signers ${shown} cannot be read as JSON: ${(err as Error).message}`, err);
  }
  return parseTrustedSigners(doc, shown);
}

/** How one receipt stands with the trusted signers. */
export type Trust =
  { status: 'trusted'; signer: TrustedSigner } | { status: 'refused'; code: PdbErrorCode; reason: string; signer: TrustedSigner | null };

type Host = Pick<HostFingerprint, 'hostId' | 'os' | 'arch' | 'cpuModel' | 'cores'>;

/** What of `host` differs from what `s` may sign for; empty when nothing does. */
function hostDifferences(s: TrustedSigner, host: Host): string[] {
  const out: string[] = [];
  if (s.role === 'host' && !s.hostIds.includes(host.hostId))
    out.push(`host id ${host.hostId.slice(0, 12)}… is not one of its ${s.hostIds.length}`);
  for (const k of ['os', 'arch', 'cpuModel', 'cores'] as const) {
    const want = s.hardware[k];
    if (want !== undefined && want !== host[k]) out.push(`${k} ${JSON.stringify(host[k])}, not ${JSON.stringify(want)}`);
  }
  return out;
}

/**
 * A receipt's standing: signed by a listed key that is not revoked, for a host and hardware that
 * key may sign for. `signers` are the keyids whose signatures verify ('unsigned': none at all).
 */
export function trustOf(signers: string[] | 'unsigned', host: Host, trusted: TrustedSigners): Trust {
  if (signers === 'unsigned') return { status: 'refused', code: 'E_RECEIPT_UNSIGNED', reason: 'unsigned', signer: null };
  const listed = trusted.signers.filter((s) => signers.includes(s.keyid));
  if (listed.length === 0)
    return {
      status: 'refused',
      code: 'E_SIGNER_UNKNOWN',
      reason: `signed by ${signers.map((k) => k.slice(0, 12)).join(', ') || 'no valid key'}, which the trusted signers do not list`,
      signer: null,
    };
  const live = listed.filter((s) => s.revoked === null);
  if (live.length === 0) {
    const s = listed[0]!;
    return {
      status: 'refused',
      code: 'E_SIGNER_REVOKED',
      reason: `signed by ${s.host}'s key, revoked on ${s.revoked!.on}: ${s.revoked!.reason}`,
      signer: s,
    };
  }
  for (const s of live) if (hostDifferences(s, host).length === 0) return { status: 'trusted', signer: s };
  const s = live[0]!;
  return {
    status: 'refused',
    code: 'E_SIGNER_HOST',
    reason: `signed by ${s.host}'s key, but its signed host is not that machine: ${hostDifferences(s, host).join('; ')}`,
    signer: s,
  };
}

/** What identifies a run's measurements: every case's phase durations as recorded (the timings no two runs share). */
export function measurementPrint(cases: { phases: { name: string; durationMs: number }[] }[]): string[] {
  return cases
    .filter((c) => c.phases.length > 0)
    .map((c) =>
      createHash('sha256')
        .update(JSON.stringify(c.phases.map((p) => [p.name, p.durationMs])))
        .digest('hex'),
    );
}

interface RunSpan {
  runId: string;
  hostId: string;
  startedAt: string;
  finishedAt: string;
  prints: string[];
}

/**
 * The receipt among `earlier` that `r` repeats: one whose cases' timings it shares (a copy under
 * another name or run id), or a run on the same host at the same time (one machine measures one run
 * at a time: two overlapping are a copy, or contention). Null when it repeats none.
 */
export function repeatOf(r: RunSpan, earlier: RunSpan[]): { runId: string; why: string } | null {
  const mine = new Set(r.prints);
  for (const e of earlier) {
    const shared = e.prints.filter((p) => mine.has(p)).length;
    if (shared > 0) return { runId: e.runId, why: `${shared} of its cases' timings are ${e.runId}'s, to the last digit` };
  }
  for (const e of earlier)
    if (e.hostId === r.hostId && Date.parse(r.startedAt) < Date.parse(e.finishedAt) && Date.parse(e.startedAt) < Date.parse(r.finishedAt))
      return { runId: e.runId, why: `it ran on the same host at the same time as ${e.runId} (${e.startedAt} .. ${e.finishedAt})` };
  return null;
}
