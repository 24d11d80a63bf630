// pdb-env's scripted model server: an HTTP server on 127.0.0.1 that speaks the OpenAI Responses,
// Anthropic Messages and OpenAI Chat Completions protocols and plays one cassette to whatever
// agent calls it. The agent binary, its tools and its file writes are real; only the model is
// scripted. Every request is logged as an event; one it cannot map gets an error in the
// protocol's own format (HTTP 400), so the agent stops with a message instead of waiting.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { PdbError } from '../../model/errors.js';
import type { LoadedCassette } from '../cassette/cassette.js';
import { chatError, chatReply, parseChatRequest } from './chat.js';
import { ProtocolError, type Conversation, type Protocol, type Reply } from './conversation.js';
import { summarize, type ServerEvent, type ServerSummary } from './events.js';
import { countTokens, messagesError, messagesReply, parseMessagesRequest } from './messages.js';
import { decide } from './planner.js';
import { parseResponsesRequest, responsesError, responsesReply } from './responses.js';
import { describeCatalog, toolCatalog } from './tools.js';

export interface ModelServerOptions {
  cassette: LoadedCassette;
  /** 0 (default): any free port. */
  port?: number;
  /** The session root, for agents whose requests do not name their working directory. */
  root?: string | null;
  /** Called with every event as it happens (the CLI appends them to --log). */
  onEvent?: (e: ServerEvent) => void;
}

