// The pdb-env command line as a function: main(argv) parses, runs one command and returns its
// exit status. cli/bin.ts is the executable.
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
