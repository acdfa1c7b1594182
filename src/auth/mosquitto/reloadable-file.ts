// Owns a parsed file that can be read again on demand (SIGHUP): the current contents, replaced only
// when the new text parses, and a generation that counts successful reloads (caches of decisions
// made from the old contents compare it). Read at construction (a bad file stops the start).
// One instance per thread; the file is read with the thread's own I/O.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

import { MosquittoFileError } from './errors.ts';

export class ReloadableFile<T> {
  readonly path: string;
  private readonly parse: (text: string, source: string) => T;
  private value: T;
  private count = 0;

  constructor(path: string, parse: (text: string, source: string) => T) {
    this.path = path;
    this.parse = parse;
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw unreadable(path, err);
    }
    this.value = parse(text, path);
  }

  get current(): T {
    return this.value;
  }

  /** Successful reloads so far. */
  get generation(): number {
    return this.count;
  }

  /** Reads and parses the file again; on any error the old contents stay and the error is thrown. */
  async reload(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      throw unreadable(this.path, err);
    }
    this.value = this.parse(text, this.path);
    this.count++;
  }
}

function unreadable(path: string, err: unknown): MosquittoFileError {
  return new MosquittoFileError('MOSQUITTO_FILE_UNREADABLE', `cannot read ${path}: ${(err as Error).message}`, { cause: err });
}
