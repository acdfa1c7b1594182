// A clean Debian 12 for the package tests (test/deploy/deb.test.ts): a debootstrap chroot
// (--variant=minbase: only Essential packages and apt, so a package's Depends are really
// installed by apt), unpacked from a tarball cached in ~/.cache/spindle (the first run
// debootstraps from deb.debian.org, about a minute; later runs unpack it in seconds). Only /proc
// is mounted (a fresh procfs, never a bind of the host's), and close() unmounts whatever is
// mounted under the root, checks nothing is, and only then deletes it; a root left by a killed
// run (its pid in the directory's name is gone) is cleaned up the same way by the next run.
//
// The chroot shares the host's network; a process that listens (the broker) runs in a network
// namespace of its own (NetNamespace), so the package's default ports (1883, 8080, ...) cannot
// collide with anything else on the machine, and the host's MQTT clients reach it through nsenter.
import { execFileSync, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { ownChild } from './children.ts';

const SUITE = 'bookworm';
const MIRROR = 'http://deb.debian.org/debian';
const CACHE_DIR = path.join(os.homedir(), '.cache/spindle');
/** The debootstrapped system as a tar: delete it to debootstrap afresh. */
export const BASE_TARBALL = path.join(CACHE_DIR, `debian-${SUITE}-minbase.tar`);
const PREFIX = 'spindle-deb-root-';

function sh(argv: string[], options: { input?: string; env?: NodeJS.ProcessEnv; timeout?: number } = {}): string {
  try {
    return execFileSync(argv[0], argv.slice(1), { encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'], maxBuffer: 64 << 20, ...options });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; status?: number };
    throw new Error(`${argv.join(' ')} failed (exit ${e.status}):\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: err });
  }
}

/** Mount points at or under `dir`, deepest first (from /proc/self/mountinfo). */
function mountsUnder(dir: string): string[] {
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean)
    .map((line) => unescape(line.split(' ')[4]))
    .filter((m) => m === dir || m.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}

/** Unmounts everything under `dir` and deletes it; refuses to delete while anything is mounted. */
function removeRoot(dir: string): void {
  for (const m of mountsUnder(dir)) {
    try {
      sh(['umount', m]);
    } catch {
      sh(['umount', '--lazy', m]);
    }
  }
  const left = mountsUnder(dir);
  if (left.length) throw new Error(`still mounted under ${dir}: ${left.join(', ')}; not deleting it`);
  rmSync(dir, { recursive: true, force: true });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Roots of earlier runs whose process is gone (killed before its cleanup ran). */
function sweepStaleRoots(): void {
  for (const name of readdirSync(os.tmpdir())) {
    const m = new RegExp(`^${PREFIX}(\\d+)-`).exec(name);
    if (m && !alive(Number(m[1]))) removeRoot(path.join(os.tmpdir(), name));
  }
}

/** The cached base system, debootstrapped when missing. */
function baseTarball(log: (line: string) => void): string {
  if (existsSync(BASE_TARBALL)) return BASE_TARBALL;
  mkdirSync(CACHE_DIR, { recursive: true });
  const build = mkdtempSync(path.join(os.tmpdir(), `${PREFIX}${process.pid}-debootstrap-`));
  try {
    log(`debootstrap --variant=minbase ${SUITE} (cached afterwards in ${BASE_TARBALL})`);
    chmodSync(build, 0o755);
    sh(['debootstrap', '--variant=minbase', SUITE, build, MIRROR], { timeout: 15 * 60_000 });
    // debootstrap unmounts what it mounted; removeRoot checks that before deleting anything.
    const partial = `${BASE_TARBALL}.${process.pid}.tmp`;
    sh(['tar', '-C', build, '--numeric-owner', '-cf', partial, '.']);
    renameSync(partial, BASE_TARBALL);
  } finally {
    removeRoot(build);
  }
  return BASE_TARBALL;
}

export class DebianRoot {
  private constructor(readonly dir: string) {}

  /** A fresh root unpacked from the cached base, with /proc mounted and the host's resolv.conf. */
  static open(log: (line: string) => void = () => {}): DebianRoot {
    sweepStaleRoots();
    const tarball = baseTarball(log);
    const dir = mkdtempSync(path.join(os.tmpdir(), `${PREFIX}${process.pid}-`));
    const root = new DebianRoot(dir);
    try {
      sh(['tar', '-C', dir, '--numeric-owner', '-xpf', tarball]);
      // mkdtemp's 0700 would keep every user but root out of the whole system.
      chmodSync(dir, 0o755);
      writeFileSync(path.join(dir, 'etc/resolv.conf'), readFileSync('/etc/resolv.conf'));
      sh(['mount', '-t', 'proc', 'proc', path.join(dir, 'proc')]);
    } catch (err) {
      root.close();
      throw err;
    }
    return root;
  }

  /** Host path of `p`, a path inside the root. */
  path(p: string): string {
    return path.join(this.dir, p);
  }

  exists(p: string): boolean {
    return existsSync(this.path(p));
  }

  read(p: string): string {
    return readFileSync(this.path(p), 'utf8');
  }

  write(p: string, text: string): void {
    writeFileSync(this.path(p), text);
  }

  /** Runs `argv` inside the root as root, with a clean environment; answers its stdout. */
  run(argv: string[], options: { timeout?: number } = {}): string {
    return sh(['chroot', this.dir, '/usr/bin/env', '-i', 'PATH=/usr/sbin:/usr/bin:/sbin:/bin', 'LANG=C.UTF-8', 'DEBIAN_FRONTEND=noninteractive', ...argv], options);
  }

  /** Unmounts and deletes the root (idempotent). */
  close(): void {
    if (existsSync(this.dir)) removeRoot(this.dir);
  }
}

/** A network namespace with only its loopback, held by a `sleep` this process owns: it goes away
 * with the last process in it. */
export class NetNamespace {
  private constructor(private readonly holder: ChildProcess) {}

  static async open(): Promise<NetNamespace> {
    const holder = ownChild(spawn('unshare', ['--net', 'sleep', 'infinity'], { stdio: 'ignore' }));
    const ns = new NetNamespace(holder);
    // unshare execs sleep once the namespace exists: until then its /proc/<pid>/ns/net is ours.
    const own = readlinkNet(process.pid);
    for (let i = 0; readlinkNet(holder.pid!) === own; i++) {
      if (i > 500 || holder.exitCode !== null) throw new Error('unshare --net did not start');
      await new Promise((r) => setTimeout(r, 10));
    }
    sh(ns.enter(['ip', 'link', 'set', 'lo', 'up']));
    return ns;
  }

  /** `argv` run inside the namespace (nsenter, which execs it: the pid is the command's). */
  enter(argv: string[]): string[] {
    return ['nsenter', `--net=/proc/${this.holder.pid}/ns/net`, ...argv];
  }

  run(argv: string[], options: { timeout?: number } = {}): string {
    return sh(this.enter(argv), options);
  }

  spawn(argv: string[], options: SpawnOptions = {}): ChildProcess {
    const full = this.enter(argv);
    return ownChild(spawn(full[0], full.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], ...options }));
  }

  close(): void {
    if (this.holder.exitCode === null && this.holder.signalCode === null) this.holder.kill('SIGKILL');
  }
}

function readlinkNet(pid: number): string {
  try {
    return readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return '';
  }
}
