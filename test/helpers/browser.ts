// A real browser for the web console's tests: Debian's Chromium (installed by
// scripts/ensure-system-packages.sh), driven by playwright-core, headless. No browser is
// downloaded from anywhere.
import { existsSync } from 'node:fs';

import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import WebSocket from 'ws';

import { ADMIN_PASSWORD } from './broker.ts';
import { waitFor } from './wait.ts';

const CANDIDATES = [process.env.SPINDLE_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'];

export function chromiumPath(): string {
  const found = CANDIDATES.find((p): p is string => !!p && existsSync(p));
  if (!found) throw new Error('no Chromium: run ./scripts/ensure-system-packages.sh (apt-get install chromium), or set SPINDLE_CHROMIUM');
  return found;
}

export function launchBrowser(): Promise<Browser> {
  // --no-sandbox: the tests run as root on CI machines, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** A new page of `browser` signed in to the web console at `base` (as the admin unless told),
 * once its page navigation shows. */
export async function signIn(browser: Browser, base: string, as: { username?: string; password?: string; acceptDownloads?: boolean } = {}): Promise<Page> {
  const page = await browser.newPage({ acceptDownloads: as.acceptDownloads ?? false });
  await page.goto(`${base}/`);
  await page.getByLabel('Username').fill(as.username ?? 'admin');
  await page.getByLabel('Password').fill(as.password ?? ADMIN_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'pages' }).waitFor();
  return page;
}

/** The HTTP status a WebSocket upgrade to `url` with `headers` gets: 101 when it opens (then
 * closed), else the refusal's status (the console's sockets: 401 not signed in, 403 origin). */
export function upgradeStatus(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.on('open', () => {
      ws.close();
      resolve(101);
    });
    ws.on('error', reject);
  });
}

/** Opens a generated form's "Raw JSON" escape hatch and waits until it holds the fields' JSON
 * (the details element's toggle fills it after the click: text typed before that is replaced). */
export async function openRawJson(form: Locator): Promise<Locator> {
  await form.getByText('Raw JSON').click();
  const raw = form.getByLabel('Config (JSON)');
  await waitFor(async () => (await raw.inputValue()) !== '', { message: 'the raw JSON filled from the fields' });
  return raw;
}
