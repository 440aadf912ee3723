/**
 * Times as the API shows them: ISO 8601 UTC to the second (`2026-01-02T03:04:05Z`), and the
 * year-0001 timestamp that stands for "unknown" in `broadcast_time`.
 * @module
 */

export const UNKNOWN_TIME = '0001-01-01T00:00:00Z';

/** ISO 8601 UTC to the second of a Date. */
export function isoTime(d: Date): string {
  return `${d.toISOString().slice(0, 19)}Z`;
}

/** ISO 8601 UTC to the second of a unix time in seconds (block header time). */
export function isoFromUnix(seconds: number): string {
  return isoTime(new Date(seconds * 1000));
}
