// `pdb-env completion bash|zsh|fish` prints a script completing commands, options and session
// names; the scripts call the hidden `pdb-env __complete sessions|envs` for names at completion
// time, which reads two directory listings and nothing else (no service, no backend).
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { PdbError } from '../../model/errors.js';
import { storePaths } from '../../model/store/object-store.js';
import { SESSION_NAME_PATTERN } from '../../sessions/records/names.js';
import { resolveStoreDir } from '../../sessions/records/store-location.js';
import { bashScript } from '../completion/bash.js';
import { fishScript } from '../completion/fish.js';
import { SHELLS, completionSpec, selfCommand, type Shell } from '../completion/spec.js';
import { zshScript } from '../completion/zsh.js';
import type { CommandDefinitions, DefineCommand } from '../context.js';

const RENDER: Record<Shell, typeof bashScript> = { bash: bashScript, zsh: zshScript, fish: fishScript };

const completion: DefineCommand<'completion'> = (cmd, ctx) =>
  cmd
    .argument('<shell>', SHELLS.join(', '))
    .addHelpText(
      'after',
      `
Prints a script that completes pdb-env's commands, each command's options, backend
names, and the sessions and environments of the store in use (looked up each time
you press TAB, so new sessions complete at once).

Example:
  eval "$(pdb-env completion bash)"                       # in ~/.bashrc
  eval "$(pdb-env completion zsh)"                        # in ~/.zshrc, after compinit
  pdb-env completion fish > ~/.config/fish/completions/pdb-env.fish`,
    )
    .action(async (shell) => {
      if (!(SHELLS as readonly string[]).includes(shell))
        throw new PdbError('E_USAGE', `completion: unknown shell '${shell}'`, { hint: `Choose one of: ${SHELLS.join(', ')}.` });
      process.stdout.write(RENDER[shell as Shell](await completionSpec(ctx), selfCommand()));
    });

/** Entries of `dir` that are names the store accepts: directories (sessions) or NAME.json files (environments). */
function names(dir: string, kind: 'sessions' | 'envs'): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return []; // no store yet: nothing to offer
  }
  if (kind === 'envs')
    return entries.flatMap((f) => (f.endsWith('.json') && SESSION_NAME_PATTERN.test(f.slice(0, -5)) ? [f.slice(0, -5)] : []));
  return entries.filter((n) => SESSION_NAME_PATTERN.test(n) && statSync(join(dir, n), { throwIfNoEntry: false })?.isDirectory());
}

const complete: DefineCommand<'__complete'> = (cmd) =>
  cmd.argument('<what>', 'sessions or envs').action((what, _o, command) => {
    if (what !== 'sessions' && what !== 'envs')
      throw new PdbError('E_USAGE', `__complete: unknown list '${what}'`, { hint: 'sessions or envs' });
    const paths = storePaths(resolveStoreDir({ store: command.optsWithGlobals().store }));
    const found = names(what === 'sessions' ? paths.sessions : paths.environments, what).sort();
    if (found.length) process.stdout.write(`${found.join('\n')}\n`);
  });

export const commands: CommandDefinitions<'completion'> = { completion, __complete: complete };
