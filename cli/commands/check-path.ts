// check-path: what the workspace policy of a session says about one path, and which rule decided.
import { emit } from '../output.js';
import { openService, type CliContext, type CommandDefinitions, type DefineCommand } from '../context.js';

const checkPath: DefineCommand<'check-path'> = (cmd, ctx: CliContext) =>
  cmd
    .argument('<name>', 'the session')
    .argument('<path>', 'a path relative to the session root (or absolute, inside it)')
    .addHelpText(
      'after',
      `
Prints whether an agent's file or terminal request may read (or, with --write,
write) PATH in NAME, and the rule that decided, like git check-ignore -v:
SOURCE:KIND PATTERN. Links inside the root are resolved first, as the ACP client
resolves them: the rule is for where PATH leads (shown as PATH -> RESOLVED), and a
link that leads outside the root is denied. The policy is the "policy" of pdb-env.json in the session
root (else the default), narrowed by --policy FILE. Exits 1 when denied.
Defence in depth for cooperative agents, not a sandbox.

Example:
  pdb-env check-path agent-a src/a.ts --write
  pdb-env check-path agent-a .env --json`,
    )
    .action(async (name, path, _o, command) => {
      const o = command.optsWithGlobals();
      const svc = await openService(o.store);
      const [{ loadPolicies }, { decideConfined }, root] = await Promise.all([
        import('../../sessions/runtime/load-policies.js'),
        import('../../agents/confine.js'),
        svc.path(name),
      ]);
      const access = o.write === true ? 'write' : 'read';
      // Links inside the root are resolved as the ACP client resolves them; the policy judges where they lead.
      const d = await decideConfined(await loadPolicies(root, o.policy), root, path, access);
      const shown = d.resolved !== null && d.resolved !== path ? `${path} -> ${d.resolved}` : path;
      emit(
        o.json === true,
        { session: name, path, access, ...d },
        () => `${d.allowed ? 'allowed' : 'denied '} ${access.padEnd(5)} ${d.rule}\t${shown}`,
      );
      ctx.exitCode = d.allowed ? 0 : 1;
    });

export const commands: CommandDefinitions<'check-path'> = { 'check-path': checkPath };
