// Owns the redis `command` of a database policy: which commands it may be (auth: HMGET key
// field..., HGET key field, HGETALL key; ACL: HGETALL key), where `${name}` templates may appear
// (in the key: every argument is sent as one value, so a template cannot add arguments; never in
// the command name or the field names, which fix the row's columns), and how a reply becomes rows.
// Auth: HMGET values map, in order, to the field names after the key, HGET's value to its field,
// HGETALL's hash to its own fields; no value at all is no row. ACL (EMQX's form): each field of
// the hash is a topic pattern and its value the action, with permission allow.
import { SourceError, type Row } from '../sources/types.ts';
import { paramsOf } from './params.ts';
import { PolicyConfigError, type PolicyKind, type PolicyParam } from './types.ts';

const AUTH_COMMANDS = ['HMGET', 'HGET', 'HGETALL'];
const ACL_COMMANDS = ['HGETALL'];
const PASSWORD_FIELDS = ['password_hash', 'password'];
const TEMPLATE = /\$\{[^}]*\}/;

/** The normalized command (an array, its name upper-cased); throws PolicyConfigError(field). */
export function parseRedisCommand(raw: unknown, purpose: PolicyKind, allowed: readonly PolicyParam[], field = 'config.command'): string[] {
  const args = typeof raw === 'string' ? raw.trim().split(/\s+/) : raw;
  if (!Array.isArray(args) || args.length === 0 || args.some((a) => typeof a !== 'string' || a === '')) {
    throw new PolicyConfigError(field, 'must be a command as one string or an array of non-empty strings, e.g. "HMGET mqtt_user:${username} password_hash salt"');
  }
  const [name, key, ...fields] = args as string[];
  const command = name.toUpperCase();
  const commands = purpose === 'auth' ? AUTH_COMMANDS : ACL_COMMANDS;
  if (!commands.includes(command)) throw new PolicyConfigError(field, `the command must be ${commands.join(', ')} (got ${name})`);
  if (key === undefined) throw new PolicyConfigError(field, `${command} needs a key, e.g. ${command} mqtt_${purpose === 'auth' ? 'user' : 'acl'}:\${username}`);
  paramsOf(key, allowed, field);
  if (command === 'HGETALL' && fields.length > 0) throw new PolicyConfigError(field, 'HGETALL takes the key only');
  if (command === 'HGET' && fields.length !== 1) throw new PolicyConfigError(field, 'HGET takes the key and one field');
  if (command === 'HMGET' && fields.length === 0) throw new PolicyConfigError(field, 'HMGET takes the key and the fields to read');
  for (const f of fields) {
    if (TEMPLATE.test(f)) throw new PolicyConfigError(field, `a field name cannot hold a template (${f}): only the key can`);
  }
  if (command !== 'HGETALL' && !fields.some((f) => PASSWORD_FIELDS.includes(f))) {
    throw new PolicyConfigError(field, `${command} must read the field password_hash (or password)`);
  }
  return [command, key, ...fields];
}

/** The parameters the command reads (its key's templates). */
export function redisCommandParams(command: readonly string[], allowed: readonly PolicyParam[], field = 'config.command'): Set<PolicyParam> {
  return paramsOf(command[1], allowed, field);
}

/** The rows of a reply to `command` (after its templates were filled). */
export function redisReplyRows(command: readonly string[], reply: unknown, purpose: PolicyKind): Row[] {
  const [name, , ...fields] = command;
  if (name === 'HGETALL') {
    const hash = hashOf(reply);
    if (purpose === 'acl') return hash.map(([topic, action]) => ({ permission: 'allow', action, topic }));
    return hash.length === 0 ? [] : [Object.fromEntries(hash)];
  }
  const values = name === 'HGET' ? [reply] : reply;
  if (!Array.isArray(values) || values.length !== fields.length) throw unexpected(name, reply);
  const row: Row = {};
  values.forEach((v, i) => {
    if (v !== null && v !== undefined) row[fields[i]] = String(v);
  });
  return Object.keys(row).length === 0 ? [] : [row];
}

/** The [field, value] pairs of an HGETALL reply: ioredis answers call() with [field, value, ...];
 * an object is taken as well. */
function hashOf(reply: unknown): [string, string][] {
  if (Array.isArray(reply)) {
    if (reply.length % 2 !== 0) throw unexpected('HGETALL', reply);
    const pairs: [string, string][] = [];
    for (let i = 0; i < reply.length; i += 2) pairs.push([String(reply[i]), String(reply[i + 1])]);
    return pairs;
  }
  if (reply !== null && typeof reply === 'object') return Object.entries(reply).map(([k, v]) => [k, String(v)]);
  throw unexpected('HGETALL', reply);
}

function unexpected(name: string, reply: unknown): SourceError {
  return new SourceError(`redis: unexpected reply to ${name} (${typeof reply})`, 'database', false);
}
