// `pdb-env model serve`: the scripted model server on 127.0.0.1, playing one cassette to whatever
// agent is pointed at it, until TERM or INT.
import { appendFileSync, writeFileSync } from 'node:fs';
import { PdbError } from '../../model/errors.js';
import type { CommandDefinitions, DefineCommand } from '../context.js';

/** A port: 0 (any free one) to 65535. */
export function parsePort(v: string | undefined): number {
  if (v === undefined) return 0;
  const n = Number(v);
  if (!/^\d+$/.test(v) || n > 65535) throw new PdbError('E_USAGE', `--port must be 0 (any free port) to 65535, got "${v}"`);
  return n;
}

const model: DefineCommand<'model'> = (cmd, _ctx, sub) => {
  cmd.addHelpText('after', '\nThe scripted model: see pdb-env model serve --help and docs/agents.md.');
  sub.serve
    .addHelpText(
      'after',
      `
Prints the base URL (http://127.0.0.1:PORT) as the first line on stdout, then serves
until TERM or INT. Endpoints: POST /v1/responses (OpenAI Responses, SSE), POST
/v1/messages and /v1/messages/count_tokens, HEAD / (Anthropic Messages, SSE), POST
/v1/chat/completions (OpenAI Chat Completions, streaming), GET /v1/models.

Each cassette step becomes one tool call per turn through the tools the agent's request
declares (a file write through its write or patch tool, the rest through its shell
tool), and each result is checked before the next step. A failed step ends the turn
with a message naming it; a request it cannot map gets HTTP 400 in the protocol's
error format. Both are logged. The model is scripted: nothing here is a model's output.

Example:
  pdb-env model serve --cassette cassettes/demo.json --port 0 --log /tmp/model.log`,
    )
    .action(async (_o, command) => {
      const o = command.optsWithGlobals();
      const port = parsePort(o.port);
      const [{ loadCassette }, { startModelServer }] = await Promise.all([
        import('../../agents/cassette/cassette.js'),
        import('../../agents/model-server/server.js'),
      ]);
      const cassette = await loadCassette(o.cassette);
      if (o.log) writeFileSync(o.log, '', { flag: 'a' });
      const server = await startModelServer({
        cassette,
        port,
        root: o.root ?? null,
        onEvent: o.log ? (e) => appendFileSync(o.log!, `${JSON.stringify(e)}\n`) : undefined,
      });
      process.stdout.write(`${server.url}\n`);
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once('SIGTERM', stop).once('SIGINT', stop).once('SIGHUP', stop);
      });
      await server.close();
    });
};

export const commands: CommandDefinitions<'model'> = { model };
