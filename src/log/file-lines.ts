// Owns reading the lines of a log file in either direction, a chunk at a time (never the whole
// file in memory): newest first for queries (from the end backwards), oldest first for downloads.
// Reads only the first `size` bytes (the file's size when the reader started: lines appended
// since are not read, and a line being written is never read half).
import type { FileHandle } from 'node:fs/promises';

const CHUNK = 64 * 1024;
const NEWLINE = 0x0a;

/** The lines of bytes [0, size) of `fh`, last first, without their newlines; empty lines skipped. */
export async function* linesBackward(fh: FileHandle, size: number): AsyncGenerator<string> {
  let end = size;
  // The start of the line that continues into the chunk read before (later in the file).
  let carry: Buffer = Buffer.alloc(0);
  while (end > 0) {
    const start = Math.max(0, end - CHUNK);
    const chunk = Buffer.alloc(end - start);
    await readFully(fh, chunk, start);
    end = start;
    let data = carry.length ? Buffer.concat([chunk, carry]) : chunk;
    let stop = data.length;
    for (let i = data.length - 1; i >= 0; i--) {
      if (data[i] !== NEWLINE) continue;
      if (stop > i + 1) yield data.toString('utf8', i + 1, stop);
      stop = i;
    }
    carry = data.subarray(0, stop);
    data = Buffer.alloc(0);
  }
  if (carry.length) yield carry.toString('utf8');
}

/** The lines of bytes [0, size) of `fh`, first first, without their newlines; empty lines skipped. */
export async function* linesForward(fh: FileHandle, size: number): AsyncGenerator<string> {
  let pos = 0;
  let carry: Buffer = Buffer.alloc(0);
  while (pos < size) {
    const chunk = Buffer.alloc(Math.min(CHUNK, size - pos));
    await readFully(fh, chunk, pos);
    pos += chunk.length;
    const data = carry.length ? Buffer.concat([carry, chunk]) : chunk;
    let from = 0;
    for (let i = 0; i < data.length; i++) {
      if (data[i] !== NEWLINE) continue;
      if (i > from) yield data.toString('utf8', from, i);
      from = i + 1;
    }
    carry = data.subarray(from);
  }
  if (carry.length) yield carry.toString('utf8');
}

async function readFully(fh: FileHandle, into: Buffer, position: number): Promise<void> {
  let off = 0;
  while (off < into.length) {
    const { bytesRead } = await fh.read(into, off, into.length - off, position + off);
    if (bytesRead === 0) throw new Error(`log file ended at ${position + off}, ${into.length - off} bytes early`);
    off += bytesRead;
  }
}
