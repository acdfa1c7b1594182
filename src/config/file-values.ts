// Owns turning the parsed file into key values: walks the nested mapping along the known sections
// and refuses any key Spindle does not know, naming it and suggesting the nearest known one.
import { ConfigError } from './errors.ts';
import { childrenOf, isSection, keySpec } from './keys.ts';
import { shown } from './validators.ts';

/** The value of every key the file sets, by dotted key path. */
export function fileValues(data: Record<string, unknown>, file: string): Map<string, unknown> {
  const out = new Map<string, unknown>();
  collect(data, '', file, out);
  return out;
}

function collect(section: Record<string, unknown>, prefix: string, file: string, out: Map<string, unknown>): void {
  for (const name of Object.keys(section)) {
    const key = prefix === '' ? name : `${prefix}.${name}`;
    const value = section[name];
    if (keySpec(key) !== undefined) {
      out.set(key, value);
    } else if (isSection(key)) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        throw new ConfigError('CONFIG_INVALID', `${key}: expected a section (mapping of keys), got ${shown(value)} (from file ${file})`, key, `file ${file}`);
      }
      collect(value as Record<string, unknown>, key, file, out);
    } else {
      const guess = nearest(name, childrenOf(prefix));
      const hint = guess === undefined ? '' : `; did you mean ${prefix === '' ? guess : `${prefix}.${guess}`}?`;
      throw new ConfigError('CONFIG_UNKNOWN_KEY', `unknown key ${key} (from file ${file})${hint}`, key, `file ${file}`);
    }
  }
}

/** The candidate closest to `word` by edit distance, when close enough to be a likely typo. */
function nearest(word: string, candidates: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(word.length / 3)) + 1;
  for (const candidate of candidates) {
    const d = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length];
}
