// The line format Mosquitto's password and PSK files share: `name:value` per line, blank lines
// and `#` comments skipped, each name once. One reader for both, so they refuse the same way.
import { MosquittoFileError, type MosquittoFileErrorCode } from './errors.ts';

export interface ColonLine {
  readonly name: string;
  /** What follows the first colon, as written. */
  readonly value: string;
  /** `<source> line <n>`, for the caller's own refusals. */
  readonly at: string;
}

/**
 * Each entry of `text` in order. A line without a name before a colon, or a name listed twice, is
 * refused with `code`, naming the line; `expected` says what a line should be ("username:hash").
 */
export function* colonLines(text: string, source: string, code: MosquittoFileErrorCode, expected: string, what: string): Generator<ColonLine> {
  const seen = new Set<string>();
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === '' || line.startsWith('#')) continue;
    const at = `${source} line ${i + 1}`;
    const colon = line.indexOf(':');
    if (colon <= 0) throw new MosquittoFileError(code, `${at}: expected "${expected}"`);
    const name = line.slice(0, colon);
    if (seen.has(name)) throw new MosquittoFileError(code, `${at}: ${what} ${JSON.stringify(name)} is listed twice`);
    seen.add(name);
    yield { name, value: line.slice(colon + 1), at };
  }
}
