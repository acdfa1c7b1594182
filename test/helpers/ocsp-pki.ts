// A test CA made with OpenSSL's command line, in a temporary directory: certificates for servers
// and clients (each naming the test's OCSP responder in its AIA extension), revocation in the CA's
// index, CRLs (`openssl ca -gencrl`, PEM and DER), and OpenSSL's own OCSP responder
// (`openssl ocsp -index ... -port`) as a child process on a port chosen when the CA is made, which
// the test can stop (the responder down) and start again. The responder reads the index when it
// starts: issue and revoke before starting it (or restart it). The responder is owned by the test
// file's process (children.ts).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { ownChild } from './children.ts';
import { freePort } from './ports.ts';

export interface Issued {
  cert: string;
  key: string;
  /** Serial number, upper-case hex as the index and `openssl x509 -serial` write it. */
  serial: string;
  subject: string;
}

/** An index.txt date: YYMMDDHHMMSSZ. */
function indexDate(d: Date): string {
  return d.toISOString().replace(/[-:T]/g, '').slice(2, 14) + 'Z';
}

export class TestPki {
  readonly ca: string;
  readonly caKey: string;
  readonly index: string;
  /** The responder every certificate names (AIA). */
  readonly ocspUrl: string;
  private responder: ChildProcess | null = null;
  private responderOutput = '';

  private constructor(readonly dir: string, readonly ocspPort: number) {
    this.ca = this.f('ca.crt');
    this.caKey = this.f('ca.key');
    this.index = this.f('index.txt');
    this.ocspUrl = `http://127.0.0.1:${ocspPort}`;
  }

  /** A new CA (`/CN=<name>`), its empty index, and the port its responder will listen on. */
  static async create(name = 'Spindle Revocation Test CA'): Promise<TestPki> {
    const pki = new TestPki(mkdtempSync(path.join(tmpdir(), 'spindle-pki-')), await freePort());
    pki.openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', pki.caKey, '-out', pki.ca, '-days', '30', '-subj', `/CN=${name}`,
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature');
    writeFileSync(pki.index, '');
    writeFileSync(pki.f('crlnumber'), '01\n');
    writeFileSync(pki.f('ca.cnf'), [
      '[ca]', 'default_ca = test_ca', '[test_ca]', `database = ${pki.index}`, `crlnumber = ${pki.f('crlnumber')}`,
      `certificate = ${pki.ca}`, `private_key = ${pki.caKey}`, 'default_md = sha256', 'default_crl_days = 30', '',
    ].join('\n'));
    return pki;
  }

  f(name: string): string {
    return path.join(this.dir, name);
  }

  openssl(...args: string[]): string {
    return execFileSync('openssl', args, { cwd: this.dir, stdio: ['ignore', 'pipe', 'pipe'] }).toString();
  }

  /** A key and a certificate of this CA, entered valid in the index. `ocsp`: the AIA's responder
   * (this CA's by default; false: no AIA extension). */
  issue(name: string, cn: string, options: { server?: boolean; ocsp?: string | false } = {}): Issued {
    const key = this.f(`${name}.key`);
    const cert = this.f(`${name}.crt`);
    this.openssl('req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', this.f(`${name}.csr`), '-subj', `/CN=${cn}`);
    const ext = [options.server ? 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth' : 'extendedKeyUsage=clientAuth'];
    const ocsp = options.ocsp ?? this.ocspUrl;
    if (ocsp !== false) ext.push(`authorityInfoAccess=OCSP;URI:${ocsp}`);
    writeFileSync(this.f(`${name}.ext`), ext.join('\n') + '\n');
    this.openssl('x509', '-req', '-in', this.f(`${name}.csr`), '-CA', this.ca, '-CAkey', this.caKey, '-CAcreateserial', '-days', '10', '-out', cert, '-extfile', this.f(`${name}.ext`));
    const serial = this.openssl('x509', '-in', cert, '-noout', '-serial').trim().replace(/^serial=/, '');
    const expiry = new Date(Date.now() + 10 * 86_400_000);
    appendFileSync(this.index, `V\t${indexDate(expiry)}\t\t${serial}\tunknown\t/CN=${cn}\n`);
    return { cert, key, serial, subject: `/CN=${cn}` };
  }

  /** Marks a certificate revoked in the index (its next CRL lists it; a responder started
   * after this says revoked: `openssl ocsp` reads the index only when it starts). */
  revoke(issued: Issued): void {
    const lines = readFileSync(this.index, 'utf8').split('\n').map((line) => {
      const cols = line.split('\t');
      if (cols[3] !== issued.serial) return line;
      return ['R', cols[1], `${indexDate(new Date(Date.now() - 60_000))},keyCompromise`, cols[3], cols[4], cols[5]].join('\t');
    });
    writeFileSync(this.index, lines.join('\n'));
  }

  /** A CRL of the index as it is now (`openssl ca -gencrl`), PEM; with `der`, also written as DER. */
  crl(name = 'ca.crl', der?: string): string {
    const file = this.f(name);
    this.openssl('ca', '-gencrl', '-config', this.f('ca.cnf'), '-out', file);
    if (der) this.openssl('crl', '-in', file, '-outform', 'DER', '-out', this.f(der));
    return file;
  }

  /** Starts OpenSSL's OCSP responder on `ocspPort`, signing with the CA's key (responses valid
   * `validMinutes`); resolves once it accepts connections. */
  async startResponder(validMinutes = 5): Promise<void> {
    if (this.responder) return;
    this.responderOutput = '';
    const child = ownChild(spawn('openssl', [
      'ocsp', '-index', this.index, '-port', String(this.ocspPort), '-rsigner', this.ca, '-rkey', this.caKey, '-CA', this.ca,
      '-nmin', String(validMinutes), '-ignore_err',
    ], { cwd: this.dir, stdio: ['ignore', 'pipe', 'pipe'] }));
    this.responder = child;
    const collect = (b: Buffer) => (this.responderOutput += b.toString());
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    child.once('exit', () => {
      if (this.responder === child) this.responder = null;
    });
    // It writes ACCEPT once it listens. (A probe connection would not do: the responder serves one
    // connection at a time and waits on one that sends nothing.)
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`openssl ocsp did not listen on ${this.ocspPort}: ${this.responderOutput}`)), 10_000);
      const check = () => {
        if (!this.responderOutput.includes('ACCEPT')) return;
        clearTimeout(timer);
        child.stdout!.off('data', check);
        child.stderr!.off('data', check);
        resolve();
      };
      child.stdout!.on('data', check);
      child.stderr!.on('data', check);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`openssl ocsp exited with ${code}: ${this.responderOutput}`));
      });
    });
  }

  /** Stops the responder (the port is then closed: clients see it down). */
  async stopResponder(): Promise<void> {
    const child = this.responder;
    if (!child) return;
    this.responder = null;
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
  }
}
