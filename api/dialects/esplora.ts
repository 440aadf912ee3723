/**
 * The Esplora dialect, served under `/esplora`: Blockstream's esplora REST API (API.md, as
 * Blockstream's electrs answers it), so that Esplora clients (BDK, mempool.js, LWK, bitcoinerlab's
 * explorer…) take a Blockwire base URL as is. Esplora clients send no headers, so the base URL can
 * carry the key: `/esplora/{api key}/…` is `/esplora/…` with that key (the key is taken off the
 * path before routing, `movePathKey`, so no log line or answer ever holds it); `/esplora/…` also
 * takes the `apiKey` header, and with ESPLORA_ANONYMOUS_RATE_LIMIT above 0 no key at all (each
 * client address limited on its own, api/anonymous.ts). Answers as electrs's: errors and
 * non-JSON answers in plain text (`Transaction not found`, `Invalid hex string`…), a path no
 * route serves `404 endpoint does not exist "<path>"` whatever the method, POST /tx's body the
 * transaction's hex as text whatever its Content-Type. docs/esplora.md lists every difference.
 * @module
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_CODES, type ServiceError, type ErrorCode } from '../../src/errors.js';
import type { DialectEdge } from '../dialect.js';

const ESPLORA_PREFIX = '/esplora';

/** Where movePathKey leaves the key it took off the path. */
const PATH_KEY = Symbol('blockwire.esploraPathKey');
type WithPathKey = IncomingMessage & { [PATH_KEY]?: string; originalUrl?: string };

/** Keys are `bw_` + base64url (src/auth/api-key.ts); no Esplora path starts with that. */
const KEYED_PATH = /^\/esplora\/(bw_[^/?#]*)(?=[/?#]|$)/;

/**
 * fastify's `rewriteUrl`: `/esplora/bw_…/rest` is routed as `/esplora/rest`, its key kept aside
 * for the dialect's credentials. The URL fastify keeps as the original is redacted too.
 */
export function movePathKey(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const m = KEYED_PATH.exec(url);
  if (!m) return url;
  const rest = url.slice(m[0].length);
  // (keys are base64url: nothing in one is percent-encoded)
  (req as WithPathKey)[PATH_KEY] = m[1]!;
  (req as WithPathKey).originalUrl = `${ESPLORA_PREFIX}/[redacted]${rest}`;
  return `${ESPLORA_PREFIX}${rest}`;
}

/** electrs's texts for what Blockwire refuses (rest.rs: HttpError messages and their statuses). */
const TEXTS: Partial<Record<ErrorCode, [number, string]>> = {
  ERR_API_KEY_MISSING: [401, 'missing API key: give it in the base URL (/esplora/{key}/) or the apiKey header'],
  ERR_TX_NOT_FOUND: [404, 'Transaction not found'],
  ERR_BLOCK_NOT_FOUND: [404, 'Block not found'],
  ERR_INVALID_HASH: [400, 'Invalid hex string'],
  ERR_INVALID_ADDRESS: [400, 'Invalid Bitcoin address'],
  ERR_WRONG_NETWORK: [400, 'Address on invalid network'],
  ERR_INVALID_PARAMETER: [400, 'Invalid number'],
};

/** Broadcast refusals: electrs answers 400 with the node's error as its RPC client printed it. */
const NODE_CODES: Partial<Record<ErrorCode, number>> = {
  ERR_TX_DECODE: -22,
  ERR_TX_REJECTED: -26,
  ERR_TX_FEE_TOO_HIGH: -25,
  ERR_TX_CONFLICT: -26,
  ERR_TX_INPUTS_MISSING: -25,
  ERR_TX_INPUTS_UNKNOWN: -25,
  ERR_TX_NOT_FINAL: -26,
  ERR_TX_MEMPOOL_LIMIT: -26,
};

/** The status and text of an error in this dialect. */
function esploraErrorText(err: ServiceError): [number, string] {
  const node = NODE_CODES[err.code];
  if (node !== undefined) {
    // (a body that is no transaction never reaches the node: Core's text for what it would say)
    const message =
      err.code === 'ERR_TX_DECODE' ? 'TX decode failed. Make sure the tx has at least one input.' : (err.errorCause ?? err.message);
    return [400, `sendrawtransaction RPC error: ${JSON.stringify({ code: node, message })}`];
  }
  const fixed = TEXTS[err.code];
  // (a message of the route's own — "tx index out of range" — wins over the code's default text)
  if (fixed && err.message === ERROR_CODES[err.code].message) return fixed;
  return [fixed?.[0] ?? err.status, err.message];
}

function sendEsploraError(reply: FastifyReply, err: ServiceError): FastifyReply {
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  const [status, text] = esploraErrorText(err);
  return reply.code(status).type('text/plain').send(text);
}

export const esploraDialect: DialectEdge = {
  name: 'esplora',
  prefix: ESPLORA_PREFIX,
  described: false,
  install(scope) {
    // POST /tx: the body is the transaction's hex, whatever Content-Type the client sends.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
    scope.setNotFoundHandler((request, reply) => {
      const path = request.url.split('?')[0]!.slice(ESPLORA_PREFIX.length) || '/';
      return reply
        .code(404)
        .type('text/plain')
        .send(`endpoint does not exist ${JSON.stringify(path)}`);
    });
  },
  sendError: sendEsploraError,
  credentials(request: FastifyRequest) {
    const inPath = (request.raw as WithPathKey)[PATH_KEY];
    const key = inPath ?? request.headers['apikey'];
    return key === undefined || key === '' ? { kind: 'none' } : { kind: 'token', key };
  },
  anonymousRateLimit: (deps) => deps.settings.esploraAnonymousRateLimit,
};
