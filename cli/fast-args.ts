// The arguments of a plain checkpoint call (the fast path's, cli/fast-path.ts): read by bin.js
// before anything else is loaded, so this module imports nothing.

export interface CheckpointArgs {
  name: string | undefined;
  store: string | undefined;
  json: boolean;
  verify: boolean;
}

/** The arguments of a plain checkpoint call, or null: commander handles this command line. */
export function fastCheckpointArgs(argv: readonly string[]): CheckpointArgs | null {
  if (argv[0] !== 'checkpoint') return null;
  const out: CheckpointArgs = { name: undefined, store: undefined, json: false, verify: false };
  const seen = new Set<string>();
  const once = (flag: string) => !seen.has(flag) && (seen.add(flag), true);
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--json' && once(arg)) out.json = true;
    else if (arg === '--verify' && once(arg)) out.verify = true;
    else if (arg === '--store' && once(arg)) {
      const value = argv[++i];
      if (value === undefined || value === '' || value.startsWith('-')) return null;
      out.store = value;
    } else if (arg.startsWith('--store=') && arg.length > 8 && once('--store')) out.store = arg.slice(8);
    else if (!arg.startsWith('-') && arg !== '' && out.name === undefined) out.name = arg;
    else return null;
  }
  return out;
}
