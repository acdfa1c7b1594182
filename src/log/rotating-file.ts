// Owns the files of the log store on disk: appends lines to `<dir>/<base>` (the live file),
// rotates it to `<base>.1` (and `.1` to `.2`, ...) before it would grow past `maxSize`, and keeps
// at most `maxFiles` files, the live one included. Lines are buffered and written in one
// synchronous write per tick (or at 64 KiB), so lines are never reordered or split and a
// flush() before exit loses nothing. One writer: the main thread.
import { closeSync, fstatSync, mkdirSync, openSync, readdirSync, renameSync, unlinkSync, writeSync, ftruncateSync } from 'node:fs';
import path from 'node:path';

export interface RotatingFileOptions {
  dir: string;
  /** Name of the live file, e.g. spindle.log. */
  base: string;
  /** Bytes per file; a single longer line still goes whole into a file of its own. */
  maxSize: number;
  /** Files kept, the live one included (at least 1). */
  maxFiles: number;
}

const FLUSH_BYTES = 64 * 1024;

export class RotatingFile {
  private fd: number | null = null;
  /** Bytes in the live file (written, not counting the buffer). */
  private size = 0;
  private pending: string[] = [];
  private pendingBytes = 0;
  private flushScheduled: NodeJS.Immediate | null = null;
  private failed: string | null = null;

  constructor(private readonly options: RotatingFileOptions) {
    if (options.maxFiles < 1) throw new RangeError('RotatingFile: maxFiles must be at least 1');
  }

  /** Creates the directory, opens the live file for appending, drops files past maxFiles. */
  open(): void {
    mkdirSync(this.options.dir, { recursive: true });
    this.fd = openSync(this.livePath, 'a');
    this.size = fstatSync(this.fd).size;
    this.dropExtraFiles();
  }

  get livePath(): string {
    return path.join(this.options.dir, this.options.base);
  }

  /** The path of file `index`: 0 is the live file, 1 the newest rotated one. */
  pathOf(index: number): string {
    return index === 0 ? this.livePath : `${this.livePath}.${index}`;
  }

  /** The indexes of the files present, newest (0, the live file) first. */
  indexes(): number[] {
    const prefix = `${this.options.base}.`;
    const out = [0];
    let names: string[];
    try {
      names = readdirSync(this.options.dir);
    } catch {
      return out;
    }
    for (const name of names) {
      if (!name.startsWith(prefix)) continue;
      const n = name.slice(prefix.length);
      if (/^[1-9]\d*$/.test(n)) out.push(Number(n));
    }
    return out.sort((a, b) => a - b);
  }

  /** Queues `line` (ending in a newline); rotates first when it would not fit the live file. */
  append(line: string): void {
    if (this.fd === null) return;
    const bytes = Buffer.byteLength(line);
    const used = this.size + this.pendingBytes;
    if (used > 0 && used + bytes > this.options.maxSize) {
      this.flush();
      this.rotate();
    }
    this.pending.push(line);
    this.pendingBytes += bytes;
    if (this.pendingBytes >= FLUSH_BYTES) this.flush();
    else this.flushScheduled ??= setImmediate(() => this.flush());
  }

  /** Writes the queued lines now. */
  flush(): void {
    if (this.flushScheduled) {
      clearImmediate(this.flushScheduled);
      this.flushScheduled = null;
    }
    if (this.fd === null || this.pending.length === 0) return;
    const data = Buffer.from(this.pending.join(''));
    this.pending = [];
    this.pendingBytes = 0;
    try {
      let off = 0;
      while (off < data.length) off += writeSync(this.fd, data, off);
      this.size += data.length;
      this.failed = null;
    } catch (err) {
      this.reportFailure(err as NodeJS.ErrnoException);
    }
  }

  /** Empties the live file (the store's delete, once every entry in it is old enough). */
  truncateLive(): void {
    this.flush();
    if (this.fd === null) return;
    ftruncateSync(this.fd, 0);
    this.size = 0;
  }

  /** Removes the rotated files from `index` on (the oldest ones). */
  removeFrom(index: number): number {
    let removed = 0;
    for (const i of this.indexes()) {
      if (i < Math.max(index, 1)) continue;
      try {
        unlinkSync(this.pathOf(i));
        removed++;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    return removed;
  }

  close(): void {
    this.flush();
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  /** live -> .1 -> .2 ...; the file at maxFiles-1 is replaced by the one before it. */
  private rotate(): void {
    if (this.fd === null) return;
    closeSync(this.fd);
    this.fd = null;
    try {
      const last = this.options.maxFiles - 1;
      if (last === 0) unlinkSync(this.livePath);
      for (let i = last; i >= 1; i--) {
        try {
          renameSync(this.pathOf(i - 1), this.pathOf(i));
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        }
      }
    } catch (err) {
      this.reportFailure(err as NodeJS.ErrnoException);
    }
    try {
      this.fd = openSync(this.livePath, 'a');
      this.size = fstatSync(this.fd).size;
    } catch (err) {
      this.reportFailure(err as NodeJS.ErrnoException);
    }
  }

  /** After maxFiles was lowered: the files past it go. */
  private dropExtraFiles(): void {
    this.removeFrom(this.options.maxFiles);
  }

  /** The log cannot log its own failure (it would write to itself): stderr, once per error code. */
  private reportFailure(err: NodeJS.ErrnoException): void {
    const code = err.code ?? err.message;
    if (this.failed === code) return;
    this.failed = code;
    process.stderr.write(`spindle: log store ${this.options.dir}: ${err.message}; lines are lost until it recovers\n`);
  }
}
