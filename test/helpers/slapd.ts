// A real OpenLDAP server (Debian's /usr/sbin/slapd, installed by scripts/ensure-slapd.sh) for the
// LDAP policy tests: its own temporary directory with a slapd.conf it writes (core, cosine and
// inetOrgPerson schemas, an mdb database for dc=example,dc=org, the memberof overlay), running
// as the current user in the foreground on free ports of 127.0.0.1, owned by the test process
// (children.ts). With `tls`, it also listens on ldaps:// and takes StartTLS on ldap://. Access: a
// password is only used to bind, the root DSE is public, everything else is read by bound users
// only (so an anonymous search finds nothing, as on most production directories). Entries are
// added with ldapadd (ldap-utils) as the root DN, so the memberof overlay keeps memberOf.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { ownChild } from './children.ts';
import { waitFor } from './wait.ts';
import { canConnect, freePort } from './ports.ts';

export const SLAPD = '/usr/sbin/slapd';
export const BASE_DN = 'dc=example,dc=org';
export const ADMIN_DN = `cn=admin,${BASE_DN}`;
export const ADMIN_PASSWORD = 'admin-secret';

export interface SlapdOptions {
  /** PEM files of the server's certificate, its key and the CA (ldaps:// and StartTLS). */
  tls?: { cert: string; key: string; ca: string };
}

export interface Slapd {
  /** ldap://127.0.0.1:<port> */
  url: string;
  /** ldaps://127.0.0.1:<port>, with `tls`. */
  ldapsUrl: string | undefined;
  dir: string;
  /** Adds LDIF records (ldapadd as the root DN). */
  add(ldif: string): Promise<void>;
  stop(): Promise<void>;
  /** What slapd wrote so far (for failure messages). */
  output(): string;
}

export async function startSlapd(options: SlapdOptions = {}): Promise<Slapd> {
  if (!existsSync(SLAPD)) throw new Error(`${SLAPD} is missing: scripts/ensure-slapd.sh installs it`);
  const dir = mkdtempSync(path.join(tmpdir(), 'spindle-slapd-'));
  mkdirSync(path.join(dir, 'db'));
  const port = await freePort();
  const ldapsPort = options.tls ? await freePort() : undefined;
  const conf = path.join(dir, 'slapd.conf');
  writeFileSync(conf, [
    'include /etc/ldap/schema/core.schema',
    'include /etc/ldap/schema/cosine.schema',
    'include /etc/ldap/schema/inetorgperson.schema',
    'modulepath /usr/lib/ldap',
    'moduleload back_mdb',
    'moduleload memberof',
    `pidfile ${dir}/slapd.pid`,
    `argsfile ${dir}/slapd.args`,
    ...(options.tls ? [`TLSCACertificateFile ${options.tls.ca}`, `TLSCertificateFile ${options.tls.cert}`, `TLSCertificateKeyFile ${options.tls.key}`] : []),
    'database mdb',
    'maxsize 16777216',
    `suffix "${BASE_DN}"`,
    `rootdn "${ADMIN_DN}"`,
    `rootpw ${ADMIN_PASSWORD}`,
    `directory ${dir}/db`,
    'overlay memberof',
    'access to attrs=userPassword by anonymous auth by * none',
    'access to dn.base="" by * read',
    'access to * by users read by * none',
    '',
  ].join('\n'));
  const urls = [`ldap://127.0.0.1:${port}/`, ...(ldapsPort ? [`ldaps://127.0.0.1:${ldapsPort}/`] : [])];
  // -d 0: in the foreground, logging nothing but errors, until SIGTERM.
  const child: ChildProcess = ownChild(spawn(SLAPD, ['-f', conf, '-h', urls.join(' '), '-d', '0'], { stdio: ['ignore', 'pipe', 'pipe'] }));
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let gone = false;
  void exited.then(() => (gone = true));
  await waitFor(async () => {
    if (gone) throw new Error(`slapd exited: ${output}`);
    return (await canConnect(port)) && (ldapsPort === undefined || (await canConnect(ldapsPort)));
  }, { message: `slapd listening on ${port}` });
  const url = `ldap://127.0.0.1:${port}`;
  return {
    url,
    ldapsUrl: ldapsPort === undefined ? undefined : `ldaps://127.0.0.1:${ldapsPort}`,
    dir,
    add: (ldif) => ldapadd(url, ldif),
    async stop() {
      if (gone) return;
      child.kill('SIGTERM');
      await exited;
    },
    output: () => output,
  };
}

function ldapadd(url: string, ldif: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = execFile('ldapadd', ['-x', '-H', url, '-D', ADMIN_DN, '-w', ADMIN_PASSWORD], (err, _stdout, stderr) => {
      if (err) reject(new Error(`ldapadd failed: ${stderr || err.message}`));
      else resolve();
    });
    p.stdin!.end(ldif);
  });
}

