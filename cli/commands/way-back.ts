// The way back: export and apply carry a session's last checkpoint out of the store.
import { PdbError } from '../../model/errors.js';
import { emit } from '../output.js';
import { openService, type CommandDefinitions, type DefineCommand } from '../context.js';
import { createProgressReporter } from '../progress-line.js';

const exportCmd: DefineCommand<'export'> = (cmd) =>
  cmd
    .argument('<name>', 'the session whose last checkpoint is exported')
    .addHelpText(
      'after',
      `
--patch FILE: a patch in git's format, made by git (modes, symlinks, deletes, retypes,
binary files, non-ASCII names); git apply applies it to a copy of the base.

--git: a commit whose parent is the source's HEAD when the session was imported and
whose tree is that HEAD's tree with the session's changes (paths git ignores, and paths
the Snapshot excludes, stay as in HEAD). Your work tree, index, HEAD and current branch
are untouched; E_BRANCH_EXISTS when BRANCH exists and would not fast-forward.

On a terminal, an export running longer than a second shows files and bytes done.

Example:
  pdb-env checkpoint agent-a && pdb-env export agent-a --patch agent-a.patch
  git apply agent-a.patch
  pdb-env export agent-a --git && git log pdb-env/agent-a`,
    )
    .action(async (name, _o, command) => {
      const o = command.optsWithGlobals();
      if ((typeof o.patch === 'string') === (o.git === true))
        throw new PdbError('E_USAGE', 'export needs --patch FILE or --git (one of them)', {
          hint: 'pdb-env export --help shows the usage.',
        });
      const svc = await openService(o.store);
      const progress = createProgressReporter({ json: o.json === true });
      if (o.git === true) {
        const g = await svc
          .exportGit(name, { branch: o.branch, message: o.message, onProgress: progress.onProgress })
          .finally(progress.done);
        emit(
          o.json === true,
          g,
          () =>
            `${g.branch} -> ${g.commit} (parent ${g.parent.slice(0, 12)}): ${g.exported} path(s)${g.ignored.length ? `, ${g.ignored.length} ignored by git` : ''}`,
        );
        return;
      }
      const r = await svc.exportPatch(name, o.patch as string, { onProgress: progress.onProgress }).finally(progress.done);
      emit(o.json === true, r, () => `wrote ${r.changes} change(s) of ${r.session} to ${r.file} (${r.bytes} bytes)`);
    });

const apply: DefineCommand<'apply'> = (cmd) =>
  cmd
    .argument('<name>', 'the session whose last checkpoint is applied')
    .addHelpText(
      'after',
      `
Writes the changes of NAME's last checkpoint into DIR, path by path: every path they
touch must still be as the session's base had it (kind, bytes, exec bit), or nothing
is written (E_APPLY_CONFLICT lists the paths); a DIR that already holds the result is
left as it is (exit 0). One apply per directory at a time. Files are staged in
DIR/.pdb (hashed on their way out of the store) and each is re-checked just before it
is renamed into place: a path changed meanwhile stops the apply with E_APPLY_CONFLICT
and what was done is rolled back. Nothing is written through a symlink, into a mount
or outside DIR, and DIR may not be in a store. A crash is finished (or rolled back) by
pdb-env gc. Excluded paths (node_modules) and files the changes do not name are never
touched. On a terminal, an apply running longer than a second shows files and bytes
done (checked, then staged).

Example:
  pdb-env checkpoint agent-a && pdb-env apply agent-a`,
    )
    .action(async (name, _o, command) => {
      const o = command.optsWithGlobals();
      const progress = createProgressReporter({ json: o.json === true });
      const r = await (await openService(o.store)).apply(name, { to: o.to, onProgress: progress.onProgress }).finally(progress.done);
      emit(o.json === true, r, () =>
        r.alreadyApplied
          ? `${r.dir} already holds the ${r.changes} change(s) of ${r.session}: nothing to do`
          : `applied ${r.changes} change(s) of ${r.session} to ${r.dir}: ${r.written} written, ${r.deleted} removed`,
      );
    });

export const commands: CommandDefinitions<'way-back'> = { export: exportCmd, apply };
