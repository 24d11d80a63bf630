import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { PdbError, osErrorCode } from '../model/errors.js';
import { isProcessAlive, processStartTime } from './process-identity.js';

/**
 * Cooperative leases on a session: `run` holds a shared writer lease, `checkpoint` an exclusive one.
 * Both sides write their own record first and then look for the other, so two racing
 * acquirers cannot both succeed (at worst both fail fast with E_LEASE_BUSY). A busy session is
 * rejected, never frozen. Records of dead processes are removed when seen.
 */
export interface LeaseRecord {
  kind: 'writer' | 'exclusive';
  pid: number;
  pidStart: string | null;
  purpose: string;
  acquiredAt: string;
}

export interface Lease {
  kind: LeaseRecord['kind'];
  release(): Promise<void>;
}

const EXCLUSIVE = 'exclusive.json';

async function readRecord(file: string): Promise<LeaseRecord | null> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as LeaseRecord;
  } catch {
    return null;
  }
}

/** Live lease records in a session's lease dir, removing the ones whose process is gone. */
export async function liveLeases(leaseDir: string): Promise<Array<LeaseRecord & { file: string }>> {
  const out: Array<LeaseRecord & { file: string }> = [];
  for (const name of await readdir(leaseDir).catch(() => [] as string[])) {
    const file = join(leaseDir, name);
    const rec = await readRecord(file);
    if (!rec) continue; // being written; its owner will see us
    if (isProcessAlive(rec.pid, rec.pidStart)) out.push({ ...rec, file });
    else await unlink(file).catch(() => {});
  }
  return out;
}

async function writeRecord(file: string, rec: LeaseRecord): Promise<boolean> {
  try {
    const fh = await open(file, 'wx', 0o644);
    try {
      await fh.writeFile(JSON.stringify(rec));
    } finally {
      await fh.close();
    }
    return true;
  } catch (err) {
    if (osErrorCode(err) === 'EEXIST') return false;
    throw err;
  }
}

function busy(session: string, holder: LeaseRecord, wanted: string): PdbError {
  return new PdbError(
    'E_LEASE_BUSY',
    `session "${session}" is busy: process ${holder.pid} holds a ${holder.kind} lease for ${holder.purpose}; ${wanted} was refused`,
    {
      hint: holder.kind === 'writer' ? 'Wait for the running command to finish, then checkpoint.' : 'Wait for the checkpoint to finish.',
    },
  );
}

export async function acquireLease(leaseDir: string, session: string, kind: LeaseRecord['kind'], purpose: string): Promise<Lease> {
  await mkdir(leaseDir, { recursive: true });
  const rec: LeaseRecord = {
    kind,
    pid: process.pid,
    pidStart: processStartTime(process.pid),
    purpose,
    acquiredAt: new Date().toISOString(),
  };
  const file =
    kind === 'exclusive' ? join(leaseDir, EXCLUSIVE) : join(leaseDir, `writer-${process.pid}-${randomBytes(4).toString('hex')}.json`);
  for (let attempt = 0; ; attempt++) {
    if (await writeRecord(file, rec)) break;
    // The exclusive file exists: if its holder is dead, clear it and try once more.
    const holder = await readRecord(file);
    if (holder && isProcessAlive(holder.pid, holder.pidStart)) throw busy(session, holder, purpose);
    if (attempt > 0 && holder) throw busy(session, holder, purpose);
    await unlink(file).catch(() => {});
  }
  const others = (await liveLeases(leaseDir)).filter((r) => r.file !== file && (kind === 'exclusive' || r.kind === 'exclusive'));
  if (others.length > 0) {
    await unlink(file).catch(() => {});
    throw busy(session, others[0]!, purpose);
  }
  return {
    kind,
    release: async () => {
      await unlink(file).catch(() => {});
    },
  };
}
