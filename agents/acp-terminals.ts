// The ACP terminal methods on the client side: each terminal is a detached process group started
// in a directory the caller has already confined to the session root, with its output kept up to
// the agent's byte limit. Terminals the agent leaves behind are killed when the run ends.
import { spawn, type ChildProcess } from 'node:child_process';
import { RequestError } from '@agentclientprotocol/sdk';

export interface TerminalExit {
  exitCode: number | null;
  signal: string | null;
}

interface Terminal {
  readonly child: ChildProcess;
  readonly output: Buffer;
  readonly truncated: boolean;
  readonly exit: Promise<TerminalExit>;
  readonly exited: TerminalExit | null;
}

/** What terminal/create asks for (the protocol's fields this client uses). */
export interface TerminalRequest {
  command: string;
  args?: string[];
  env?: { name: string; value: string }[];
  outputByteLimit?: number | null;
}

export function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    /* already gone */
  }
}

export interface Terminals {
  /** Start a terminal in `cwd` (already confined); returns its id. */
  create(cwd: string, p: TerminalRequest): string;
  output(id: string): { output: string; truncated: boolean; exitStatus: TerminalExit | null };
  waitForExit(id: string): Promise<TerminalExit>;
  kill(id: string): void;
  release(id: string): void;
  /** Kill and forget every terminal left behind. */
  closeAll(): Promise<void>;
}

/** Start the process of one terminal and keep its output, dropped from the start beyond `limit` as the protocol asks. */
function startTerminal(cwd: string, env: Record<string, string | undefined>, p: TerminalRequest): Terminal {
  // Agents send either a program and its arguments or one shell command line.
  const [cmd, args] = (p.args?.length ?? 0) === 0 && /\s/.test(p.command) ? ['/bin/sh', ['-c', p.command]] : [p.command, p.args ?? []];
  const child = spawn(cmd, args, { cwd, env: { ...env, PWD: cwd }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const limit = p.outputByteLimit ?? null;
  const state = { output: Buffer.alloc(0), truncated: false, exited: null as TerminalExit | null };
  const append = (d: Buffer) => {
    state.output = Buffer.concat([state.output, d]);
    if (limit !== null && state.output.length > limit) {
      state.output = state.output.subarray(state.output.length - limit);
      state.truncated = true;
    }
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const exit = new Promise<TerminalExit>((res) => {
    child.on('error', (err) => {
      append(Buffer.from(`${err.message}\n`));
      state.exited ??= { exitCode: 127, signal: null };
      res(state.exited);
    });
    child.on('close', (code, signal) => {
      state.exited ??= { exitCode: code, signal: signal ?? null };
      res(state.exited);
    });
  });
  return {
    child,
    exit,
    get output() {
      return state.output;
    },
    get truncated() {
      return state.truncated;
    },
    get exited() {
      return state.exited;
    },
  };
}

/** The terminals of one client; `baseEnv` is added to the harness's environment, the agent's env on top. */
export function createTerminals(baseEnv: Record<string, string | undefined> = {}): Terminals {
  const terminals = new Map<string, Terminal>();
  let next = 0;
  const get = (id: string): Terminal => {
    const t = terminals.get(id);
    if (!t) throw new RequestError(-32002, `no terminal ${id}`);
    return t;
  };
  return {
    create(cwd, p) {
      const env: Record<string, string | undefined> = { ...process.env, ...baseEnv };
      for (const v of p.env ?? []) env[v.name] = v.value;
      const id = `term-${++next}`;
      terminals.set(id, startTerminal(cwd, env, p));
      return id;
    },
    output(id) {
      const t = get(id);
      return { output: t.output.toString('utf8'), truncated: t.truncated, exitStatus: t.exited };
    },
    waitForExit: (id) => get(id).exit,
    kill(id) {
      const t = get(id);
      if (!t.exited) killGroup(t.child, 'SIGKILL');
    },
    release(id) {
      const t = get(id);
      if (!t.exited) killGroup(t.child, 'SIGKILL');
      terminals.delete(id);
    },
    async closeAll() {
      for (const t of terminals.values()) if (!t.exited) killGroup(t.child, 'SIGKILL');
      await Promise.all([...terminals.values()].map((t) => t.exit));
      terminals.clear();
    },
  };
}
