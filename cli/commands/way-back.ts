// The way back: export and apply carry a session's last checkpoint out of the store.
import { PdbError } from '../../model/errors.js';
import { emit } from '../output.js';
import type { DefineCommand } from '../program.js';
import { openService } from './sessions.js';

const exportCmd: DefineCommand = (cmd) =>
  cmd
    .argument('<name>', 'the session whose last checkpoint is exported')
    .option('--patch <file>', "write git's binary patch of the checkpoint's changes to FILE (atomically)")
    .addHelpText(
      'after',
      `
--patch FILE: a patch in git's format, made by git (modes, symlinks, deletes, retypes,
binary files, non-ASCII names); git apply applies it to a copy of the base.

Example:
  pdb-env checkpoint agent-a && pdb-env export agent-a --patch agent-a.patch
  git apply agent-a.patch`,
    )
    .action(async (name, _o, command) => {
      const o = command.optsWithGlobals();
      if (typeof o.patch !== 'string')
        throw new PdbError('E_USAGE', 'export needs --patch FILE', { hint: 'pdb-env export --help shows the usage.' });
      const r = await (await openService(o.store)).exportPatch(name, o.patch);
      emit(o.json === true, r, () => `wrote ${r.changes} change(s) of ${r.session} to ${r.file} (${r.bytes} bytes)`);
    });

export const commands: Record<string, DefineCommand> = { export: exportCmd };
