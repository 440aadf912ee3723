// The kernel's one rule for failures that go away by themselves (src/errors.ts isTransient),
// which the indexer retries and the API answers 503: the cases each of them used to list.
import { describe, expect, it } from 'vitest';
import { FatalError, isRetryable, isTransient, RetryableError, ServiceError, ERROR_CODES } from '../../../src/errors.js';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isTransient', () => {
  it.each([
    '08006',
    '08001',
    '57P01',
    '57P03',
    '53300',
    '40001',
    '40P01',
    'ECONNREFUSED',
    'ECONNRESET',
    'ETIMEDOUT',
    'EPIPE',
    'EHOSTUNREACH',
    'EAI_AGAIN',
  ])('takes %s', (code) => {
    expect(isTransient(withCode(code))).toBe(true);
  });
  it.each([
    'Connection terminated unexpectedly',
    'timeout exceeded when trying to connect',
    'Client has encountered a connection error and is not queryable',
    'socket hang up',
    'connection timeout',
  ])('takes the message "%s"', (m) => {
    expect(isTransient(new Error(m))).toBe(true);
  });
  it('looks through causes, and stops at a FatalError', () => {
    expect(isTransient(new Error('wrapped', { cause: withCode('57P01') }))).toBe(true);
    expect(isTransient(new FatalError('ERR_INDEX_CORRUPT', 'bad', { cause: withCode('57P01') }))).toBe(false);
  });
  it('leaves other errors alone: constraint violations, syntax errors, plain bugs', () => {
    for (const code of ['23505', '42601', '22P02', 'ERR_SOMETHING', '0800']) expect(isTransient(withCode(code)), code).toBe(false);
    expect(isTransient(new TypeError('x is undefined'))).toBe(false);
    expect(isTransient('a string')).toBe(false);
  });
  it('is apart from isRetryable: a RetryableError is retryable, not a connection failure', () => {
    const r = new RetryableError('ERR_RPC_UNAVAILABLE', 'node down');
    expect(isRetryable(r)).toBe(true);
    expect(isTransient(r)).toBe(false);
  });
});

describe('ERR_UPGRADE_REQUIRED', () => {
  it('is a code of the one table, rendered like every other', () => {
    expect(ERROR_CODES.ERR_UPGRADE_REQUIRED.status).toBe(426);
    expect(new ServiceError('ERR_UPGRADE_REQUIRED').toBody()).toEqual({
      error_type: 'invalid_request',
      error_code: 'ERR_UPGRADE_REQUIRED',
      error_message: 'connect with a WebSocket client to /v1/stream',
      retry: false,
      error_cause: null,
    });
  });
});
