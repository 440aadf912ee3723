/**
 * The console's committed bundle (api/console/assets.generated.ts) is what
 * scripts/build-console.ts makes of api/console/page/ now: a change to the page's sources
 * without `npm run build:console` fails here. And the page the API serves loads only its own
 * script (no inline script, no other origin), under the policy the routes send.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { CONSOLE_ASSETS_FILE, consoleAssetsSource } from '../../../scripts/build-console.js';
import { CONSOLE_HTML, CONSOLE_JS } from '../../../api/console/assets.generated.js';
import { consolePolicy } from '../../../api/console/serve.js';

describe('console assets', () => {
  it('the committed bundle is current (npm run build:console)', async () => {
    expect(await readFile(CONSOLE_ASSETS_FILE, 'utf8')).toBe(await consoleAssetsSource());
  }, 60_000);

  it('the page has no inline script and loads nothing from another origin', () => {
    const scripts = [...CONSOLE_HTML.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/g)];
    expect(scripts).toHaveLength(1);
    expect(scripts[0]![0]).toMatch(/src="\/console\/console\.js"/);
    expect(scripts[0]![1]).toBe('');
    expect(CONSOLE_HTML).not.toMatch(/\son[a-z]+=|style=|https?:\/\//);
    // (the bundle names no absolute URL: every request is relative to the page's origin)
    expect(CONSOLE_JS).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
  });

  it("the policy allows only the page's own scripts and this origin's connections", () => {
    expect(consolePolicy('127.0.0.1:3000')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self' ws://127.0.0.1:3000 wss://127.0.0.1:3000; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(consolePolicy('[::1]:8080')).toContain("connect-src 'self' ws://[::1]:8080 wss://[::1]:8080;");
    // A Host header that is not one (a smuggled directive) stays out of the policy.
    expect(consolePolicy("evil.example; script-src 'unsafe-inline'")).toContain("connect-src 'self';");
    expect(consolePolicy(undefined)).toContain("connect-src 'self';");
  });
});
