/**
 * JSON request bodies, bounded by shape as well as by size: a body is scanned once (a linear
 * pass over its characters, strings skipped) for its nesting depth and the number of array
 * elements and object members it holds, and refused with 400 ERR_INVALID_BODY past the limits
 * (API_BODY_MAX_DEPTH, API_BODY_MAX_ITEMS) before JSON.parse sees it. JSON.parse of a 2 MB
 * `[[[[…]]]]` takes over a second of the one thread every request shares; the scan of any body
 * the size limit lets through takes a few milliseconds. Then fastify's own JSON parser runs
 * (secure-json-parse: `__proto__` and `constructor.prototype` refused).
 * @module
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ServiceError } from '../src/errors.js';

export type JsonShapeLimits = {
  /** Deepest nesting of arrays and objects. */
  maxDepth: number;
  /** Most array elements and object members, counted over the whole body. */
  maxItems: number;
};

const QUOTE = 34;
const BACKSLASH = 92;
const COMMA = 44;
const OPEN_ARRAY = 91;
const CLOSE_ARRAY = 93;
const OPEN_OBJECT = 123;
const CLOSE_OBJECT = 125;

/**
 * What is wrong with the shape of the JSON text `text`, or undefined when it is within `limits`.
 * Only the shape is judged: malformed JSON is left to the parser.
 */
export function jsonShapeProblem(text: string, limits: JsonShapeLimits): string | undefined {
  let depth = 0;
  let items = 0;
  /** The container just opened holds nothing yet (its first item has no comma before it). */
  let empty = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Skip the string to its closing quote (one not escaped by an odd run of backslashes);
      // an unterminated one is the parser's to refuse.
      for (let j = i; ;) {
        j = text.indexOf('"', j + 1);
        if (j < 0) {
          i = text.length;
          break;
        }
        let run = 0;
        while (text.charCodeAt(j - 1 - run) === BACKSLASH) run++;
        if (run % 2 === 0) {
          i = j;
          break;
        }
      }
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (empty) items++;
      if (++depth > limits.maxDepth) return `body nests deeper than ${limits.maxDepth} levels`;
      empty = true;
      continue;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    } else if (c === COMMA) {
      items++;
    } else if (c <= 32) {
      continue;
    }
    if (empty && c !== CLOSE_ARRAY && c !== CLOSE_OBJECT) items++;
    empty = false;
    if (items > limits.maxItems) return `body holds more than ${limits.maxItems} array elements and object members`;
  }
  return undefined;
}

type Done = (err: Error | null, body?: unknown) => void;

/** A JSON body parser: the shape check, then fastify's default JSON parser. */
export type JsonBodyParser = (request: FastifyRequest, text: string, done: Done) => void;

/** The bounded parser for `app` (built from its default JSON parser). */
export function boundedJsonParser(app: FastifyInstance, limits: JsonShapeLimits): JsonBodyParser {
  const json = app.getDefaultJsonParser('error', 'error') as (request: FastifyRequest, text: string, done: Done) => void;
  return (request, text, done) => {
    const problem = jsonShapeProblem(text, limits);
    if (problem !== undefined) {
      done(new ServiceError('ERR_INVALID_BODY', { message: problem }));
      return;
    }
    json(request, text, done);
  };
}

/**
 * Replaces `app`'s application/json parser by the bounded one, and drops fastify's built-in
 * text/plain parser: a JSON body sent as `text/plain` is 415 ERR_UNSUPPORTED_MEDIA_TYPE, not a
 * string the body schema then refuses with 400.
 */
export function installJsonBodies(app: FastifyInstance, parse: JsonBodyParser): void {
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => parse(request, body as string, done));
}
