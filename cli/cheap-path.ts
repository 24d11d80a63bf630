// The cheap path: a plain call of a command whose row in the table is marked `cheap` (checkpoint,
// which an agent loop calls between steps, and restore, which takes one back), run without loading commander (which loads
// child_process, net and streams), building the program or defining the other commands: on a
// checkpoint, whose own work is a stat walk, an index and two records, that start-up is a large
// share (docs/evidence.md quotes the receipts). The entry of the checkpoint bundle.
//
// pdb-env.cts decides what is plain (cheapCall in command-table.cts); this runs the command's
// `cheap` action, the one its commander action calls, so output and errors are the same on both
// paths (test/cli/cheap-path.test.ts holds them side by side). It prints with write(2) on fds 1
// and 2, as nothing else in this process writes to stdout or stderr: no stdio stream is made.
import { PdbError } from '../model/errors.js';
import { COMMAND_MODULES } from './command-modules.js';
import type { CheapCall } from './command-table.cjs';
import type { CommandModuleExports } from './context.js';
import { captureOutput, emitError, put, writeDirectly } from './output.js';
import { forCaller } from './request.js';

/** Run a plain call of a cheap command; its exit status. */
export async function runCheap(call: CheapCall): Promise<number> {
  writeDirectly();
  try {
    const mod: CommandModuleExports = await COMMAND_MODULES[call.module]();
    const action = mod.cheap?.[call.name];
    if (!action) throw new PdbError('E_INTERNAL', `cli: no cheap action for the ${call.name} command`);
    // The action of the command `call` names: its own call type (a union of actions takes none).
    await (action as (c: CheapCall) => Promise<void>)(call);
    return 0;
  } catch (err) {
    return emitError(call.options.json === true, err);
  }
}

/** The daemon's caches, and its watch with `daemon start --watch`, in this bundle's modules (once each; idempotent). */
async function daemonCaches(watch: boolean | undefined): Promise<void> {
  // The daemon reads the same session indexes again and again: their checksums once each; and
  // cuts each session's next Snapshot from its last (model/store/chunks.ts).
  (await import('../model/scan/tree-index.js')).rememberVerifiedIndexes();
  (await import('../model/store/chunks.js')).rememberCuts();
  // `daemon start --watch`: the roots of the sessions it checkpoints are watched (model/scan/watch.ts).
  if (watch) (await import('../model/scan/watch.js')).watchSessionRoots();
}

/**
 * Run a plain call for a client of the pdb-env daemon (cli/daemon/server.ts): what it prints goes
 * to `sink`, and the command runs for the client's process. Runs inside the checkpoint bundle,
 * whose modules (output, request) are the ones the command uses.
 */
export async function runCheapFor(
  call: CheapCall,
  client: { pid: number; watch?: boolean; sink: (fd: 1 | 2, text: string) => void },
): Promise<number> {
  await daemonCaches(client.watch);
  captureOutput(client.sink);
  try {
    return await forCaller(client.pid, () => runCheap(call));
  } finally {
    captureOutput(null);
  }
}

/**
 * A plain turn hook (`hook AGENT ...`, sessions/hooks/turn-hook.ts) for a client of the daemon,
 * with the stdin the client forwarded: its exit status, or null (nothing done, nothing printed)
 * when it is not one, and the client runs it itself.
 */
export async function runHookFor(
  args: readonly string[],
  stdin: string | undefined,
  client: { pid: number; watch?: boolean; sink: (fd: 1 | 2, text: string) => void },
): Promise<number | null> {
  await daemonCaches(client.watch);
  captureOutput(client.sink);
  try {
    const { turnHookCall } = await import('../sessions/hooks/turn-hook.js');
    return await forCaller(client.pid, () => turnHookCall(args, stdin, { out: (t) => put(1, t), err: (t) => put(2, t) }));
  } finally {
    captureOutput(null);
  }
}
