/**
 * The SDK's event kinds are the server's: the same list, in the same order (the outbox's
 * EVENT_TYPES), so an event the server starts sending cannot be missing from the SDK's types.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { EVENT_TYPES as SDK_EVENT_TYPES, type EventType as SdkEventType } from '../../../client/index.js';
import { EVENT_TYPES, type EventType } from '../../../src/db/schema.js';

describe('SDK event types', () => {
  it('are the server’s event types', () => {
    expect([...SDK_EVENT_TYPES]).toEqual([...EVENT_TYPES]);
  });

  it('name every server type in the SDK’s EventType', () => {
    expectTypeOf<EventType>().toMatchTypeOf<(typeof SDK_EVENT_TYPES)[number]>();
    expectTypeOf<(typeof SDK_EVENT_TYPES)[number]>().toMatchTypeOf<EventType>();
    expectTypeOf<EventType>().toMatchTypeOf<SdkEventType>();
  });
});
