// Owns the log store: every line the broker logs (the main thread's loggers through a sink, the
// workers' stdout through line-relay.ts), stamped with an id and kept in rotating NDJSON files
// (rotating-file.ts); read newest first for queries and oldest first for downloads, a file at a
// time and a chunk at a time; and deleted a whole file at a time. One per broker, in the main
// thread (the only writer).
import { open, type FileHandle } from 'node:fs/promises';

import { RotatingFile } from './rotating-file.ts';
import { linesBackward, linesForward } from './file-lines.ts';
import { compileFilter, parseEntry, type LogEntry, type LogFilter } from './log-entry.ts';
import { toJsonLine } from './serialize.ts';

export interface LogStoreOptions {
  /** <dataDir>/logs */
  dir: string;
  maxSize: number;
  maxFiles: number;
}

export const LOG_FILE = 'spindle.log';

export class LogStore {
  private readonly file: RotatingFile;
  private last = 0;
  private readonly tails = new Set<(line: string) => void>();

  constructor(readonly options: LogStoreOptions) {
    this.file = new RotatingFile({ dir: options.dir, base: LOG_FILE, maxSize: options.maxSize, maxFiles: options.maxFiles });
  }

  open(): void {
    this.file.open();
  }

  /** The id of the line appended last (0 before any). */
  get lastId(): number {
    return this.last;
  }

  /**
   * Stores one line: a JSON object gets the store's id as `logId`; anything else (a worker's
   * stray print) is stored as an info entry of `module` with the text as its message. Ids grow
   * with time (microseconds since the epoch, or one more than the last), also across restarts.
   */
  append(line: string, module = ''): number {
    const id = (this.last = Math.max(this.last + 1, Date.now() * 1000));
    const body = line.endsWith('\n') ? line.slice(0, -1) : line;
    const stored = body.startsWith('{') && body.endsWith('}')
      ? `${body.slice(0, -1)}${body.length > 2 ? ',' : ''}"logId":${id}}\n`
      : toJsonLine({ time: new Date().toISOString(), level: 'info', name: module, msg: body, logId: id });
    this.file.append(stored);
    for (const fn of this.tails) fn(stored);
    return id;
  }

  /** Calls `fn` with each line stored from now on (a live tail: the web console's); `fn` must not
   * log. Answers the function that ends it. */
  tail(fn: (line: string) => void): () => void {
    this.tails.add(fn);
    return () => this.tails.delete(fn);
  }

  /** The entries matching `filter`, newest first: page `page` of `size`, and how many match. */
  async query(filter: LogFilter, page: number, size: number): Promise<{ data: LogEntry[]; total: number }> {
    const test = compileFilter(filter);
    const from = (page - 1) * size;
    const data: LogEntry[] = [];
    let total = 0;
    for await (const line of this.lines('newest')) {
      if (!test.quick(line)) continue;
      const entry = parseEntry(line);
      if (!entry || !test.matches(entry)) continue;
      if (total >= from && data.length < size) data.push(entry);
      total++;
    }
    return { data, total };
  }

  /** The stored lines matching `filter`, oldest first, each ending in a newline. */
  async *export(filter: LogFilter): AsyncGenerator<string> {
    const test = compileFilter(filter);
    for await (const line of this.lines('oldest')) {
      if (!test.quick(line)) continue;
      const entry = parseEntry(line);
      if (entry && test.matches(entry)) yield `${line}\n`;
    }
  }

  /**
   * Removes the files whose newest entry is `old` (and every file older than it); the live file
   * is emptied when its newest entry is. Entries are never removed one by one: the files are
   * append-only. Answers how many files were removed or emptied.
   */
  async deleteOld(old: (e: LogEntry) => boolean): Promise<number> {
    this.file.flush();
    for (const index of this.file.indexes()) {
      const newest = await this.newestEntry(index);
      if (newest === null || !old(newest)) continue;
      let removed = this.file.removeFrom(Math.max(index, 1));
      if (index === 0) {
        this.file.truncateLive();
        removed++;
      }
      return removed;
    }
    return 0;
  }

  /** Writes what is queued. */
  flush(): void {
    this.file.flush();
  }

  close(): void {
    this.file.close();
  }

  private async newestEntry(index: number): Promise<LogEntry | null> {
    let fh: FileHandle;
    try {
      fh = await open(this.file.pathOf(index), 'r');
    } catch {
      return null;
    }
    try {
      const { size } = await fh.stat();
      for await (const line of linesBackward(fh, size)) {
        const e = parseEntry(line);
        if (e) return e;
      }
      return null;
    } finally {
      await fh.close();
    }
  }

  /**
   * Every stored line, in the order asked. The files are opened together first, so a rotation
   * while reading (which renames them) neither skips nor repeats a file; each is read up to the
   * size it had then.
   */
  private async *lines(order: 'newest' | 'oldest'): AsyncGenerator<string> {
    this.file.flush();
    const handles: { fh: FileHandle; size: number }[] = [];
    try {
      for (const index of this.file.indexes()) {
        try {
          const fh = await open(this.file.pathOf(index), 'r');
          handles.push({ fh, size: (await fh.stat()).size });
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        }
      }
      if (order === 'oldest') handles.reverse();
      for (const { fh, size } of handles) {
        yield* order === 'newest' ? linesBackward(fh, size) : linesForward(fh, size);
      }
    } finally {
      await Promise.all(handles.map((h) => h.fh.close()));
    }
  }
}
