/**
 * GET /console and its assets (the page built from api/console/page/ into
 * assets.generated.ts: docs/console.md). The page holds no data and needs no key; everything it
 * shows it reads from `/v1` with the key the user gives it, so it can see nothing the key could
 * not. Every answer carries a Content-Security-Policy that lets the page load only its own
 * script and style and connect only to this origin (HTTP and WebSocket), with no inline script,
 * no frames and no form posts elsewhere; and no referrer, so no URL of the page leaves it.
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiInstance } from '../deps.js';
import { CONSOLE_CSS, CONSOLE_HTML, CONSOLE_ICON, CONSOLE_JS } from './assets.generated.js';

/** A Host header as browsers send it (name or IP literal, optional port): anything else is left out of the policy. */
const HOST_RE = /^(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/**
 * The policy: `'self'` for scripts, styles, images and connections, plus this host's ws: and
 * wss: origins for the stream (browsers before CSP Level 3 do not count them as 'self').
 */
export function consolePolicy(host: string | undefined): string {
  const ws = host !== undefined && HOST_RE.test(host) ? ` ws://${host} wss://${host}` : '';
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    `connect-src 'self'${ws}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const ASSETS: Record<string, { type: string; body: string }> = {
  '/console': { type: 'text/html; charset=utf-8', body: CONSOLE_HTML },
  '/console/console.js': { type: 'text/javascript; charset=utf-8', body: CONSOLE_JS },
  '/console/console.css': { type: 'text/css; charset=utf-8', body: CONSOLE_CSS },
  '/console/icon.svg': { type: 'image/svg+xml', body: CONSOLE_ICON },
};

/** Registers the console's routes at the root (not under a dialect; no key: the page asks for one). */
export function consoleRoutes(app: ApiInstance): void {
  for (const [path, asset] of Object.entries(ASSETS)) {
    app.get(path, { config: { auth: false }, schema: { hide: true } }, async (request: FastifyRequest, reply: FastifyReply) =>
      reply
        .headers({
          'content-type': asset.type,
          'content-security-policy': consolePolicy(request.headers.host),
          'x-content-type-options': 'nosniff',
          'referrer-policy': 'no-referrer',
          'x-frame-options': 'DENY',
          'cache-control': 'no-cache',
        })
        .send(asset.body),
    );
  }
}
