/**
 * The credentials of open Coinstack sockets (`/sock`). A socket authenticates once, on its
 * upgrade request (an API key, or a signature over `GET /sock`); each of its commands is then run
 * as the REST request it stands for, carrying the socket's session token instead of the
 * upgrade's credentials (a signature covers one path and expires). The token is 32 random bytes,
 * known only to the socket's handler and forgotten when it closes; the key behind it is checked
 * again on every command (revoked: the command answers 401), with the scope of its route.
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** The header an injected command carries its socket's session token in. */
export const SESSION_HEADER = 'blockwire-socket-session';

/** What a socket proved on its upgrade: a bearer key, or the access key of a signing key. */
export type SocketCredentials = { kind: 'token'; key: string } | { kind: 'signing'; accessKey: string };

const sessions = new Map<string, SocketCredentials>();

/** Opens a session for `creds`; returns its token and its end. */
export function openSocketSession(creds: SocketCredentials): { token: string; close(): void } {
  const token = randomBytes(32).toString('base64url');
  sessions.set(token, creds);
  return { token, close: () => void sessions.delete(token) };
}

/** The key each socket upgrade's check authenticated, by the check's request (read back by the upgrade). */
const upgradeKeys = new WeakMap<IncomingMessage, bigint>();

/** The route answering an upgrade's check (`GET /sock`, `GET /websocket`) records the key it authenticated. */
export function noteSocketKey(raw: IncomingMessage, keyId: bigint): void {
  upgradeKeys.set(raw, keyId);
}

/** The key the check request `raw` authenticated, once its route ran. */
export function socketKeyOf(raw: IncomingMessage): bigint | undefined {
  return upgradeKeys.get(raw);
}

/** The credentials of an open session, or undefined. */
export function socketSession(token: string): SocketCredentials | undefined {
  return sessions.get(token);
}
