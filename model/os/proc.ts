import { readFileSync } from 'node:fs';

/** The start time of a process (field 22 of /proc/PID/stat), or null where /proc is absent. */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return rest[19] ?? null;
  } catch {
    return null;
  }
}

/** Is this process still the one that wrote a record (same pid, same start time)? */
export function isProcessAlive(pid: number, startTime: string | null): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  if (startTime === null) return true;
  const now = processStartTime(pid);
  return now === null || now === startTime;
}
