// Whom a command runs for: this process, or the client of the pdb-env daemon that runs it
// (cli/daemon/server.ts), whose process id a checkpoint needs to know its own run (ownCaller).
let caller: number | undefined;

/** The client process a command runs for; undefined: this process. */
export function requestCaller(): number | undefined {
  return caller;
}

/** Run `fn` for the client process `pid` (the daemon runs one command at a time). */
export async function forCaller<T>(pid: number, fn: () => Promise<T>): Promise<T> {
  caller = pid;
  try {
    return await fn();
  } finally {
    caller = undefined;
  }
}
