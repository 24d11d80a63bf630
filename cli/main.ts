// The pdb-env command line on commander as a function: main(argv) parses, runs one command and
// returns its exit status; runCli(argv) runs it as the process's one command (the entry of the
// cli bundle, which pdb-env.cts runs, or this module where no bundle was built).
import { CommanderError } from '@commander-js/extra-typings';
import { emitError } from './output.js';
import type { CliContext } from './context.js';
import { createProgram, usageError, withDefaultCommand } from './program.js';

export async function main(argv: string[]): Promise<number> {
  const ctx: CliContext = { argv, exitCode: 0 };
  // Errors are JSON when --json came before any `--` (after it, words belong to the command run).
  const dashdash = argv.indexOf('--');
  const json = (dashdash < 0 ? argv : argv.slice(0, dashdash)).includes('--json');
  try {
    const program = createProgram(ctx);
    ctx.argv = withDefaultCommand(program, argv);
    await program.parseAsync(ctx.argv, { from: 'user' });
    return ctx.exitCode;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : emitError(json, usageError(err, ctx.command));
    return emitError(json, err);
  }
}

/** Run one command line (the arguments after `pdb-env`) as the process's one command; its exit status. */
export async function runCli(argv: string[]): Promise<number> {
  // A reader that went away (`pdb-env list | head -1`) is not an error of the command: the work is
  // done before its result is printed, so the rest of the output is dropped and the status stays
  // the command's own. Any other write error still surfaces.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
    });
  }
  return main(argv);
}
