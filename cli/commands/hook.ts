// `pdb-env hook claude-code`: Claude Code's WorktreeCreate and WorktreeRemove hooks answered with
// pdb-env sessions (sessions/hooks/claude-code.ts); --print-settings prints what installs them.
import { resolve } from 'node:path';
import { PdbError } from '../../model/errors.js';
import { cliEntry } from '../../model/paths.js';
import type { CommandDefinitions, DefineCommand } from '../context.js';

/** A word for sh -c: bare when it is safe, single-quoted otherwise. */
const shellWord = (s: string) => (/^[A-Za-z0-9_./:=@%+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY)
    throw new PdbError('E_HOOK_INPUT', 'pdb-env hook claude-code reads the hook JSON on stdin, and stdin is a terminal', {
      hint: 'Claude Code runs it; to install it: pdb-env hook claude-code --print-settings',
    });
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const hook: DefineCommand<'hook'> = (cmd, _ctx, sub) => {
  cmd.addHelpText('after', '\nIntegrations that run pdb-env from another tool: see pdb-env hook claude-code --help.');
  sub['claude-code']
    .addHelpText(
      'after',
      `
Claude Code runs this with the hook's JSON on stdin. WorktreeCreate (claude --worktree
NAME, a subagent's isolation: worktree): a session of the project around "cwd", named
from the hook's name (name, worktree_name or branch_name, else the last part of
worktree_path, else session_id; unsafe characters become "-", "-2", "-3" ... when taken),
with pdb-env.json's "backend", or else the best available of btrfs-snapshot, reflink and
full-copy (the choice is said on stderr). Only the session's root is printed on stdout.
WorktreeRemove (worktree_path): the session is checkpointed, its Snapshot pinned (pdb-env
create NAME --base DIGEST brings it back) and the session discarded; refused (exit 1)
while another process works in it. Any other event or input: E_HOOK_INPUT, exit 1,
nothing created. The store: --store, PDB_ENV_STORE or the project's default store.

Install (merge into the project's .claude/settings.json):
  pdb-env hook claude-code --print-settings > .claude/settings.json
  claude --worktree feature-x      # runs in the pdb-env session feature-x`,
    )
    .action(async (o, command) => {
      const g = command.optsWithGlobals();
      const { hookCreate, hookRemove, hookSettings, parseHookInput } = await import('../../sessions/hooks/claude-code.js');
      if (o.printSettings) {
        const words = [process.execPath, cliEntry(), 'hook', 'claude-code', ...(g.store ? ['--store', resolve(g.store)] : [])];
        process.stdout.write(`${JSON.stringify(hookSettings(words.map(shellWord).join(' ')), null, 2)}\n`);
        return;
      }
      const input = parseHookInput(await readStdin());
      const say = (line: string) => process.stderr.write(`${line}\n`);
      if (input.event === 'WorktreeCreate') {
        const r = await hookCreate(input, { store: g.store, say });
        process.stdout.write(g.json ? `${JSON.stringify(r, null, 2)}\n` : `${r.root}\n`);
      } else {
        const r = await hookRemove(input, { store: g.store, say });
        if (g.json) process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
      }
    });
};

export const commands: CommandDefinitions<'hook'> = { hook };
