// The broker configuration as /system/config/export shows it: every configuration key as a
// nested document, with passwords and password hashes left out (OMITTED_KEYS). The import
// (config-import.ts) compares a document with the same values.
import { getPath, setPath, type BrokerConfig } from '../config/index.ts';
import { KEYS } from '../config/keys.ts';

/**
 * Keys left out of the export: passwords and password hashes. An import that sets them is
 * compared with the running values like any other key.
 */
export const OMITTED_KEYS: readonly string[] = ['admin.password', 'store.datasource.password', 'auth.users'];

/** The configuration as a nested document of every key, secrets left out. */
export function exportedConfig(config: BrokerConfig): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of exportedValues(config)) setPath(out, key, value);
  return out;
}

/** Every exported key with its value (the password of store.datasource.url and the bridges'
 * passwords removed). */
export function exportedValues(config: BrokerConfig): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const spec of KEYS) {
    if (OMITTED_KEYS.includes(spec.key)) continue;
    let value = getPath(config, spec.key);
    if (spec.key === 'store.datasource.url') value = withoutPassword(value as string);
    // A bridge's password to its remote broker is a secret like the others.
    if (spec.key === 'bridges') value = (value as BrokerConfig['bridges']).map(({ password: _password, ...rest }) => rest);
    out.set(spec.key, structuredClone(value));
  }
  return out;
}

function withoutPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password === '') return url;
    u.password = '';
    return u.toString();
  } catch {
    return url;
  }
}
