/**
 * The API speaks two dialects over one index: Blockwire's own under `/v1`, and at the bare
 * paths the dialect of the Coinstack server (coinstack/coinstackd), so that Coinstack's own SDKs
 * work unmodified (docs/coinstack.md lists every difference, row by row). This is the one place
 * that decides which dialect a request is in: buildApi registers the route modules once per
 * dialect under its prefix and hands each module the dialect object, and everything that
 * differs between the two (error bodies, how the key is presented, request parsing, shapes of
 * answers and parameters) is a member of that object. Route modules never test the prefix or
 * the dialect's name.
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceError } from '../src/errors.js';

export type DialectName = 'v1' | 'coinstack';

/** How a request presents its key: a bearer token, or an HMAC signature over the request. */
export type Credentials =
  | { kind: 'none' }
  | { kind: 'token'; key: string | string[] | undefined }
  | { kind: 'hmac'; authorization: string };

/** What a route module needs of the dialect it is registered in. */
export interface Dialect {
  readonly name: DialectName;
  /** Path prefix its routes are served under (`/v1`, or `''` for the bare paths). */
  readonly prefix: string;
  /** Whether /openapi.json describes its routes (it describes one dialect: Blockwire's). */
  readonly described: boolean;
  /**
   * Installs what the dialect's scope needs before its routes: request parsing (content types),
   * and the not-found answer for paths under its prefix that no route serves.
   */
  install(scope: FastifyInstance): void;
  /** Sends `err` as this dialect's error answer (status, headers, body). */
  sendError(reply: FastifyReply, err: ServiceError): FastifyReply;
  /** How `request` presents its key (read in the authentication hook). */
  credentials(request: FastifyRequest): Credentials;
}
