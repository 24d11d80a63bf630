// Names of the store's temporary files and directories: `<kind>.<pid>.<start>.<random>`. The owner
// (pid and process start time) is read back from this structured form only, so recovery never
// mistakes a word of a name for a pid (an older `base-tree-<pid>-...` once read "tree" as one).
import { randomHex } from './hash.js';
import { join } from 'node:path';
import { isProcessAlive, processStartTime } from './proc.js';

const KIND = /^[a-z][a-z0-9-]*$/;
const NAME = /^([a-z][a-z0-9-]*)\.([1-9][0-9]*)\.([0-9]+|x)\.([A-Za-z0-9]+)$/;

let ownStart: string | undefined;

/** This process's part of a temp name: `<pid>.<start>` (start "x" where /proc is absent). */
function ownerPart(): string {
  ownStart ??= processStartTime(process.pid) ?? 'x';
  return `${process.pid}.${ownStart}`;
}

/** A fresh temp name of `kind` owned by this process (a directory entry, not a path). */
export function tempEntryName(kind: string, random = randomHex(6)): string {
  if (!KIND.test(kind)) throw new Error(`bad temp kind "${kind}"`);
  return `${kind}.${ownerPart()}.${random}`;
}

/** A fresh temp path of `kind` inside `dir`. */
export function tempPath(dir: string, kind: string): string {
  return join(dir, tempEntryName(kind));
}

export interface TempOwner {
  kind: string;
  pid: number;
  /** Process start time (clock ticks since boot), or null when it was not known. */
  pidStart: string | null;
}

/** The owner named by a structured temp name; null for any other name. */
export function parseTempName(name: string): TempOwner | null {
  const m = NAME.exec(name);
  if (!m) return null;
  return { kind: m[1]!, pid: Number(m[2]), pidStart: m[3] === 'x' ? null : m[3]! };
}

/** Is the owner of a structured temp name still running? null when the name is not structured. */
export function tempOwnerAlive(name: string, isAlive = isProcessAlive): boolean | null {
  const owner = parseTempName(name);
  return owner ? isAlive(owner.pid, owner.pidStart) : null;
}