export interface ModelServer {
  /** http://127.0.0.1:PORT */
  url: string;
  port: number;
  events: readonly ServerEvent[];
  summary(): ServerSummary;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 64 * 1024 * 1024;

const PROTOCOL_IO: Record<
  Protocol,
  {
    parse(body: unknown): Conversation;
    reply(conv: Conversation, reply: Reply): { contentType: string; body: string };
    error(message: string): string;
    idPrefix: string;
  }
> = {
  responses: { parse: parseResponsesRequest, reply: responsesReply, error: responsesError, idPrefix: 'call_' },
  messages: { parse: parseMessagesRequest, reply: messagesReply, error: messagesError, idPrefix: 'toolu_' },
  chat: { parse: parseChatRequest, reply: chatReply, error: chatError, idPrefix: 'call_' },
};

function routeOf(method: string, path: string): { route: string; protocol: Protocol | null } {
  if (method === 'HEAD' || (method === 'GET' && (path === '/' || path === ''))) return { route: 'probe', protocol: null };
  if (method === 'GET' && path.endsWith('/models')) return { route: 'models', protocol: null };
  if (method !== 'POST') return { route: `${method} ${path}`, protocol: null };
  if (path.endsWith('/responses')) return { route: 'responses', protocol: 'responses' };
  if (path.endsWith('/messages/count_tokens')) return { route: 'count_tokens', protocol: 'messages' };
  if (path.endsWith('/messages')) return { route: 'messages', protocol: 'messages' };
  if (path.endsWith('/chat/completions')) return { route: 'chat', protocol: 'chat' };
  return { route: `${method} ${path}`, protocol: null };
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const enc = String(req.headers['content-encoding'] ?? '').toLowerCase();
  const decoder = enc === 'gzip' ? createGunzip() : enc === 'deflate' ? createInflate() : enc === 'br' ? createBrotliDecompress() : null;
  if (enc && !decoder && enc !== 'identity') throw new ProtocolError(415, `content-encoding ${enc} is not supported`);
  const source = decoder ? req.pipe(decoder) : req;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of source as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new ProtocolError(413, 'the request body is too large');
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    throw new ProtocolError(400, 'the request body is not JSON');
  }
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-cache', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** Answer one conversation request; the event says what was answered. */
function converse(
  o: ModelServerOptions,
  protocol: Protocol,
  body: unknown,
): { status: number; contentType: string; body: string; event: Partial<ServerEvent> } {
  const io = PROTOCOL_IO[protocol];
  const conv = io.parse(body);
  const tools = describeCatalog(toolCatalog(conv.tools, conv.text));
  const answer = (reply: Reply, event: Partial<ServerEvent>) => ({ status: 200, ...io.reply(conv, reply), event: { tools, ...event } });
  // A request without tools is a side request (a title, a summary): answered, never a step.
  if (conv.tools.length === 0) return answer({ kind: 'text', text: 'ok' }, { answer: 'text', message: 'the request declares no tools' });
  const d = decide(o.cassette.cassette, conv, { root: o.root ?? null, idPrefix: io.idPrefix });
  switch (d.kind) {
    case 'call':
      return answer(d.reply, { answer: 'call', step: d.step, phase: d.phase, tool: d.reply.name, stepsDone: d.stepsDone });
    case 'final':
      return answer(d.reply, { answer: 'final', stepsDone: d.stepsDone });
    case 'step-failed':
      return answer(d.reply, { answer: 'step-failed', step: d.step, stepsDone: d.stepsDone, message: d.reason });
    case 'unmappable': {
      const message = `pdb-env scripted model cannot map this request: ${d.reason}`;
      return {
        status: 400,
        contentType: 'application/json',
        body: io.error(message),
        event: { event: 'protocol-error', tools, step: d.step, stepsDone: d.stepsDone, message },
      };
    }
    default: {
      const never: never = d;
      throw new Error(`unknown decision ${JSON.stringify(never)}`);
    }
  }
}

/** Start the server on 127.0.0.1; resolves once it listens. */
export async function startModelServer(o: ModelServerOptions): Promise<ModelServer> {
  const t0 = performance.now();
  const events: ServerEvent[] = [];
  const emit = (e: Omit<ServerEvent, 't'>) => {
    const full = { t: Math.round(performance.now() - t0), ...e } as ServerEvent;
    events.push(full);
    o.onEvent?.(full);
  };
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const { route, protocol } = routeOf(req.method ?? 'GET', path);
    void (async () => {
      try {
        const body = req.method === 'POST' ? await readBody(req) : null;
        if (route === 'probe') {
          emit({ event: 'request', route, answer: 'probe' });
          return send(res, 200, 'application/json', JSON.stringify({ name: 'pdb-env scripted model', model: 'scripted' }));
        }
        if (route === 'models') {
          emit({ event: 'request', route, answer: 'models' });
          const data = [
            { id: 'pdb-env-scripted', object: 'model', type: 'model', owned_by: 'pdb-env', display_name: 'pdb-env scripted model' },
          ];
          return send(res, 200, 'application/json', JSON.stringify({ object: 'list', data }));
        }
        if (route === 'count_tokens') {
          emit({ event: 'request', route, protocol: 'messages', answer: 'tokens' });
          return send(res, 200, 'application/json', countTokens(body));
        }
        if (!protocol)
          throw new ProtocolError(
            404,
            `no such endpoint: ${route} (the server speaks POST /v1/responses, /v1/messages, /v1/chat/completions)`,
          );
        const r = converse(o, protocol, body);
        emit({ event: 'request', route, protocol, ...r.event });
        send(res, r.status, r.contentType, r.body);
      } catch (err) {
        const status = err instanceof ProtocolError ? err.status : 500;
        const message = `pdb-env scripted model: ${err instanceof Error ? err.message : String(err)}`;
        emit({ event: 'protocol-error', route, ...(protocol ? { protocol } : {}), message });
        if (!res.headersSent)
          send(res, status, 'application/json', protocol ? PROTOCOL_IO[protocol].error(message) : JSON.stringify({ error: { message } }));
        else res.end();
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) =>
      reject(
        new PdbError('E_USAGE', `the model server cannot listen on 127.0.0.1:${o.port ?? 0}: ${err.message}`, {
          hint: 'Pass --port 0 for any free port.',
          cause: err,
        }),
      ),
    );
    server.listen(o.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  emit({ event: 'listening', url });
  return {
    url,
    port,
    events,
    summary: () => summarize(events),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          emit({ event: 'closed' });
          resolve();
        });
      }),
  };
}
