#!/usr/bin/env node
// The scripted agent: a deterministic stand-in for a coding agent that performs the operation
// contract. Runnable two ways, like the real agents it stands in for:
//   node dist/agents/scripted-agent.js --role a        (or --prompt TEXT)  plain command in its cwd
//   node dist/agents/scripted-agent.js --acp                               ACP agent on stdio
// Over ACP it does its text reads and writes through the client's fs methods and its deletes,
// renames, symlinks and chmods through client terminals, so the client's confinement is in the
// path of every change; as a command it uses the filesystem of its working directory directly.
import { existsSync, realpathSync } from 'node:fs';
import { chmod, lstat, mkdir, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { agent, ndJsonStream, PROTOCOL_VERSION, type AgentContext } from '@agentclientprotocol/sdk';
import { packageVersion } from '../model/paths.js';
import {
  CONTRACT_VERSION,
  contractPaths,
  isAgentRole,
  nestedContent,
  peerOf,
  roleFromPrompt,
  sharedLine,
  type AgentReport,
  type AgentRole,
} from './contract.js';

export const SCRIPTED_AGENT_NAME = 'pdb-env-scripted-agent';

export function scriptedAgentVersion(): string {
  try {
    return packageVersion();
  } catch {
    return '0.0.0'; // a version is reported, never required
  }
}

/** The file operations the contract needs, relative to the agent's working directory. */
export interface ContractOps {
  list(rel: string): Promise<string[]>;
  exists(rel: string): Promise<boolean>;
  readText(rel: string): Promise<string>;
  writeText(rel: string, content: string): Promise<void>;
  mkdirp(rel: string): Promise<void>;
  remove(rel: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  symlink(target: string, rel: string): Promise<void>;
  makeExecutable(rel: string): Promise<void>;
}

export function directOps(cwd: string): ContractOps {
  const abs = (rel: string) => join(cwd, rel);
  return {
    list: async (rel) => (await readdir(abs(rel))).sort(),
    exists: async (rel) => (await lstat(abs(rel)).catch(() => null)) !== null,
    readText: (rel) => readFile(abs(rel), 'utf8'),
    writeText: (rel, content) => writeFile(abs(rel), content),
    mkdirp: async (rel) => void (await mkdir(abs(rel), { recursive: true })),
    remove: (rel) => rm(abs(rel)),
    rename: (from, to) => rename(abs(from), abs(to)),
    symlink: (target, rel) => symlink(target, abs(rel)),
    makeExecutable: (rel) => chmod(abs(rel), 0o755),
  };
}

/** Operations through the ACP client: fs methods for text, terminals for everything else. */
export function acpOps(client: AgentContext, sessionId: string, cwd: string, terminal: boolean): ContractOps {
  const direct = directOps(cwd);
  const abs = (rel: string) => join(cwd, rel);
  const run = async (command: string, args: string[]) => {
    const t = await client.createTerminal({ sessionId, command, args, cwd });
    try {
      const exit = await t.waitForExit();
      if (exit.exitCode !== 0) {
        const out = await t.currentOutput();
        throw new Error(`${command} exited ${exit.exitCode ?? exit.signal}: ${out.output.trim()}`);
      }
    } finally {
      await t.release();
    }
  };
  return {
    list: direct.list,
    exists: direct.exists,
    readText: async (rel) => (await client.request('fs/read_text_file', { sessionId, path: abs(rel) })).content,
    writeText: async (rel, content) => void (await client.request('fs/write_text_file', { sessionId, path: abs(rel), content })),
    mkdirp: terminal ? (rel) => run('mkdir', ['-p', '--', rel]) : direct.mkdirp,
    remove: terminal ? (rel) => run('rm', ['--', rel]) : direct.remove,
    rename: terminal ? (from, to) => run('mv', ['--', from, to]) : direct.rename,
    symlink: terminal ? (target, rel) => run('ln', ['-s', '--', target, rel]) : direct.symlink,
    makeExecutable: terminal ? (rel) => run('chmod', ['+x', '--', rel]) : direct.makeExecutable,
  };
}

/** Perform the contract for `role`; deterministic apart from the report's cwd and session name. */
export async function performContract(
  ops: ContractOps,
  role: AgentRole,
  identity: { cwd: string; sessionCwd?: string | null; session: string | null; outsideReadRefused?: boolean | null },
): Promise<AgentReport> {
  const p = contractPaths(role);
  const q = contractPaths(peerOf(role));
  // Inspect the base first: what is there, and that nothing of the peer is.
  const top = await ops.list('.');
  const peerOutputSeen =
    (await ops.exists(q.outDir)) || (await ops.exists(q.renameTo)) || (await ops.readText(p.shared)).includes(sharedLine(peerOf(role)));
  await ops.readText('README.md');
  const shared = await ops.readText(p.shared);
  await ops.writeText(p.shared, `${shared}${shared.endsWith('\n') || shared === '' ? '' : '\n'}${sharedLine(role)}\n`);
  await ops.remove(p.deleted);
  await ops.rename(p.renameFrom, p.renameTo);
  await ops.mkdirp(dirname(p.nestedFile));
  await ops.writeText(p.nestedFile, nestedContent(role));
  await ops.symlink(p.symlinkTarget, p.symlink);
  await ops.makeExecutable(p.exec);
  const report: AgentReport = {
    contract: CONTRACT_VERSION,
    agent: SCRIPTED_AGENT_NAME,
    role,
    cwd: identity.cwd,
    sessionCwd: identity.sessionCwd ?? null,
    session: identity.session,
    baseEntriesSeen: top.length,
    peerOutputSeen,
    outsideReadRefused: identity.outsideReadRefused ?? null,
  };
  await ops.writeText(p.report, `${JSON.stringify(report, null, 2)}\n`);
  return report;
}

/** Serve ACP on stdin/stdout until the client closes the connection. */
export async function serveAcp(input: ReadableStream<Uint8Array>, output: WritableStream<Uint8Array>): Promise<void> {
  let terminalCapable = false;
  const sessions = new Map<string, string>();
  let nextSession = 0;
  const app = agent({ name: SCRIPTED_AGENT_NAME })
    .onRequest('initialize', ({ params }) => {
      terminalCapable = params.clientCapabilities?.terminal === true;
      return {
        protocolVersion: PROTOCOL_VERSION,
        agentCapabilities: { loadSession: false },
        authMethods: [],
        agentInfo: { name: SCRIPTED_AGENT_NAME, version: scriptedAgentVersion() },
      };
    })
    .onRequest('session/new', ({ params }) => {
      const sessionId = `scripted-${++nextSession}`;
      sessions.set(sessionId, params.cwd);
      return { sessionId };
    })
    .onRequest('session/prompt', async ({ params, client }) => {
      const sessionCwd = sessions.get(params.sessionId);
      if (sessionCwd === undefined) throw new Error(`unknown session ${params.sessionId}`);
      const text = params.prompt.map((b) => (b.type === 'text' ? b.text : '')).join('\n');
      const role = roleFromPrompt(text);
      const say = (t: string) =>
        client.notify('session/update', {
          sessionId: params.sessionId,
          update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: t } },
        });
      if (!role) {
        await say('no pdb-env contract in this prompt; nothing done');
        return { stopReason: 'refusal' };
      }
      // The client must refuse anything outside the root, e.g. the session's own record one level up.
      const outsideReadRefused = await client
        .request('fs/read_text_file', { sessionId: params.sessionId, path: join(sessionCwd, '..', 'session.json') })
        .then(
          () => false,
          () => true,
        );
      await performContract(acpOps(client, params.sessionId, sessionCwd, terminalCapable), role, {
        cwd: process.cwd(),
        sessionCwd,
        session: process.env.PDB_ENV_SESSION ?? null,
        outsideReadRefused,
      });
      await say(`contract done for role ${role}`);
      return { stopReason: 'end_turn' };
    })
    .onNotification('session/cancel', () => {});
  const conn = app.connect(ndJsonStream(output, input));
  await conn.closed;
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { acp: { type: 'boolean' }, role: { type: 'string' }, prompt: { type: 'string' } },
    strict: true,
  });
  if (values.acp) {
    await serveAcp(
      Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>,
      Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
    );
    return 0;
  }
  const role = values.role ?? (values.prompt !== undefined ? roleFromPrompt(values.prompt) : null);
  if (!isAgentRole(role)) {
    process.stderr.write('usage: scripted-agent (--role a|b | --prompt TEXT-with-contract-marker | --acp)\n');
    return 2;
  }
  const report = await performContract(directOps(process.cwd()), role, {
    cwd: process.cwd(),
    session: process.env.PDB_ENV_SESSION ?? null,
  });
  process.stdout.write(`contract done for role ${report.role}: ${report.baseEntriesSeen} base entries seen\n`);
  return 0;
}

const invokedDirectly =
  process.argv[1] !== undefined && existsSync(process.argv[1]) && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`scripted agent failed: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
