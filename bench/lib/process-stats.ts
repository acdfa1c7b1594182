// What the soak and scale benches read about a running broker and this machine from /proc: a
// process's open file descriptors, resident memory and open-file limit, and kernel settings.
import { readFileSync, readdirSync } from 'node:fs';

/** Open file descriptors of `pid` (entries of /proc/<pid>/fd); NaN when the process is gone. */
export function openFds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return NaN;
  }
}

/** Resident set size of `pid` in bytes (VmRSS of /proc/<pid>/status); NaN when the process is gone. */
export function rssBytes(pid: number): number {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
    return line ? Number(line.split(/\s+/)[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** The open-file limit `pid` runs with ("Max open files" of /proc/<pid>/limits): soft and hard. */
export function nofileLimit(pid: number | 'self'): { soft: number; hard: number } {
  try {
    const line = readFileSync(`/proc/${pid}/limits`, 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
    const [soft, hard] = line!.replace('Max open files', '').trim().split(/\s+/);
    const n = (v: string) => (v === 'unlimited' ? Infinity : Number(v));
    return { soft: n(soft), hard: n(hard) };
  } catch {
    return { soft: NaN, hard: NaN };
  }
}

/** A kernel setting by its sysctl name (net.core.somaxconn), as text; undefined when unreadable. */
export function sysctl(name: string): string | undefined {
  try {
    return readFileSync(`/proc/sys/${name.replace(/\./g, '/')}`, 'utf8').trim().replace(/\s+/g, ' ');
  } catch {
    return undefined;
  }
}

export const MiB = 2 ** 20;

export function mib(bytes: number): string {
  return Number.isFinite(bytes) ? `${(bytes / MiB).toFixed(1)} MiB` : 'n/a';
}
