/**
 * Schema validation of requests: fastify's own Ajv compiler, twice. Query strings and path
 * parameters arrive as text, so their values are coerced to the schema's types (`?limit=25` is
 * the integer 25; a repeated parameter is an array). Bodies are JSON and already typed: they are
 * taken as sent, never coerced — `"confirmations": "5"` or `["addr"]` for a string is a 400, not
 * a guess (Ajv's `coerceTypes` would turn them into 5 and "addr").
 * @module
 */
import { AjvCompiler } from '@fastify/ajv-compiler';
import type { FastifyServerOptions } from 'fastify';

type BuildValidator = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']>;

/** Ajv options of every part; `coerceTypes` applies to query strings and path parameters only. */
const AJV_OPTIONS = { removeAdditional: false, coerceTypes: 'array', useDefaults: true, allErrors: false } as const;

/** A validator factory for fastify's schemaController: coercing for text parts, strict for bodies. */
export const buildValidator: BuildValidator = (externalSchemas) => {
  const text = AjvCompiler()(externalSchemas, { customOptions: { ...AJV_OPTIONS } });
  const body = AjvCompiler()(externalSchemas, { customOptions: { ...AJV_OPTIONS, coerceTypes: false } });
  return (route) => (route.httpPart === 'body' ? body(route) : text(route));
};
