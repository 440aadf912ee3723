/**
 * Key checks that run alongside a read route instead of before it. A key the process already
 * verified (src/auth/key-cache.ts) still needs its revocation read barrier — a round trip on the
 * LISTEN connection — before anything is answered; for routes marked `config: { keyCheck:
 * 'alongside' }` (reads without side effects) the hook starts that check and lets the handler
 * run meanwhile, and nothing leaves until the check has passed: the handler awaits
 * `keyCheckPassed` before it answers, the error handler before it sends any error, and a failed
 * check answers as the ordinary path would (401/403, no rate-limit or Link headers). A revoked
 * key thus sees exactly what it saw before; a valid one waits for the longer of the two round
 * trips instead of their sum (bench/README.md "api").
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

type Check = { promise: Promise<void>; refusal?: unknown };
const pending = new WeakMap<FastifyRequest, Check>();

/** Records the check of `request`'s key (rejecting with the ServiceError to answer when it fails). */
export function startKeyCheck(request: FastifyRequest, check: Promise<void>): void {
  const entry: Check = { promise: check };
  // Awaited by whoever answers (never an unhandled rejection); the refusal is kept for `keyRefusedSoFar`.
  check.catch((err: unknown) => (entry.refusal = err ?? new Error('key check failed')));
  pending.set(request, entry);
}

/** Resolves once the request's key is known valid (at once when it was checked before the route). */
export function keyCheckPassed(request: FastifyRequest): Promise<void> {
  return pending.get(request)?.promise ?? Promise.resolve();
}

/**
 * The key check's refusal when it has already failed, else undefined (passed, or still running).
 * For an answer that carries nothing (the request's time limit passed): it must not wait for a
 * check that hangs with the database, and a key whose check has not failed yet gets that answer
 * just as it would on the ordinary path, where the check itself would have run out of time.
 */
export function keyRefusedSoFar(request: FastifyRequest): unknown {
  return pending.get(request)?.refusal;
}

/** Headers a route or the hook may have set that a refused request must not carry. */
export function clearAnswerHeaders(reply: FastifyReply): void {
  for (const h of ['link', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) reply.removeHeader(h);
}
