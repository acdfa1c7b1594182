// A real browser for the web console's tests: Debian's Chromium (installed by
// scripts/ensure-system-packages.sh), driven by playwright-core, headless. No browser is
// downloaded from anywhere.
import { existsSync } from 'node:fs';

import { chromium, type Browser } from 'playwright-core';

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
