// Owns the shape of the broker configuration: BrokerConfig is read from the key table (keys.ts),
// one field per key, nested along its dotted path, of the type its checker accepts. A key added
// to KEYS is a field here with nothing else to edit.
import type { KEYS } from './keys.ts';
import type { CheckedBy, Checker } from './validators.ts';

/** Each key of a table as its path and value type: { path: 'mqtt.ws.port'; value: number } | ... */
type Leaves<Spec> = Spec extends { key: infer K extends string; checker: infer C } ? { path: K; value: CheckedBy<C> } : never;

/** The first segment of a dotted path ('mqtt.ws.port' -> 'mqtt'), for each path of a union. */
type Head<P extends string> = P extends `${infer H}.${string}` ? H : P;

/** The leaves inside section `S`, their paths made relative to it ('mqtt.ws.port' in 'mqtt' -> 'ws.port'). */
type Inside<L, S extends string> = L extends { path: `${S}.${infer Rest}`; value: infer V } ? { path: Rest; value: V } : never;

/**
 * Leaves nested by path: each first segment is a leaf's value or the section of the leaves inside
 * it. (`& {}` drops out of the type; it only makes editors show a section as a plain object rather
 * than as `Nest<...>`.)
 */
type Nest<L extends { path: string; value: unknown }> = {
  [S in Head<L['path']>]: [Extract<L, { path: S }>] extends [never] ? Nest<Inside<L, S>> : Extract<L, { path: S }>['value'];
} & {};

/** The configuration a table of keys describes: ConfigOf<[KeySpec<'mqtt.ws.port', number>]> is { mqtt: { ws: { port: number } } }. */
export type ConfigOf<Keys extends readonly { key: string; checker: Checker }[]> = Nest<Leaves<Keys[number]>>;

/**
 * The loaded configuration. Every field is a key: loadConfig computes nothing beside them (the
 * cross-key rules only turn mqtt.tls.enabled on). A value computed at load time that is not a
 * key would be added here as `ConfigOf<typeof KEYS> & { ... }`, with a comment saying where it
 * is set.
 */
export type BrokerConfig = ConfigOf<typeof KEYS>;
