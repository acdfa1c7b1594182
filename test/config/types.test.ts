// BrokerConfig is derived from the key table (src/config/types.ts): the type assertions below are
// checked by the typecheck (tsc), the tests by running the keys against a loaded configuration.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import type { BridgeConfig } from '../../src/bridges/bridge-config.ts';
import { getPath, loadConfig, type AclEntry, type BrokerConfig, type UserEntry } from '../../src/config/index.ts';
import { KEYS, type KeySpec } from '../../src/config/keys.ts';
import type { ConfigOf } from '../../src/config/types.ts';
import { integer, oneOf, string, type CheckedBy } from '../../src/config/validators.ts';
import type { LogLevel } from '../../src/log/levels.ts';

/** True when A and B are the same type (not merely assignable either way). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;

/** Compiles only when T is `true`. */
function holds<T extends true>(): T | undefined {
  return undefined;
}

test('a checker is typed by the values it accepts', () => {
  const level = oneOf(['debug', 'info']);
  holds<Equal<CheckedBy<typeof level>, 'debug' | 'info'>>();
  holds<Equal<CheckedBy<ReturnType<typeof integer>>, number>>();
  holds<Equal<CheckedBy<ReturnType<typeof string>>, string>>();
  const result = level.check('info');
  assert.ok(result.ok);
  holds<Equal<typeof result.value, 'debug' | 'info'>>();
  assert.equal(result.value, 'info');
});

test('ConfigOf nests dotted paths, each of the type of its checker', () => {
  type Table = readonly [KeySpec<'a', number>, KeySpec<'b.c', string>, KeySpec<'b.d.e', boolean>, KeySpec<'b.d.f', 'x' | 'y'>];
  holds<Equal<ConfigOf<Table>, { a: number; b: { c: string; d: { e: boolean; f: 'x' | 'y' } } }>>();
  // @ts-expect-error the helper does fail: b.c is a string, not a number
  holds<Equal<ConfigOf<Table>, { a: number; b: { c: number; d: { e: boolean; f: 'x' | 'y' } } }>>();
});

test('BrokerConfig has the types of the key checkers', () => {
  holds<Equal<BrokerConfig['nodeName'], string>>();
  holds<Equal<BrokerConfig['mqtt']['ws']['port'], number>>();
  holds<Equal<BrokerConfig['mqtt']['tls']['enabled'], boolean>>();
  holds<Equal<BrokerConfig['log']['level'], LogLevel>>();
  holds<Equal<BrokerConfig['log']['file'], { enabled: boolean; maxSize: number; maxFiles: number }>>();
  holds<Equal<BrokerConfig['limits']['queueDropPolicy'], 'drop-oldest' | 'drop-newest'>>();
  holds<Equal<BrokerConfig['store']['storeType'], 'LOCAL' | 'MEMORY' | 'POSTGRESQL' | 'MYSQL'>>();
  holds<Equal<BrokerConfig['auth']['users'], UserEntry[]>>();
  holds<Equal<BrokerConfig['auth']['acl'], AclEntry[]>>();
  holds<Equal<BrokerConfig['cluster']['addresses'], string[]>>();
  holds<Equal<BrokerConfig['cluster']['discovery'], { service: string; namespace: string }>>();
  holds<Equal<BrokerConfig['bridges'], BridgeConfig[]>>();
  holds<Equal<BrokerConfig['shutdownTimeout'], number>>();
  // @ts-expect-error no key, no field
  holds<Equal<BrokerConfig['mqtt']['ws']['host'], string>>();
});

/** The dotted paths of the values in `config`; a list is a value, not a section, and so is the
 * plain object of a key that holds one (otel.metrics.headers). */
function leafPaths(config: Record<string, unknown>, prefix = ''): string[] {
  const keys = new Set<string>(KEYS.map((spec) => spec.key));
  return Object.entries(config).flatMap(([name, value]) => {
    const path = prefix + name;
    const section = typeof value === 'object' && value !== null && !Array.isArray(value) && !keys.has(path);
    return section ? leafPaths(value as Record<string, unknown>, `${path}.`) : [path];
  });
}

test('a loaded configuration holds a value at every key and nothing else', () => {
  const config = loadConfig({ argv: [], env: {}, cpus: 2, hostname: 'box' });
  for (const spec of KEYS) assert.notEqual(getPath(config, spec.key), undefined, `${spec.key} has a value`);
  assert.deepEqual(leafPaths(config).sort(), KEYS.map((spec) => spec.key).sort());
});

test('no key is listed twice or is a section of another key', () => {
  const keys = KEYS.map((spec) => spec.key);
  assert.equal(new Set(keys).size, keys.length);
  for (const key of keys) assert.deepEqual(keys.filter((other) => other.startsWith(`${key}.`)), [], `${key} is a key, not a section`);
});
