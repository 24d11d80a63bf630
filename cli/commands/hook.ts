// `pdb-env hook claude-code`: Claude Code's WorktreeCreate and WorktreeRemove hooks answered with
// pdb-env sessions (sessions/hooks/claude-code.ts); --print-settings prints what installs them.
import { accessSync, constants, realpathSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { PdbError } from '../../model/errors.js';
import { cliEntry, packageFile } from '../../model/paths.js';
import type { CommandDefinitions, DefineCommand } from '../context.js';

/** A word for sh -c: bare when it is safe, single-quoted otherwise. */
const shellWord = (s: string) => (/^[A-Za-z0-9_./:=@%+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** Is the `pdb-env` that PATH finds first this install's own bin file (by real path)? */
export function pdbEnvOnPath(pathVar: string, bin = packageFile('bin', 'pdb-env')): boolean {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return null; // not there: the next PATH entry, or not on PATH at all
    }
  };
  for (const dir of pathVar.split(delimiter).filter(Boolean)) {
    const found = real(join(dir, 'pdb-env'));
    if (!found) continue;
    try {
      accessSync(found, constants.X_OK);
    } catch {
      continue; // not executable: the shell would pass it by too
    }
    return found === real(bin);
  }
  return false;
}

/** A hook's output on this process's stdout and stderr (the daemon's goes to its client: cli/cheap-path.ts). */
const processIo = { out: (text: string) => void process.stdout.write(text), err: (text: string) => void process.stderr.write(text) };

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY)
    throw new PdbError('E_HOOK_INPUT', 'pdb-env hook claude-code reads the hook JSON on stdin, and stdin is a terminal', {
      hint: 'Claude Code runs it; to install it: pdb-env hook claude-code --print-settings',
    });
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The pdb-env invocation settings name: `pdb-env` from PATH when it is this install, else node and this install by absolute path. */
function selfCommand(words: string[]): string {
  const onPath = pdbEnvOnPath(process.env.PATH ?? '');
  if (!onPath)
    process.stderr.write(
      `pdb-env: this install is not the pdb-env on PATH, so the settings name node (${process.execPath}) and this install by absolute path: after moving or upgrading either, print the settings again\n`,
    );
  return [...(onPath ? ['pdb-env'] : [process.execPath, cliEntry()]), ...words].map(shellWord).join(' ');
}

/** `hook codex|cursor|gemini`: one action for every row of sessions/hooks/dialects.ts. */
function agentHooks(ctx: Parameters<DefineCommand<'hook'>>[1], sub: Parameters<DefineCommand<'hook'>>[2]): void {
  for (const agent of ['codex', 'cursor', 'gemini'] as const)
    sub[agent]
      .argument('[payload]', "the payload, when the agent passes it as an argument (Codex's notify); otherwise it is read on stdin")
      .addHelpText(
        'after',
        `
${agent} runs this with its hook payload (docs/agents.md lists the events and fields, and the
version each was checked against). The session whose root holds the payload's cwd is
checkpointed, labelled "${agent} before|after turn [ID]: PROMPT" (pdb-env log NAME shows it,
pdb-env restore NAME --to N goes back). Outside a session, a malformed or over-1 MB payload,
or any failure: said on stderr, no checkpoint, and still the exit status ${agent} treats as
"go on" (0), with only what ${agent} expects on stdout. The same label twice in a row (a hook
fired twice for one turn) makes no second checkpoint.
Install: pdb-env hook ${agent} --print-settings`,
      )
      .action(async (payload: string | undefined, o, command) => {
        const g = command.optsWithGlobals();
        const { HOOK_DIALECTS } = await import('../../sessions/hooks/dialects.js');
        const d = HOOK_DIALECTS[agent];
        if (o.printSettings) {
          process.stdout.write(d.settings(selfCommand(['hook', agent, ...(g.store ? ['--store', resolve(g.store)] : [])])));
          return;
        }
        const { agentTurn } = await import('../../sessions/hooks/turn-hook.js');
        const text = () => (d.input === 'argv' && payload !== undefined ? payload : readStdin());
        ctx.exitCode = await agentTurn(agent, text, { store: g.store, json: g.json }, processIo);
      });
}

const hook: DefineCommand<'hook'> = (cmd, ctx, sub) => {
  agentHooks(ctx, sub);

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
while another process works in it. UserPromptSubmit: a checkpoint labelled "before
turn: PROMPT" of the session whose root holds "cwd", before Claude acts; Stop: one
labelled "after turn: PROMPT" (pdb-env log NAME lists them, pdb-env restore NAME --to N
goes back). Outside a session they do nothing (exit 0); a failure is said on stderr
(exit 1) and never blocks the turn; nothing is printed on stdout. Any other event or
input: E_HOOK_INPUT, exit 1, nothing created. The store: --store, PDB_ENV_STORE or the project's default store.

Install (merge into the project's .claude/settings.json; it adds all four hooks). The
command is "pdb-env hook claude-code" when the pdb-env on PATH is this install; otherwise
node and this install by absolute path (said on stderr): print it again after moving either.
  pdb-env hook claude-code --print-settings > .claude/settings.json
  claude --worktree feature-x      # runs in the pdb-env session feature-x`,
    )
    .action(async (o, command) => {
      const g = command.optsWithGlobals();
      const { hookCreate, hookRemove, hookSettings, parseHookInput } = await import('../../sessions/hooks/claude-code.js');
      if (o.printSettings) {
        // `pdb-env` from PATH survives a node upgrade or a reinstall elsewhere; absolute paths do not.
        const onPath = pdbEnvOnPath(process.env.PATH ?? '');
        const entry = onPath ? ['pdb-env'] : [process.execPath, cliEntry()];
        if (!onPath)
          process.stderr.write(
            `pdb-env: this install is not the pdb-env on PATH, so the settings name node (${process.execPath}) and this install by absolute path: after moving or upgrading either, print the settings again (or put pdb-env on PATH and print them then)\n`,
          );
        const words = [...entry, 'hook', 'claude-code', ...(g.store ? ['--store', resolve(g.store)] : [])];
        process.stdout.write(`${JSON.stringify(hookSettings(words.map(shellWord).join(' ')), null, 2)}\n`);
        return;
      }
      const input = parseHookInput(await readStdin());
      const say = (line: string) => process.stderr.write(`${line}\n`);
      if (input.event === 'UserPromptSubmit' || input.event === 'Stop') {
        // A failure is said on stderr with exit 1, which Claude Code shows and goes on (turn-hook.ts).
        const { claudeTurn } = await import('../../sessions/hooks/turn-hook.js');
        ctx.exitCode = await claudeTurn(input, g.store, processIo);
        return;
      }
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
