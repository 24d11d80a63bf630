// Keeping a real agent on loopback. As root, the scripted model server starts in a new network
// namespace that has only `lo` (`unshare --net`, then `ip link set lo up`), and the agent joins
// that namespace (`nsenter --net=/proc/<server pid>/ns/net`): the only address it can reach is the
// server. Elsewhere the agent shares the host's network, and the run says so: its configuration
// points only at 127.0.0.1, which is a setting, not an enforcement.
import { execFileSync } from 'node:child_process';

export type NetworkMode = 'loopback-only' | 'not-enforced';

export interface NetworkPlan {
  mode: NetworkMode;
  /** Why the network could not be enforced; null when it is. */
  reason: string | null;
  /** Put before the server's command line (empty when not enforced). */
  serverPrefix: string[];
  /** Put before the agent's command line, given the server's pid (empty when not enforced). */
  agentPrefix(serverPid: number): string[];
}

function has(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** How this host can keep an agent on loopback; PDB_ENV_AGENT_NETNS=off opts out (the run then says so). */
export function networkPlan(env: NodeJS.ProcessEnv = process.env): NetworkPlan {
  const off = (reason: string): NetworkPlan => ({ mode: 'not-enforced', reason, serverPrefix: [], agentPrefix: () => [] });
  if (env.PDB_ENV_AGENT_NETNS === 'off')
    return off('PDB_ENV_AGENT_NETNS=off: the agent shares the host network; only its configuration points at 127.0.0.1');
  if (process.platform !== 'linux')
    return off(
      `no network namespaces on ${process.platform}: the agent shares the host network; only its configuration points at 127.0.0.1`,
    );
  if (process.getuid?.() !== 0)
    return off('not root: no network namespace, so the agent shares the host network; only its configuration points at 127.0.0.1');
  const missing = ['unshare', 'nsenter', 'ip'].filter((c) => !has(c));
  if (missing.length) return off(`${missing.join(', ')} not found (util-linux, iproute2): the agent shares the host network`);
  return {
    mode: 'loopback-only',
    reason: null,
    serverPrefix: ['unshare', '--net', '--', 'sh', '-c', 'ip link set lo up && exec "$0" "$@"'],
    agentPrefix: (pid) => ['nsenter', `--net=/proc/${pid}/ns/net`, '--'],
  };
}

/** The network interfaces inside the server's namespace (from its /proc/net/dev): evidence that only lo is there. */
export function namespaceInterfaces(serverPid: number): string[] | null {
  try {
    const text = execFileSync('nsenter', [`--net=/proc/${serverPid}/ns/net`, '--', 'cat', '/proc/net/dev'], {
      encoding: 'utf8',
      timeout: 5000,
    });
    return text
      .split('\n')
      .slice(2)
      .map((l) => l.split(':')[0]!.trim())
      .filter(Boolean);
  } catch {
    return null;
  }
}
