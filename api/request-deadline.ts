/**
 * The end of a request's work: an AbortSignal that fires when API_REQUEST_TIMEOUT_MS has passed
 * since the request arrived, or when its response closes first (the client went away). For
 * handlers whose work can be abandoned (wallet derivation: its thread is terminated), so that
 * nothing keeps computing for an answer nobody will read.
 *
 * fastify's `request.signal` cannot serve: it aborts when Node closes the request stream, which
 * happens as soon as a body has been read — and for such requests that also clears fastify's own
 * handler timer, so a POST with a body is never ended by `handlerTimeout`.
 * @module
 */
import type { FastifyReply } from 'fastify';
import { ServiceError } from '../src/errors.js';

export type RequestDeadline = {
  signal: AbortSignal;
  /** `err`, or 503 ERR_REQUEST_TIMEOUT when the deadline is what ended the work. */
  explain(err: unknown): unknown;
  /** Stops watching (call when the handler is done). */
  done(): void;
};

/** The deadline of the request `reply` answers: `timeoutMs` from its arrival, or its response closing. */
export function requestDeadline(reply: FastifyReply, timeoutMs: number): RequestDeadline {
  const ac = new AbortController();
  let timedOut = false;
  const timer = setTimeout(
    () => {
      timedOut = true;
      ac.abort(new ServiceError('ERR_REQUEST_TIMEOUT'));
    },
    Math.max(0, timeoutMs - reply.elapsedTime),
  );
  const onClose = () => ac.abort(new Error('the client went away'));
  reply.raw.once('close', onClose);
  return {
    signal: ac.signal,
    explain: (err) => (timedOut ? new ServiceError('ERR_REQUEST_TIMEOUT') : err),
    done() {
      clearTimeout(timer);
      reply.raw.off('close', onClose);
    },
  };
}
