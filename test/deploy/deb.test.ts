// The Debian package on a clean Debian 12 (helpers/debian-root.ts: a debootstrap chroot, so the
// package's Depends are installed by apt and the host is left alone): `make deb`, then apt-get
// install, the broker started as its unit starts it (ExecStart, User, WorkingDirectory and
// EnvironmentFile read from the installed unit; this machine has no systemd, so setpriv does what
// systemd would, in a network namespace of its own), a message through it with Mosquitto's
// clients, the first admin password of /etc/spindle/spindle.env accepted, the conffile edited (the
// MQTT port) and a retained message written, an upgrade to a higher version whose conffile changed
// too (dpkg keeps the edited one with --force-confold and puts the new one beside it), the retained
// message still there after it, and a purge that leaves nothing of the package but its system user
// (deploy/debian/postrm says why it stays).
// needs: deb
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { DebianRoot, NetNamespace } from '../helpers/debian-root.ts';
import { waitFor } from '../helpers/wait.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const VERSION = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version as string;
const DEB = path.join(ROOT, `build/deb/spindle_${VERSION}_amd64.deb`);
const CONFFILE = '/etc/spindle/spindle.yaml';

let root: DebianRoot | undefined;
let ns: NetNamespace | undefined;
let broker: ChildProcess | undefined;
const scratch = mkdtempSync(path.join(os.tmpdir(), 'spindle-deb-test-'));

after(() => {
  if (broker && broker.exitCode === null) broker.kill('SIGKILL');
  ns?.close();
  root?.close();
  rmSync(scratch, { recursive: true, force: true });
});

interface Unit {
  user: string;
  workingDirectory: string;
  environmentFile: string;
  execStart: string[];
}

/** What of the installed unit's [Service] section starting the broker needs. */
function readUnit(text: string): Unit {
  const service = text.split(/^\[Service\]$/m)[1].split(/^\[/m)[0];
  const key = (name: string) => {
    const m = new RegExp(`^${name}=(.*)$`, 'm').exec(service);
    assert.ok(m, `the unit sets ${name}`);
    return m[1].trim();
  };
  return {
    user: key('User'),
    workingDirectory: key('WorkingDirectory'),
    environmentFile: key('EnvironmentFile').replace(/^-/, ''),
    execStart: key('ExecStart').split(/\s+/),
  };
}

/** KEY=value lines of an EnvironmentFile (no quoting in the package's). */
function readEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m) env[m[1]] = m[2];
  }
  return env;
}

/** The broker as systemd would start it: the unit's user, directory, environment and command. */
function startBroker(r: DebianRoot, n: NetNamespace): { child: ChildProcess; output: () => string } {
  const unit = readUnit(r.read('/lib/systemd/system/spindle.service'));
  const env = r.exists(unit.environmentFile) ? readEnvFile(r.read(unit.environmentFile)) : {};
  const uid = r.run(['id', '-u', unit.user]).trim();
  const gid = r.run(['id', '-g', unit.user]).trim();
  const child = n.spawn([
    'chroot', r.dir, '/bin/sh', '-c', 'cd "$1" || exit 1; shift; exec "$@"', 'sh', unit.workingDirectory,
    '/usr/bin/env', '-i', 'PATH=/usr/sbin:/usr/bin:/sbin:/bin', `HOME=${unit.workingDirectory}`, 'LANG=C.UTF-8',
    ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
    '/usr/bin/setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--init-groups', '--', ...unit.execStart,
  ]);
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d));
  child.stderr!.on('data', (d: Buffer) => (output += d));
  return { child, output: () => output };
}

async function stopBroker(b: { child: ChildProcess; output: () => string }): Promise<void> {
  const exited = new Promise<string>((resolve) => b.child.once('exit', (code, signal) => resolve(`${code ?? signal}`)));
  b.child.kill('SIGTERM');
  assert.equal(await exited, '0', `SIGTERM stops the broker cleanly; its output:\n${b.output()}`);
}

