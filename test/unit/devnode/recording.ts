/**
 * Access to the recorded Bitcoin Core 30.0 session (../shared/fixtures/bitcoind): RPC calls by
 * id, REST calls by path, ZMQ messages, and a walker over every JSON value.
 */
import { readFixtureJsonl } from '../../support/fixtures.js';

export type RecordedRpc = {
  step: string;
  path: string;
  request: { jsonrpc: string; id: number; method: string; params: unknown[] };
  http_status: number;
  response: { result: unknown; error: { code: number; message: string } | null; id: number };
};

export type RecordedRest = {
  step: string;
  path: string;
  http_status: number;
  content_type: string;
  body: { hex?: string; text?: string };
};

export type RecordedZmq = { step: string; topic: string; body_hex: string; seq: number; frames: number };

export async function loadRecording() {
  const rpc = await readFixtureJsonl<RecordedRpc>('bitcoind', 'rpc.jsonl');
  const rest = await readFixtureJsonl<RecordedRest>('bitcoind', 'rest.jsonl');
  const zmq = await readFixtureJsonl<RecordedZmq>('bitcoind', 'zmq.jsonl');
  const byId = new Map(rpc.map((r) => [r.request.id, r]));
  return {
    rpc,
    rest,
    zmq,
    /** The recorded call with this JSON-RPC id. */
    call(id: number): RecordedRpc {
      const r = byId.get(id);
      if (!r) throw new Error(`no recorded call ${id}`);
      return r;
    },
    /** The recorded REST call whose path ends with `suffix` (and contains `part`). */
    restCall(suffix: string, part = ''): RecordedRest {
      const r = rest.find((x) => x.path.endsWith(suffix) && x.path.includes(part));
      if (!r) throw new Error(`no recorded REST call ending ${suffix}`);
      return r;
    },
  };
}

/** Calls `fn` on every object of a JSON value. */
export function walkObjects(v: unknown, fn: (o: Record<string, unknown>) => void): void {
  if (Array.isArray(v)) v.forEach((x) => walkObjects(x, fn));
  else if (v && typeof v === 'object') {
    fn(v as Record<string, unknown>);
    Object.values(v).forEach((x) => walkObjects(x, fn));
  }
}

/**
 * The JSON "shape" of a value: key order and types, arrays by their first element. Numbers are
 * 'number' whatever their value; null stays null.
 */
export function shapeOf(v: unknown): unknown {
  if (v === null) return null;
  if (Array.isArray(v)) return v.length ? [shapeOf(v[0])] : [];
  if (typeof v === 'object') return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, shapeOf(x)]));
  return typeof v;
}

/** The JSON text of the object that starts with `{"<key>":"<value>"` inside `text` (brace matched). */
export function objectText(text: string, key: string, value: string): string {
  const start = text.indexOf(`{"${key}":"${value}"`);
  if (start < 0) throw new Error(`no object with ${key}=${value}`);
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return text.slice(start, i + 1);
    }
  }
  throw new Error('unbalanced JSON');
}
