// Intent records for crash recovery: written before a multi-step mutation creates anything,
// removed after its final state. An intent names its operation and its process, so recovery can
// tell a live one from an abandoned one. A journal entry that is not a well-formed intent
// (garbage, an unknown operation, an unsafe session name, a symlink) is never followed: `list`
// returns it as bad, doctor reports it and gc moves it to the quarantine.
import { randomHex } from '../../model/os/hash.js';
import { constants as fsConstants, unlinkSync } from 'node:fs';
import { lstat, mkdir, open, readdir, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { osErrorCode, toPdbError } from '../../model/errors.js';
import { writeFileAtomic, type StorePaths } from '../../model/store/object-store.js';
import { isProcessAlive, processStartTime } from '../../model/os/proc.js';
import { SESSION_NAME_PATTERN } from './names.js';

export const INTENT_OPS = ['create', 'checkpoint', 'discard', 'publish', 'apply', 'export', 'restore'] as const;
export type IntentOp = (typeof INTENT_OPS)[number];

export interface Intent {
  id: string;
  op: IntentOp;
  session?: string;
  env?: string;
  pid: number;
  /** Process start time (clock ticks since boot on Linux), to tell a reused pid apart. */
  pidStart: string | null;
  startedAt: string;
  /** Free-form facts needed to finish or undo (backend, base digest...). */
  detail: Record<string, string | null>;
  /** Why gc's last attempt to finish or undo it failed (doctor shows it with the hint). */
  failure?: IntentFailure;
}

export interface IntentFailure {
  code: string;
  message: string;
  hint: string | null;
  at: string;
}

function parseFailure(v: unknown): IntentFailure | undefined {
  const f = v as Partial<Record<keyof IntentFailure, unknown>> | null;
  if (!f || typeof f !== 'object' || typeof f.code !== 'string' || typeof f.message !== 'string') return undefined;
  return { code: f.code, message: f.message, hint: typeof f.hint === 'string' ? f.hint : null, at: typeof f.at === 'string' ? f.at : '?' };
}

/** A journal entry that is not a well-formed intent, with why. */
export interface BadIntent {
  file: string;
  reason: string;
}

/** A safe id (it becomes a file name): what begin() makes, or any simple name. */
const ID = /^[0-9A-Za-z][0-9A-Za-z_-]{0,63}$/;

/** The intent in `text` (from the file `name`), or why it is not one. */
export function parseIntent(name: string, text: string): Intent | string {
  let doc: Partial<Record<keyof Intent, unknown>>;
  try {
    doc = JSON.parse(text) as typeof doc;
  } catch {
    return 'not JSON';
  }
  if (typeof doc !== 'object' || doc === null) return 'not an intent record';
  if (`${String(doc.id)}.json` !== name || !ID.test(String(doc.id))) return 'its id does not match its file name';
  if (!INTENT_OPS.includes(doc.op as IntentOp)) return `unknown operation "${String(doc.op)}"`;
  for (const key of ['session', 'env'] as const) {
    if (doc[key] !== undefined && (typeof doc[key] !== 'string' || !SESSION_NAME_PATTERN.test(doc[key] as string)))
      return `unsafe ${key} name "${String(doc[key])}"`;
  }
  if (!Number.isInteger(doc.pid) || (doc.pid as number) <= 0) return 'no owner pid';
  const detail = doc.detail && typeof doc.detail === 'object' ? (doc.detail as Intent['detail']) : {};
  return {
    id: doc.id as string,
    op: doc.op as IntentOp,
    session: doc.session as string | undefined,
    env: doc.env as string | undefined,
    pid: doc.pid as number,
    pidStart: typeof doc.pidStart === 'string' ? doc.pidStart : null,
    startedAt: typeof doc.startedAt === 'string' ? doc.startedAt : '?',
    detail,
    ...(parseFailure(doc.failure) ? { failure: parseFailure(doc.failure) } : {}),
  };
}

export class Journal {
  constructor(private readonly paths: StorePaths) {}

  /**
   * Write the intent (atomically); a failure is typed (E_NO_SPACE, E_READ_ONLY...) and leaves
   * nothing. `sync: false` skips the fsync, for an operation whose intent only reports a crash and
   * recovers nothing (checkpoint: what it leaves is immutable objects that gc collects).
   */
  async begin(
    op: IntentOp,
    fields: { session?: string; env?: string; detail?: Record<string, string | null> },
    options: { sync?: boolean } = {},
  ): Promise<Intent> {
    const intent: Intent = {
      id: `${Date.now().toString(36)}-${randomHex(4)}`,
      op,
      session: fields.session,
      env: fields.env,
      pid: process.pid,
      pidStart: processStartTime(process.pid),
      startedAt: new Date().toISOString(),
      detail: fields.detail ?? {},
    };
    await this.update(intent, options);
    return intent;
  }

  /** Write `intent` again (atomically), with what changed in it: a later phase, a failure. */
  async update(intent: Intent, options: { sync?: boolean } = {}): Promise<void> {
    const { live: _live, ...record } = intent as Intent & { live?: boolean };
    await writeFileAtomic(this.paths, this.file(intent.id), `${JSON.stringify(record, null, 2)}\n`, 0o644, options);
  }

  /** Keep in the intent why gc could not finish it (best effort: doctor falls back to naming the intent). */
  async recordFailure(intent: Intent, err: { code: string; message: string; hint?: string }): Promise<void> {
    const failure = { code: err.code, message: err.message, hint: err.hint ?? null, at: new Date().toISOString() };
    await this.update({ ...intent, failure }).catch(() => {}); // the store may be what is full or read-only; doctor still lists the intent
  }

  /** Remove a finished intent. Best effort: one left behind (a read-only store) is dropped by gc later. */
  async end(intent: Intent): Promise<void> {
    try {
      unlinkSync(this.file(intent.id)); // synchronous: one small file, ended by every mutation
    } catch {
      // already gone (doctor or a second end): nothing to end
    }
  }

  /** Every intent on disk, each marked live (its process still runs) or abandoned, and every bad entry. */
  async scan(): Promise<{ intents: Array<Intent & { live: boolean }>; bad: BadIntent[] }> {
    const intents: Array<Intent & { live: boolean }> = [];
    const bad: BadIntent[] = [];
    const dir = await lstat(this.paths.journal).catch(() => null);
    if (dir && !dir.isDirectory()) return { intents, bad: [{ file: '.', reason: 'the journal is not a directory (a symlink?)' }] };
    for (const name of (await readdir(this.paths.journal).catch(() => [] as string[])).sort()) {
      const read = await this.read(name);
      if (read === null) continue; // removed meanwhile: its operation ended
      if (typeof read === 'string') bad.push({ file: name, reason: read });
      else intents.push({ ...read, live: isProcessAlive(read.pid, read.pidStart) });
    }
    return { intents, bad };
  }

  /** Intents on disk (bad entries left out; see scan). */
  async list(): Promise<Array<Intent & { live: boolean }>> {
    return (await this.scan()).intents;
  }

  /** Read one entry without following a symlink: the intent, why it is bad, or null when it is gone. */
  private async read(name: string): Promise<Intent | string | null> {
    if (!name.endsWith('.json')) return 'not an intent file name';
    let text: string;
    try {
      const fh = await open(join(this.paths.journal, name), fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
      try {
        if (!(await fh.stat()).isFile()) return 'not a regular file';
        text = await fh.readFile('utf8');
      } finally {
        await fh.close();
      }
    } catch (err) {
      if (osErrorCode(err) === 'ENOENT') return null;
      if (osErrorCode(err) === 'ELOOP') return 'a symlink';
      throw toPdbError(err, 'E_IO', { action: 'reading the journal', path: join(this.paths.journal, name) });
    }
    return parseIntent(name, text);
  }

  async remove(id: string): Promise<void> {
    await unlink(this.file(id)).catch((err: unknown) => {
      if (osErrorCode(err) !== 'ENOENT') throw toPdbError(err, 'E_IO', { action: 'dropping an intent', path: this.file(id) });
    });
  }

  /** Move a bad entry (or the journal itself, `file` "."), never followed, to `<store>/quarantine/journal/`. */
  async quarantine(file: string): Promise<string> {
    const dir = join(this.paths.quarantine, 'journal');
    await mkdir(dir, { recursive: true });
    const stamp = new Date().toISOString().replace(/[:.]/g, '');
    const from = file === '.' ? this.paths.journal : join(this.paths.journal, file);
    const to = join(dir, `${file === '.' ? 'journal' : file}.${stamp}`);
    try {
      await rename(from, to); // rename moves a symlink itself, never its target
      if (file === '.') await mkdir(this.paths.journal);
    } catch (err) {
      throw toPdbError(err, 'E_IO', { action: 'moving a bad journal entry to the quarantine', path: from });
    }
    return to;
  }

  private file(id: string): string {
    return join(this.paths.journal, `${id}.json`);
  }
}
