// A real HAProxy (Debian's /usr/sbin/haproxy, scripts/ensure-haproxy.sh) in front of a broker:
// its own config file with one TCP-mode frontend per entry, each on a free port of 127.0.0.1,
// whose server line is the entry's (e.g. `127.0.0.1:1883 send-proxy-v2`). HAProxy connects to
// the broker from `source` (127.0.0.3 by default), so the broker's TCP peer is never the client's
// address. Started in the foreground (-db), owned by the test file (children.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { ownChild } from './children.ts';
import { waitFor } from './wait.ts';
import { canConnect, freePort } from './ports.ts';

export const HAPROXY = '/usr/sbin/haproxy';

export interface Frontend {
  /** Options of the bind line after the address (e.g. `ssl crt /x.pem ca-file /ca.pem verify required`). */
  bind?: string;
  /** The server line after `server s1` (address and options, e.g. `127.0.0.1:1883 send-proxy`). */
  server: string;
  /** The address HAProxy connects to the broker from, when not the one of startHaproxy. */
  source?: string;
}

export interface Haproxy {
  /** The port of each frontend. */
  ports: Record<string, number>;
  stop(): Promise<void>;
  /** What it wrote to stderr (for failure messages). */
  output(): string;
}

/** Starts one; a missing haproxy fails the test (scripts/ensure-haproxy.sh installs it). */
export async function startHaproxy(frontends: Record<string, Frontend>, options: { source?: string } = {}): Promise<Haproxy> {
  if (!existsSync(HAPROXY)) throw new Error(`${HAPROXY} is missing: scripts/ensure-haproxy.sh installs it`);
  const dir = mkdtempSync(path.join(tmpdir(), 'spindle-haproxy-'));
  const source = options.source ?? '127.0.0.3';
  const ports: Record<string, number> = {};
  const lines = [
    'global',
    '  maxconn 1024',
    'defaults',
    '  mode tcp',
    '  timeout connect 5s',
    '  timeout client 60s',
    '  timeout server 60s',
  ];
  for (const [name, f] of Object.entries(frontends)) {
    const port = await freePort();
    ports[name] = port;
    lines.push(
      `frontend f_${name}`,
      `  bind 127.0.0.1:${port}${f.bind ? ` ${f.bind}` : ''}`,
      `  default_backend b_${name}`,
      `backend b_${name}`,
      `  source ${f.source ?? source}`,
      `  server s1 ${f.server}`,
    );
  }
  const conf = path.join(dir, 'haproxy.cfg');
  writeFileSync(conf, `${lines.join('\n')}\n`);
  const child: ChildProcess = ownChild(spawn(HAPROXY, ['-db', '-f', conf], { stdio: ['ignore', 'ignore', 'pipe'] }));
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let gone = false;
  void exited.then(() => (gone = true));
  for (const [name, port] of Object.entries(ports)) {
    await waitFor(() => {
      if (gone) throw new Error(`haproxy exited: ${stderr}`);
      return canConnect(port);
    }, { message: `haproxy frontend ${name} listening on ${port}` });
  }
  return {
    ports,
    async stop() {
      if (gone) return;
      child.kill('SIGTERM');
      await exited;
    },
    output: () => stderr,
  };
}

