import { spawn } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import fs from 'node:fs';
import { client, ndJsonStream, PROTOCOL_VERSION } from '@agentclientprotocol/sdk';
const [cmd, cwd, mode, logf] = process.argv.slice(2);
const log = (...a) => fs.appendFileSync(logf, a.map((x) => typeof x === 'string' ? x : JSON.stringify(x)).join(' ') + '\n');
const child = spawn(cmd, JSON.parse(process.env.ARGS ?? '[]'), { cwd, env: process.env, stdio: ['pipe', 'pipe', 'pipe'] });
child.stderr.on('data', (d) => log('STDERR', d.toString()));
const app = client({ name: 'probe' });
app.onRequest('fs/read_text_file', async ({ params }) => { log('READ', params); return { content: fs.readFileSync(params.path, 'utf8') }; })
  .onRequest('fs/write_text_file', async ({ params }) => { log('WRITE', params); if (params.path.includes('.env')) { throw new Error('E_POLICY_DENIED: denied'); } fs.writeFileSync(params.path, params.content); return {}; })
  .onRequest('session/request_permission', async ({ params }) => { log('PERM', params); const deny = JSON.stringify(params.toolCall).includes('.env'); const o = params.options.find((o) => o.kind === (deny ? 'reject_once' : 'allow_once')); return { outcome: { outcome: 'selected', optionId: o.optionId } }; })
  .onRequest('terminal/create', async ({ params }) => { log('TERM', params); throw new Error('no terminals'); })
  .onNotification('session/update', ({ params }) => { log('UPDATE', params.update); });
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const t = setTimeout(() => { log('TIMEOUT'); process.exit(2); }, 120000);
await app.connectWith(stream, async (agent) => {
  const init = await agent.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: process.env.TERMINAL === '1' }, clientInfo: { name: 'probe', version: '1' } });
  log('INIT', init);
  const s = await agent.buildSession(cwd).start();
  log('SESSION', s.newSessionResponse);
  if (mode) log('SETMODE', await agent.request('session/set_mode', { sessionId: s.sessionId, modeId: mode }));
  let r = await s.prompt('do the thing');
  log('STOP', r);
  for (let k = 0; k < 3 && r.stopReason === 'cancelled'; k++) { r = await s.prompt('pdb-env: the workspace policy denied that request (E_POLICY_DENIED: .env is a credential path); go on with the next step.'); log('STOP', r); }
});
clearTimeout(t);
child.kill();
process.exit(0);
