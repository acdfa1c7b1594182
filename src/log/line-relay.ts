// Owns relaying a worker thread's stdout in the main thread: every chunk goes on to the main
// thread's stdout unchanged, and every complete line to `onLine` (the log store). A last line
// without a newline is passed on when the stream ends. Answers a promise that settles when the
// stream has ended (or failed), so a shutdown can wait for the worker's last lines.
import type { Readable } from 'node:stream';

export function relayLines(input: Readable, output: NodeJS.WritableStream, onLine: (line: string) => void): Promise<void> {
  let carry = '';
  input.setEncoding('utf8');
  input.on('data', (chunk: string) => {
    output.write(chunk);
    const text = carry + chunk;
    let from = 0;
    for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', from)) {
      if (nl > from) onLine(text.slice(from, nl));
      from = nl + 1;
    }
    carry = text.slice(from);
  });
  return new Promise((resolve) => {
    const done = () => {
      if (carry.length) onLine(carry);
      carry = '';
      resolve();
    };
    input.once('end', done);
    input.once('close', done);
    input.once('error', done);
  });
}
