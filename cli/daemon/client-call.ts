// A checkpoint asked for by a node process of pdb-env (`run --checkpoint`) the way a user's own
// `pdb-env checkpoint` goes: through the native client (native/client.c), which hands it to this
// user's daemon, starts one on demand, or runs node itself (PDB_ENV_DAEMON=0, a stale socket,
// another build's daemon), exactly as bin/pdb-env does. So the checkpoint after a command costs
// what the default path costs (the daemon's warm index), not a cold scan in this process.
// Where the install built no client, the caller checkpoints in its own process.
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { PdbError, type PdbErrorCode } from '../../model/errors.js';
import { cliEntry, packageFile } from '../../model/paths.js';

/** The native client, or null where the install built none. */
export function nativeClient(): string | null {
  const file = packageFile('native', 'build', 'Release', 'pdb-env-client');
  try {
    accessSync(file, constants.X_OK);
    return file;
  } catch {
    return null;
  }
}

/** What `checkpoint --json` prints of its result, as far as a caller reads it. */
export interface ClientCheckpoint {
  number: number;
  session: string;
  snapshot: string;
}

/**
 * `pdb-env checkpoint NAME --label LABEL --json` through the native client `client`, with this
 * process's environment and working directory; its result, or its typed error (the code and
 * message the command printed).
 */
export function checkpointThroughClient(client: string, store: string | undefined, name: string, label: string): Promise<ClientCheckpoint> {
  const args = [cliEntry(), 'checkpoint', name, '--label', label, '--json', ...(store === undefined ? [] : ['--store', store])];
  // As bin/pdb-env starts it: node without the CA bundle it would parse at start (cli/pdb-env.cts puts it back).
  const env = { ...process.env };
  if (env.NODE_EXTRA_CA_CERTS) {
    env.PDB_ENV_NODE_EXTRA_CA_CERTS = env.NODE_EXTRA_CA_CERTS;
    delete env.NODE_EXTRA_CA_CERTS;
  }
  return new Promise((resolve, reject) => {
    const child = spawn(client, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.once('error', (e) => reject(new PdbError('E_INTERNAL', `the native client ${client} did not start: ${e.message}`)));
    child.once('close', (code, signal) => {
      const text = Buffer.concat(out).toString('utf8');
      let doc: { error?: { code: PdbErrorCode; message: string; hint?: string } } & Partial<ClientCheckpoint>;
      try {
        doc = JSON.parse(text) as typeof doc;
      } catch {
        const why = signal ? `was killed by ${signal}` : `exited ${code} without a result`;
        const said = Buffer.concat(err).toString('utf8').trim();
        reject(new PdbError('E_INTERNAL', `the checkpoint through ${client} ${why}${said ? `: ${said}` : ''}`));
        return;
      }
      if (doc.error) reject(new PdbError(doc.error.code, doc.error.message, doc.error.hint ? { hint: doc.error.hint } : {}));
      else if (code === 0 && typeof doc.number === 'number' && typeof doc.snapshot === 'string') resolve(doc as ClientCheckpoint);
      else reject(new PdbError('E_INTERNAL', `the checkpoint through ${client} exited ${code} with no checkpoint in its output`));
    });
  });
}
