// ConsoleAssets: the web console's built files (dist/console, made by `make build` from
// console/), read once at start and served by the admin server itself: the page at `/`, its
// hashed script and styles under /assets/ (cached for good), no CDN and no second server. Absent
// when the console was not built: `/` then says so.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, sep } from 'node:path';

import { ROOT } from '../../install/root.ts';

/** Where `make build` puts the console (dist/console of the install root). */
export const CONSOLE_DIR = join(ROOT, 'dist/console') + sep;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
};

/** What every console file is sent with: no framing, no sniffing, scripts and connections only
 * from this origin. */
const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

export interface ConsoleFile {
  readonly body: Buffer;
  readonly headers: Record<string, string>;
}

export class ConsoleAssets {
  private readonly files = new Map<string, ConsoleFile>();

  private constructor() {}

  /** The console built in `dir`; null when it has no index.html (not built). */
  static load(dir = CONSOLE_DIR): ConsoleAssets | null {
    try {
      if (!statSync(join(dir, 'index.html')).isFile()) return null;
    } catch {
      return null;
    }
    const assets = new ConsoleAssets();
    assets.add(dir, '');
    return assets;
  }

  private add(dir: string, prefix: string): void {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = `${prefix}/${entry.name}`;
      if (entry.isDirectory()) {
        this.add(join(dir, entry.name), path);
        continue;
      }
      const hashed = path.startsWith('/assets/');
      this.files.set(path, {
        body: readFileSync(join(dir, entry.name)),
        headers: {
          'content-type': TYPES[extname(entry.name)] ?? 'application/octet-stream',
          // Hashed names change with their content; the page itself is asked for each time.
          'cache-control': hashed ? 'public, max-age=31536000, immutable' : 'no-cache',
          ...SECURITY_HEADERS,
        },
      });
    }
  }

  /** The file for a GET of `path` (`/` is the page), or undefined. */
  get(path: string): ConsoleFile | undefined {
    return this.files.get(path === '/' ? '/index.html' : path);
  }

  /** Whether `path` is one the console answers (`/`, `/index.html`, `/assets/...`). */
  static owns(path: string): boolean {
    return path === '/' || path === '/index.html' || path.startsWith('/assets/');
  }
}
