import { randomBytes } from 'node:crypto';
import { readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic, type StorePaths } from '../model/object-store.js';
import { isProcessAlive, processStartTime } from './process-identity.js';

export type IntentOp = 'create' | 'checkpoint' | 'discard' | 'publish';

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
}

/** Intent records for crash recovery: written before a multi-step mutation, removed after its final state. */
export class Journal {
  constructor(private readonly paths: StorePaths) {}

  async begin(op: IntentOp, fields: { session?: string; env?: string; detail?: Record<string, string | null> }): Promise<Intent> {
    const intent: Intent = {
      id: `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`,
      op,
      session: fields.session,
      env: fields.env,
      pid: process.pid,
      pidStart: processStartTime(process.pid),
      startedAt: new Date().toISOString(),
      detail: fields.detail ?? {},
    };
    await writeFileAtomic(this.paths, this.file(intent.id), `${JSON.stringify(intent, null, 2)}\n`);
    return intent;
  }

  async end(intent: Intent): Promise<void> {
    await unlink(this.file(intent.id)).catch(() => {});
  }

  /** All intents on disk, each marked live (its process still runs) or abandoned. */
  async list(): Promise<Array<Intent & { live: boolean }>> {
    const out: Array<Intent & { live: boolean }> = [];
    for (const name of (await readdir(this.paths.journal).catch(() => [] as string[])).sort()) {
      if (!name.endsWith('.json')) continue;
      try {
        const intent = JSON.parse(await readFile(join(this.paths.journal, name), 'utf8')) as Intent;
        out.push({ ...intent, live: isProcessAlive(intent.pid, intent.pidStart) });
      } catch {
        /* a half-written intent is impossible (atomic write); skip anything foreign */
      }
    }
    return out;
  }

  async remove(id: string): Promise<void> {
    await unlink(this.file(id)).catch(() => {});
  }

  private file(id: string): string {
    return join(this.paths.journal, `${id}.json`);
  }
}
