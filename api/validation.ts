/**
 * Validation of requests, the one place where input is judged before any route sees it:
 * - schemas: fastify's own Ajv compiler, twice. Query strings and path parameters arrive as text,
 *   so their values are coerced to the schema's types (`?limit=25` is the integer 25; a repeated
 *   parameter is an array). Bodies are JSON and already typed: they are taken as sent, never
 *   coerced — `"confirmations": "5"` or `["addr"]` for a string is a 400, not a guess (Ajv's
 *   `coerceTypes` would turn them into 5 and "addr").
 * - integers in query strings and paths: plain decimal digits only (`-?[0-9]+`). Ajv's coercion
 *   is JavaScript's `Number()`, which takes `0x10`, `1e2`, `+10`, ` 10` and `1.0`; every route's
 *   integer parameter goes through this one check first (400 ERR_INVALID_PARAMETER).
 * - NUL characters: PostgreSQL text cannot hold them, so a path parameter, query value or body
 *   string with one is refused here (400 ERR_INVALID_PARAMETER / ERR_INVALID_BODY) instead of
 *   failing in the database (`rejectNulCharacters`, a preValidation hook of every route).
 * @module
 */
import { AjvCompiler } from '@fastify/ajv-compiler';
import type { FastifyRequest, FastifyServerOptions } from 'fastify';
import { ServiceError } from '../src/errors.js';

type BuildValidator = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']>;

/** Ajv options of every part; `coerceTypes` applies to query strings and path parameters only. */
const AJV_OPTIONS = { removeAdditional: false, coerceTypes: 'array', useDefaults: true, allErrors: false } as const;

/** An integer as query strings and paths may write it. */
const DECIMAL_INTEGER = /^-?[0-9]+$/;

type Schema = { type?: string | string[]; properties?: Record<string, Schema>; items?: Schema };

const isInteger = (s: Schema | undefined) =>
  s !== undefined && (s.type === 'integer' || (Array.isArray(s.type) && s.type.includes('integer')));

/** The properties of an object schema that take integers (or arrays of them). */
function integerProperties(schema: Schema | undefined): string[] {
  return Object.entries(schema?.properties ?? {})
    .filter(([, p]) => isInteger(p) || (p.type === 'array' && isInteger(p.items)))
    .map(([name]) => name);
}

type Validate = ((data: unknown, ctx?: unknown) => unknown) & { errors?: unknown; schemaEnv?: unknown };

/** `validate` preceded by the decimal-integer check of `names` in the text part `part`. */
function withIntegerCheck(validate: Validate, names: readonly string[], part: string): Validate {
  const wrapped: Validate = (data, ctx) => {
    const values = (data ?? {}) as Record<string, unknown>;
    for (const name of names) {
      const v = values[name];
      for (const s of Array.isArray(v) ? v : [v]) {
        if (typeof s === 'string' && !DECIMAL_INTEGER.test(s)) {
          return {
            error: new ServiceError('ERR_INVALID_PARAMETER', { message: `${part} '${name}' must be an integer in decimal digits` }),
          };
        }
      }
    }
    const ok = validate(data, ctx);
    wrapped.errors = validate.errors;
    return ok;
  };
  wrapped.schemaEnv = validate.schemaEnv;
  return wrapped;
}

/** A validator factory for fastify's schemaController: coercing for text parts, strict for bodies. */
export const buildValidator: BuildValidator = (externalSchemas) => {
  const text = AjvCompiler()(externalSchemas, { customOptions: { ...AJV_OPTIONS } });
  const body = AjvCompiler()(externalSchemas, { customOptions: { ...AJV_OPTIONS, coerceTypes: false } });
  return (route) => {
    if (route.httpPart === 'body') return body(route);
    const validate = text(route);
    const names = integerProperties(route.schema as Schema);
    if (names.length === 0) return validate;
    return withIntegerCheck(
      validate as Validate,
      names,
      route.httpPart === 'querystring' ? 'query parameter' : 'path parameter',
    ) as ReturnType<typeof text>;
  };
};

/** Whether `value` (a parsed body, or a part of one) holds a string with a NUL character. */
function holdsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\0');
  if (Array.isArray(value)) return value.some(holdsNul);
  if (ArrayBuffer.isView(value)) return false;
  if (value !== null && typeof value === 'object') return Object.entries(value).some(([k, v]) => k.includes('\0') || holdsNul(v));
  return false;
}

/** preValidation hook: refuses NUL characters in path parameters, query values and JSON bodies. */
export async function rejectNulCharacters(request: FastifyRequest): Promise<void> {
  if (holdsNul(request.params) || holdsNul(request.query))
    throw new ServiceError('ERR_INVALID_PARAMETER', { message: 'a path or query parameter holds a NUL character' });
  if (holdsNul(request.body)) throw new ServiceError('ERR_INVALID_BODY', { message: 'a string of the body holds a NUL character' });
}
