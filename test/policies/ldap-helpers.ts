// What the LDAP policy tests share: a test CA and a server certificate for 127.0.0.1 made with
// openssl, and a directory (a slapd of helpers/slapd.ts) holding the people and groups below:
//   alice / alice-pw   in sensors and restricted
//   bob / bob-pw       in admins; employeeType TRUE (a superuser by attribute)
//   carol / carol-pw   in no group
//   x,y / comma-pw     uid with a comma: its DN is uid=x\,y,... (a username escaped right binds)
//   dave1, dave2       two entries with the same mail (a search finding two)
//   cn=mqtt-svc        the service account (svc-pw)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { BASE_DN, startSlapd, type Slapd } from '../helpers/slapd.ts';

export { BASE_DN };
export const PEOPLE = `ou=people,${BASE_DN}`;
export const GROUPS = `ou=groups,${BASE_DN}`;
export const SERVICE = { dn: `cn=mqtt-svc,${BASE_DN}`, password: 'svc-pw' };
export const USER_DN = `uid=\${username},${PEOPLE}`;
export const USER_FILTER = '(&(objectClass=inetOrgPerson)(uid=${username}))';
export const GROUP_FILTER = '(&(objectClass=groupOfNames)(member=${dn}))';

const person = (uid: string, dnValue: string, password: string, extra: string[] = []) => [
  `dn: uid=${dnValue},${PEOPLE}`,
  'objectClass: inetOrgPerson',
  `uid: ${uid}`,
  `cn: ${uid}`,
  'sn: Test',
  `userPassword: ${password}`,
  ...extra,
  '',
];

const group = (cn: string, members: string[]) => [
  `dn: cn=${cn},${GROUPS}`,
  'objectClass: groupOfNames',
  `cn: ${cn}`,
  ...members.map((m) => `member: uid=${m},${PEOPLE}`),
  '',
];

export const DIRECTORY_LDIF = [
  `dn: ${BASE_DN}`, 'objectClass: dcObject', 'objectClass: organization', 'o: Example', 'dc: example', '',
  `dn: ${PEOPLE}`, 'objectClass: organizationalUnit', 'ou: people', '',
  `dn: ${GROUPS}`, 'objectClass: organizationalUnit', 'ou: groups', '',
  `dn: ${SERVICE.dn}`, 'objectClass: organizationalRole', 'objectClass: simpleSecurityObject', 'cn: mqtt-svc', `userPassword: ${SERVICE.password}`, '',
  ...person('alice', 'alice', 'alice-pw'),
  ...person('bob', 'bob', 'bob-pw', ['employeeType: TRUE']),
  ...person('carol', 'carol', 'carol-pw'),
  ...person('x,y', 'x\\,y', 'comma-pw'),
  ...person('dave1', 'dave1', 'dave-pw', ['mail: dave@example.org']),
  ...person('dave2', 'dave2', 'dave-pw', ['mail: dave@example.org']),
  ...group('sensors', ['alice']),
  ...group('restricted', ['alice']),
  ...group('admins', ['bob']),
].join('\n');

export interface TestCa {
  dir: string;
  ca: string;
  cert: string;
  key: string;
  /** Another CA, which signed nothing the directory shows. */
  otherCa: string;
}

/** A CA and a server certificate for 127.0.0.1 and localhost, in a new directory. */
export function makeCa(): TestCa {
  const dir = mkdtempSync(path.join(tmpdir(), 'spindle-ldap-ca-'));
  const f = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '2', '-subj', '/CN=LDAP Test CA');
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('other.key'), '-out', f('other.crt'), '-days', '2', '-subj', '/CN=Other CA');
  openssl('req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=127.0.0.1');
  writeFileSync(f('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  openssl('x509', '-req', '-in', f('server.csr'), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-days', '2', '-out', f('server.crt'), '-extfile', f('server.ext'));
  return { dir, ca: f('ca.crt'), cert: f('server.crt'), key: f('server.key'), otherCa: f('other.crt') };
}

/** A slapd holding DIRECTORY_LDIF (with ldaps:// and StartTLS when `ca` is given). */
export async function startDirectory(ca?: TestCa): Promise<Slapd> {
  const slapd = await startSlapd(ca ? { tls: { cert: ca.cert, key: ca.key, ca: ca.ca } } : {});
  try {
    await slapd.add(DIRECTORY_LDIF);
  } catch (err) {
    await slapd.stop();
    throw err;
  }
  return slapd;
}