function tryRun(n: NetNamespace, argv: string[]): boolean {
  try {
    n.run(argv, { timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

/** Waits until the broker has started (its "spindle started" line: only then does it handle
 * SIGTERM) and its MQTT port answers; fails at once, with its output, if it exits first. */
async function waitForBroker(n: NetNamespace, b: { child: ChildProcess; output: () => string }, port: number): Promise<void> {
  let exited = false;
  const exit = new Promise<never>((_, reject) => b.child.once('exit', (code, signal) => {
    exited = true;
    reject(new Error(`the broker exited (${code ?? signal}) before it started`));
  }));
  const ready = waitFor(() => exited || (b.output().includes('"msg":"spindle started"') &&
    tryRun(n, ['mosquitto_pub', '-h', '127.0.0.1', '-p', String(port), '-t', 'probe', '-n'])),
  { timeout: 60_000, interval: 200, message: `the broker started, MQTT on port ${port}` });
  await Promise.race([ready, exit]).catch((err: Error) => {
    throw new Error(`${err.message}\nbroker output:\n${b.output()}`);
  });
  if (exited) await exit;
}

/** A subscriber started first, then publications until it has one: a message passes live. */
async function passMessage(n: NetNamespace, port: number, topic: string, payload: string): Promise<string> {
  const sub = n.spawn(['mosquitto_sub', '-h', '127.0.0.1', '-p', String(port), '-t', topic, '-C', '1', '-W', '30']);
  let received = '';
  sub.stdout!.on('data', (d: Buffer) => (received += d));
  const done = new Promise<number | null>((resolve) => sub.once('exit', (code) => resolve(code)));
  await waitFor(() => {
    if (sub.exitCode !== null) return true;
    n.run(['mosquitto_pub', '-h', '127.0.0.1', '-p', String(port), '-t', topic, '-m', payload]);
    return false;
  }, { timeout: 30_000, interval: 200, message: 'the subscriber gets the message' });
  assert.equal(await done, 0);
  return received.trim();
}

function retained(n: NetNamespace, port: number, topic: string): string {
  return n.run(['mosquitto_sub', '-h', '127.0.0.1', '-p', String(port), '-t', topic, '-C', '1', '-W', '10'], { timeout: 20_000 }).trim();
}

/** The package again with a higher version and a changed conffile (one more comment line), as a
 * next release would be: dpkg must then choose between the admin's file and the package's. */
function nextRelease(deb: string, dir: string): { deb: string; version: string } {
  const m = /^(\d+)\.(\d+)\.(\d+)(.*)$/.exec(VERSION);
  assert.ok(m, `package.json's version ${VERSION}`);
  const version = `${m[1]}.${m[2]}.${Number(m[3]) + 1}`;
  const tree = path.join(dir, 'next');
  execFileSync('dpkg-deb', ['-R', deb, tree]);
  const control = path.join(tree, 'DEBIAN/control');
  writeFileSync(control, readFileSync(control, 'utf8').replace(/^Version: .*$/m, `Version: ${version}`));
  writeFileSync(path.join(tree, CONFFILE), readFileSync(path.join(tree, CONFFILE), 'utf8') + `# Shipped by ${version}.\n`);
  const md5sums = execFileSync('sh', ['-c', "find . -path ./DEBIAN -prune -o -type f -printf '%P\\0' | LC_ALL=C sort -z | xargs -0 md5sum"], { cwd: tree, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  writeFileSync(path.join(tree, 'DEBIAN/md5sums'), md5sums);
  const out = path.join(dir, `spindle_${version}_amd64.deb`);
  execFileSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '--build', tree, out], { stdio: 'ignore' });
  rmSync(tree, { recursive: true });
  return { deb: out, version };
}

/** mqtt.tcp.port set in the generated conffile: the section lines and the key uncommented. */
function setTcpPort(conffile: string, port: number): string {
  const edited = conffile.replace(/^#mqtt:$/m, 'mqtt:').replace(/^ {2}#tcp:$/m, '  tcp:').replace(/^ {4}#port: 1883$/m, `    port: ${port}`);
  assert.notEqual(edited, conffile);
  return edited;
}

test('the Debian package installs, runs as its unit, upgrades keeping data and conffile, and purges clean', async (t) => {
  const started = Date.now();
  const step = (what: string) => t.diagnostic(`${((Date.now() - started) / 1000).toFixed(1)} s: ${what}`);

  step('make deb');
  try {
    execFileSync('make', ['-C', ROOT, 'deb', 'DEB_COMPRESS=gzip'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    assert.fail(`make deb failed:\n${e.stdout}${e.stderr}`);
  }
  const next = nextRelease(DEB, scratch);

  step('debian root');
  root = DebianRoot.open((line) => t.diagnostic(line));
  const r = root;
  copyFileSync(DEB, r.path(`/tmp/${path.basename(DEB)}`));
  copyFileSync(next.deb, r.path(`/tmp/${path.basename(next.deb)}`));
  r.run(['apt-get', 'update', '-qq'], { timeout: 300_000 });

  step('apt-get install');
  for (const absent of ['/usr/bin/adduser', '/usr/bin/node']) assert.ok(!r.exists(absent), `${absent} is not in the base system`);
  r.run(['apt-get', 'install', '-y', '-qq', '--no-install-recommends', `/tmp/${path.basename(DEB)}`], { timeout: 300_000 });
  assert.match(r.run(['dpkg-query', '-W', '-f', '${Status} ${Version}', 'spindle']), new RegExp(`^install ok installed ${VERSION.replace(/\./g, '\\.')}$`));
  assert.match(r.run(['/usr/lib/spindle/node/bin/node', '--version']), /^v20\./);
  assert.match(r.run(['/usr/lib/spindle/bin/nats-server', '--version']), /^nats-server: v2\./);
  assert.match(r.read(CONFFILE), /^ {2}natsServer: "\/usr\/lib\/spindle\/bin\/nats-server"$/m);
  assert.match(r.run(['getent', 'passwd', 'spindle']).trim(), /^spindle:x:\d+:\d+:[^:]*:\/var\/lib\/spindle:\/usr\/sbin\/nologin$/);
  assert.match(r.run(['stat', '-c', '%U:%G %a', '/var/lib/spindle']).trim(), /^spindle:spindle 750$/);
  assert.match(r.run(['stat', '-c', '%U:%G %a', '/etc/spindle/spindle.env']).trim(), /^root:spindle 640$/);
  const password = readEnvFile(r.read('/etc/spindle/spindle.env')).SPINDLE_ADMIN_PASSWORD;
  assert.ok(password && password.length >= 20, 'postinst wrote a generated admin password');

  step('start as the unit does');
  ns = await NetNamespace.open();
  const n = ns;
  let b = startBroker(r, n);
  broker = b.child;
  await waitForBroker(n, b, 1883);
  assert.equal(await passMessage(n, 1883, 'deb/live', 'hello from the package'), 'hello from the package');
  const login = (pw: string) => n.run(['curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', '-H', 'content-type: application/json',
    '-d', JSON.stringify({ username: 'admin', password: pw }), 'http://127.0.0.1:8080/public/login']);
  await waitFor(() => tryRun(n, ['curl', '-sf', '-o', '/dev/null', 'http://127.0.0.1:8080/health']), { interval: 200, message: 'the admin API answers /health' });
  assert.equal(login(password), '200', 'the admin password of spindle.env signs in');
  assert.equal(login(`${password}x`), '401');
  await stopBroker(b);

  step('edit the conffile, write a retained message');
  r.write(CONFFILE, setTcpPort(r.read(CONFFILE), 1884));
  const edited = r.read(CONFFILE);
  b = startBroker(r, n);
  broker = b.child;
  await waitForBroker(n, b, 1884);
  assert.ok(!tryRun(n, ['mosquitto_pub', '-h', '127.0.0.1', '-p', '1883', '-t', 'x', '-n']), 'nothing on 1883 any more');
  n.run(['mosquitto_pub', '-h', '127.0.0.1', '-p', '1884', '-q', '1', '-r', '-t', 'deb/kept', '-m', 'written before the upgrade']);
  assert.equal(retained(n, 1884, 'deb/kept'), 'written before the upgrade');
  await stopBroker(b);

  step(`upgrade to ${next.version}`);
  r.run(['apt-get', 'install', '-y', '-qq', '--no-install-recommends', '-o', 'Dpkg::Options::=--force-confold', `/tmp/${path.basename(next.deb)}`], { timeout: 300_000 });
  assert.match(r.run(['dpkg-query', '-W', '-f', '${Version}', 'spindle']), new RegExp(`^${next.version.replace(/\./g, '\\.')}$`));
  assert.equal(r.read(CONFFILE), edited, 'the edited conffile is kept');
  assert.match(r.read(`${CONFFILE}.dpkg-dist`), new RegExp(`# Shipped by ${next.version.replace(/\./g, '\\.')}\\.\n$`), "the new release's conffile is put beside it");
  assert.equal(readEnvFile(r.read('/etc/spindle/spindle.env')).SPINDLE_ADMIN_PASSWORD, password, 'spindle.env is left alone');
  b = startBroker(r, n);
  broker = b.child;
  await waitForBroker(n, b, 1884);
  assert.equal(retained(n, 1884, 'deb/kept'), 'written before the upgrade', 'the retained message survived the upgrade');
  await waitFor(() => tryRun(n, ['curl', '-sf', '-o', '/dev/null', 'http://127.0.0.1:8080/health']), { interval: 200, message: 'the admin API answers /health' });
  assert.equal(login(password), '200', 'the admin user survived the upgrade');
  await stopBroker(b);

  step('purge');
  r.run(['apt-get', 'purge', '-y', '-qq', 'spindle'], { timeout: 300_000 });
  for (const gone of ['/usr/lib/spindle', '/usr/bin/spindle', '/etc/spindle', '/var/lib/spindle', '/lib/systemd/system/spindle.service', '/usr/lib/sysctl.d/99-spindle.conf', '/usr/share/doc/spindle']) {
    assert.ok(!r.exists(gone), `${gone} is gone after the purge`);
  }
  assert.match(r.run(['getent', 'passwd', 'spindle']), /^spindle:/, 'the system user stays (deploy/debian/postrm)');
  assert.equal(r.run(['find', '/', '-xdev', '(', '-user', 'spindle', '-o', '-group', 'spindle', ')', '-print']), '', 'no file of the spindle user or group is left');
  step('done');
});
