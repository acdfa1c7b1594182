// The config of each policy type as a schema, per chain (auth, acl): the fields http-config.ts,
// database-config.ts, jwt-config.ts and ldap-config.ts read, with their ranges and defaults. The
// /auth/add and /acl/add bodies are discriminated by type with these (OpenAPI, and the console's
// forms); those modules still check what a schema cannot (templates, one field against another).
import { Type, type TSchema } from '@sinclair/typebox';

import { configOf, int, optionalText, secret, stringMap, TLS } from '../schema/form-fields.ts';
import { SALT_TYPES, STRATEGIES } from '../auth/strategies/password-strategy.ts';
import type { PolicyKind } from './manager.ts';

const choose = (values: readonly string[], fallback?: string, description?: string) =>
  Type.Optional(Type.Unsafe<string>({ type: 'string', enum: [...values], ...(fallback ? { 'x-default': fallback } : {}), ...(description ? { description } : {}) }));

function http(kind: PolicyKind): TSchema {
  return Type.Object({
    url: Type.String({ minLength: 1, description: `http or https; templates (\${username}, \${clientid}${kind === 'acl' ? ', ${topic}, ${action}' : ''}) in the query string only` }),
    method: choose(['POST', 'GET'], 'POST'),
    headers: stringMap('header name -> value (no templates)'),
    body: stringMap('field -> template, e.g. "${username}"'),
    timeout: int(100, 60_000, 5000, 'ms'),
    tls: TLS,
  }, { description: 'asks a web service' });
}

function database(kind: PolicyKind): TSchema {
  return configOf({
    source: optionalText('the id of a data source (Data sources page)'),
    sql: optionalText(kind === 'auth' ? 'mysql, postgresql: SELECT password_hash, salt, is_superuser ... WHERE username = ${username}' : 'mysql, postgresql: SELECT permission, action, topic ... WHERE username = ${username}'),
    command: optionalText('redis: e.g. HMGET mqtt_user:${username} password_hash salt'),
    collection: optionalText('mongodb'),
    filter: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'mongodb, with collection: e.g. {"username": "${username}"}' })),
    ...(kind === 'auth' ? {
      passwordHash: Type.Optional(Type.Object({
        strategy: choose(STRATEGIES, 'sha256'),
        saltType: choose(SALT_TYPES, 'prefix'),
        iterations: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000, description: 'pbkdf2 only' })),
        digest: choose(['sha1', 'sha256', 'sha512'], undefined, 'pbkdf2 only'),
        keyLength: Type.Optional(Type.Integer({ minimum: 1, maximum: 1024, description: 'pbkdf2 only' })),
      }, { description: 'how the stored passwords are hashed' })),
    } : {}),
  }, 'reads a data source: one query (sql, command, or collection with filter)');
}

const JWT = configOf({
  secret: secret('HMAC: give one of secret, publicKey, jwksUrl'),
  secretBase64Encoded: Type.Optional(Type.Boolean({ 'x-default': false })),
  publicKey: optionalText('PEM (RSA or EC)', { 'x-multiline': true }),
  jwksUrl: optionalText('https://.../.well-known/jwks.json'),
  jwksRefresh: int(1, 86_400, 300, 's'),
  jwksCooldown: int(0, 3600, 30, 's'),
  algorithms: Type.Optional(Type.Array(Type.String(), { description: 'the algorithms accepted (default: those of the key)' })),
  from: choose(['password', 'username'], 'password', 'where the client puts the token'),
  verifyClaims: stringMap('claim -> template, e.g. sub: ${username}'),
  superuserClaim: optionalText('default is_superuser'),
  aclClaim: optionalText('default acl'),
  usernameClaim: optionalText(),
  clockTolerance: int(0, 300, 5, 's'),
}, 'verifies a JSON Web Token');

const SCOPE = choose(['base', 'one', 'sub'], 'sub');
const RULE = Type.Object({
  permission: Type.Unsafe<string>({ type: 'string', enum: ['allow', 'deny'] }),
  action: Type.Unsafe<string>({ type: 'string', enum: ['publish', 'subscribe', 'all'] }),
  topic: Type.String({ description: 'a topic filter (%u, %c)' }),
});

function ldap(kind: PolicyKind): TSchema {
  return Type.Object({
    urls: Type.Union([Type.String(), Type.Array(Type.String())], { description: 'ldap:// or ldaps:// (a list for failover)' }),
    startTls: Type.Optional(Type.Boolean({ 'x-default': false })),
    tls: Type.Optional(Type.Object({ caFile: optionalText('a PEM file on the broker'), ca: optionalText('PEM'), rejectUnauthorized: Type.Optional(Type.Boolean({ 'x-default': true })) })),
    connectTimeout: int(100, 60_000, 5000, 'ms'),
    timeout: int(100, 60_000, 5000, 'ms'),
    poolSize: int(1, 64, 4),
    service: Type.Optional(Type.Object({ dn: Type.String({ description: 'the service account' }), password: Type.String({ format: 'password' }) }, { description: 'the account that searches' })),
    mode: Type.Unsafe<string>({ type: 'string', enum: ['bind', 'search'], 'x-default': 'search', description: 'bind: a DN template; search: a base and a filter, then bind as the DN found' }),
    userDn: optionalText('mode bind: e.g. uid=${username},ou=people,dc=example,dc=org'),
    base: optionalText('mode search'),
    filter: optionalText('mode search: e.g. (&(objectClass=inetOrgPerson)(uid=${username}))'),
    scope: SCOPE,
    groups: Type.Optional(Type.Object({ base: optionalText(), filter: optionalText('${dn}: the user\'s DN'), scope: SCOPE, attribute: optionalText('instead of a search, e.g. memberOf') }, { description: 'how a user\'s groups are found' })),
    ...(kind === 'auth'
      ? { superuserAttribute: optionalText(), superuserGroups: Type.Optional(Type.Array(Type.String())) }
      : {
        groupRules: Type.Optional(Type.Array(Type.Object({ group: Type.String({ description: 'a DN or a cn' }), rules: Type.Array(RULE) }), { description: 'the rules of each group' })),
        groupCacheTtl: int(0, 86_400, 60, 's'),
        groupCacheSize: int(0, 1_000_000, 10_000),
      }),
  }, { description: 'a directory (LDAP)' });
}

export const POLICY_CONFIG_SCHEMAS: Record<PolicyKind, Record<string, TSchema>> = {
  auth: { http: http('auth'), database: database('auth'), jwt: JWT, ldap: ldap('auth') },
  acl: { http: http('acl'), database: database('acl'), ldap: ldap('acl') },
};
