/**
 * Test clients for a running node (bitcoind or the devnode): raw JSON-RPC over HTTP (status,
 * parsed body and text, as a client sees them), REST GETs, and a ZMQ subscriber collecting every
 * message with its frames.
 */
import { randomBytes } from 'node:crypto';
import { Subscriber } from 'zeromq';
import { waitFor } from '../../support/wait.js';

/** Where a node answers RPC and REST (a Devnode, a Bitcoind or a TestNode). */
export type NodeAddress = { readonly rpc: { host: string; port: number; user: string; password: string } };

export type RawRpcReply = {
  status: number;
  body: { result: unknown; error: { code: number; message: string } | null; id: unknown };
  text: string;
};

/**
 * fetch, tried once more when a kept-alive connection turns out closed by a server that just
 * restarted (undici may hand out a pooled socket before it has seen the close).
 */
async function fetchFresh(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    if (cause?.code === 'UND_ERR_SOCKET' || cause?.code === 'ECONNRESET') return fetch(url, init);
    throw err;
  }
}

/** POSTs one JSON-RPC 1.0 request (as bitcoin-cli does) and returns status and body. */
export async function rawRpc(node: NodeAddress, method: string, params: unknown[] = [], id: unknown = 1, path = '/'): Promise<RawRpcReply> {
  const auth = `Basic ${Buffer.from(`${node.rpc.user}:${node.rpc.password}`).toString('base64')}`;
  const res = await fetchFresh(`http://${node.rpc.host}:${node.rpc.port}${path}`, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '1.0', id, method, params }),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), text };
}

/** The result of a call that must succeed. */
export async function rpcResult<T = unknown>(node: NodeAddress, method: string, params: unknown[] = []): Promise<T> {
  const r = await rawRpc(node, method, params);
  if (r.body.error) throw new Error(`${method} failed: ${r.body.error.code} ${r.body.error.message}`);
  return r.body.result as T;
}

export type RestReply = { status: number; type: string; bytes: Uint8Array; text: string };

export async function restGet(node: NodeAddress, path: string): Promise<RestReply> {
  const res = await fetchFresh(`http://${node.rpc.host}:${node.rpc.port}${path}`);
  const bytes = new Uint8Array(await res.arrayBuffer());
  return { status: res.status, type: res.headers.get('content-type') ?? '', bytes, text: Buffer.from(bytes).toString('utf8') };
}

export type ZmqMessage = { topic: string; body: Uint8Array; seq: number | null; frames: number };

/** Subscribes to `topics` (default: all) and records messages until `close()`. */
export async function collectZmq(
  url: string,
  topics: string[] = [],
): Promise<{ messages: ZmqMessage[]; settle: (quietMs?: number) => Promise<void>; close: () => void }> {
  const sub = new Subscriber();
  sub.connect(url);
  sub.subscribe(...topics);
  const messages: ZmqMessage[] = [];
  let last = Date.now();
  let closed = false;
  void (async () => {
    try {
      for await (const frames of sub) {
        last = Date.now();
        const seqFrame = frames[2];
        messages.push({
          topic: frames[0]!.toString('utf8'),
          body: new Uint8Array(frames[1] ?? Buffer.alloc(0)),
          seq: seqFrame && seqFrame.length === 4 ? seqFrame.readUInt32LE(0) : null,
          frames: frames.length,
        });
      }
    } catch (err) {
      if (!closed) throw err;
    }
  })();
  // A PUB/SUB connection drops what is published before it is established: give it a moment.
  await new Promise((r) => setTimeout(r, 300));
  return {
    messages,
    /** Waits `quietMs`, then until no message arrived for `quietMs`. */
    settle: async (quietMs = 200) => {
      await new Promise((r) => setTimeout(r, quietMs));
      while (Date.now() - last < quietMs) await new Promise((r) => setTimeout(r, 50));
    },
    close: () => {
      closed = true;
      sub.close();
    },
  };
}

/**
 * Waits until `zmq` has every message the devnode published so far: publishes a marker through
 * the same socket, after everything queued, and waits for it (one socket keeps its order), then
 * takes it out of the messages. For the devnode only (bitcoind has no way to send one).
 */
export async function zmqSentinel(
  node: { faults: { zmq: { publishRaw(frames: (string | Uint8Array)[]): Promise<void> } } },
  zmq: { messages: ZmqMessage[] },
): Promise<void> {
  const body = new Uint8Array(randomBytes(16));
  const isMarker = (m: ZmqMessage) => m.topic === SENTINEL_TOPIC && Buffer.from(m.body).equals(body);
  await node.faults.zmq.publishRaw([SENTINEL_TOPIC, body, new Uint8Array(4)]);
  await waitFor('the ZMQ sentinel', () => zmq.messages.some(isMarker), 30_000);
  zmq.messages.splice(zmq.messages.findIndex(isMarker), 1);
}

/** Starts with `hashblock`: a subscriber gets a topic by its prefix, and every collector here takes hashblock. */
const SENTINEL_TOPIC = 'hashblock-test-sentinel';

/** `topic` plus, for `sequence`, its label and mempool sequence: the pattern of a message stream. */
export function zmqPattern(m: { topic: string; body: Uint8Array }): string {
  if (m.topic !== 'sequence') return m.topic;
  const label = String.fromCharCode(m.body[32]!);
  if (m.body.length === 41) return `sequence ${label} ${Buffer.from(m.body.subarray(33)).readBigUInt64LE(0)}`;
  return `sequence ${label}`;
}
