// Owns the config of the `ldap` policy type (auth and ACL) as the admin API receives it: the
// directory (urls, StartTLS or ldaps, TLS, timeouts, the pool and its service account), how a
// user is found (mode `bind`: a DN template; mode `search`: a base and a filter), how their
// groups are found (a group search, or an attribute of the user's entry such as memberOf), and
// per kind: the superuser attribute or groups (auth), the rules of each group (ACL). A mistake is
// a PolicyConfigError naming its field; the normalized form (what is stored) has every default
// written out and parses to itself. The service password is kept (redact.ts hides `password` at
// any depth); a CA given as a file is read when the policy compiles.
import { readFileSync } from 'node:fs';

import { aclPatternProblem } from '../auth/acl-pattern.ts';
import { integerField } from './config-fields.ts';
import { filterShapeProblem, LdapTemplate, type LdapParam } from './ldap-template.ts';
import { PolicyConfigError, type AclGrant, type PolicyKind } from './types.ts';

export type LdapScope = 'base' | 'one' | 'sub';

export interface LdapTlsConfig {
  /** Verify the directory's certificate (default true). */
  rejectUnauthorized: boolean;
  /** PEM of the CA to trust instead of the system's. */
  ca?: string;
  /** A file holding that PEM, read when the policy starts (on every node of a cluster). */
  caFile?: string;
}

export interface LdapSearchSpec {
  base: string;
  filter: string;
  scope: LdapScope;
}

export type LdapGroupsSpec = ({ kind: 'search' } & LdapSearchSpec) | { kind: 'attribute'; attribute: string };

export interface LdapGroupRule {
  /** A group's DN, or the value of its first RDN (its cn). */
  group: string;
  rules: AclGrant[];
}

export interface LdapConfig {
  /** Tried in order: a connection goes to the first that answers. */
  urls: string[];
  startTls: boolean;
  /** null: plain ldap://, or the system's CAs for ldaps:// and StartTLS. */
  tls: LdapTlsConfig | null;
  /** ms to open a connection (TCP and TLS). */
  connectTimeout: number;
  /** ms for one LDAP operation, and for waiting for a free connection of the pool. */
  timeout: number;
  /** Connections the policy may hold at once. */
  poolSize: number;
  /** The account searches bind as; null: they run anonymously. */
  service: { dn: string; password: string } | null;
  mode: 'bind' | 'search';
  /** mode bind: the user's DN, `${username}` escaped per RFC 4514. */
  userDn?: string;
  /** mode search: where the user's entry is looked for (the filter's values escaped per RFC 4515). */
  user?: LdapSearchSpec;
  /** How a user's groups are found; null: not at all. */
  groups: LdapGroupsSpec | null;
  /** auth: the attribute of the user's entry that makes a superuser (TRUE, true, 1). */
  superuserAttribute?: string;
  /** auth: groups whose members are superusers. */
  superuserGroups: string[];
  /** acl: the rules of each group, in order: a user's rules are those of the groups they are in,
   * in this order; the first rule that applies decides. */
  groupRules: LdapGroupRule[];
  /** acl: seconds a user's groups are kept (0: asked every time). */
  groupCacheTtl: number;
  /** acl: users whose groups are kept, least recently used out first. */
  groupCacheSize: number;
}

type Raw = Record<string, unknown>;

const COMMON_FIELDS = ['urls', 'startTls', 'tls', 'connectTimeout', 'timeout', 'poolSize', 'service', 'mode', 'userDn', 'base', 'filter', 'scope', 'groups'];
const KIND_FIELDS: Record<PolicyKind, string[]> = {
  auth: ['superuserAttribute', 'superuserGroups'],
  acl: ['groupRules', 'groupCacheTtl', 'groupCacheSize'],
};
const SCOPES: readonly LdapScope[] = ['base', 'one', 'sub'];
/** An attribute description: a name (letters, digits, hyphens) or an OID. */
const ATTRIBUTE = /^(?:[A-Za-z][A-Za-z0-9-]*|\d+(?:\.\d+)+)$/;
const MAX_URLS = 8;
const MAX_GROUP_RULES = 1000;
const MAX_RULES_PER_GROUP = 1000;
const MAX_TEXT = 4096;

/** What a user template or filter may read. */
const USER_PARAMS: readonly LdapParam[] = ['username', 'clientid'];
/** What a group filter may read: the user's DN too. */
const GROUP_PARAMS: readonly LdapParam[] = ['username', 'clientid', 'dn'];

export function parseLdapPolicyConfig(raw: unknown, kind: PolicyKind): Record<string, unknown> {
  return toRecord(readLdapPolicyConfig(raw, kind), kind);
}

/** The normalized config, typed: what compile works from. */
export function readLdapPolicyConfig(input: unknown, kind: PolicyKind): LdapConfig {
  const o = configObject(input, [...COMMON_FIELDS, ...KIND_FIELDS[kind]]);
  const urls = urlsField(o.urls);
  const secure = urls[0].startsWith('ldaps:');
  // One scheme for all: a failover must not change how the connection is protected.
  if (urls.some((u) => u.startsWith('ldaps:') !== secure)) throw new PolicyConfigError('config.urls', 'mixes ldap:// and ldaps:// (give one scheme)');
  const startTls = booleanField(o.startTls, 'config.startTls', false);
  if (startTls && secure) throw new PolicyConfigError('config.startTls', 'is for ldap:// urls (an ldaps:// connection is TLS from its start)');
  const tls = tlsField(o.tls, secure || startTls);
  const mode = o.mode;
  if (mode !== 'bind' && mode !== 'search') throw new PolicyConfigError('config.mode', 'must be "bind" (a DN template) or "search" (a base and a filter, then bind as the entry found)');
  const config: LdapConfig = {
    urls,
    startTls,
    tls,
    connectTimeout: integerField(o.connectTimeout, 'config.connectTimeout', 100, 60_000, 5000),
    timeout: integerField(o.timeout, 'config.timeout', 100, 60_000, 5000),
    poolSize: integerField(o.poolSize, 'config.poolSize', 1, 64, 4),
    service: serviceField(o.service),
    mode,
    groups: groupsField(o.groups),
    superuserGroups: [],
    groupRules: [],
    groupCacheTtl: 0,
    groupCacheSize: 0,
  };
  if (mode === 'bind') {
    for (const f of ['base', 'filter', 'scope']) if (o[f] !== undefined) throw new PolicyConfigError(`config.${f}`, 'is for mode "search" (mode "bind" takes userDn)');
    config.userDn = templateField(o.userDn, 'config.userDn', 'dn', USER_PARAMS, 'a DN template, e.g. uid=${username},ou=people,dc=example,dc=org', 'username');
  } else {
    if (o.userDn !== undefined) throw new PolicyConfigError('config.userDn', 'is for mode "bind" (mode "search" takes base and filter)');
    config.user = searchField(o, 'config', USER_PARAMS, 'username');
  }
  if (kind === 'auth') readAuthFields(o, config);
  else readAclFields(o, config);
  return config;
}

/** The CA a policy trusts: the inline PEM, or its file read now (a PolicyConfigError naming
 * config.tls.caFile when it cannot be read). */
export function caOf(tls: LdapTlsConfig | null): string | undefined {
  if (tls === null) return undefined;
  if (tls.ca !== undefined) return tls.ca;
  if (tls.caFile === undefined) return undefined;
  let pem: string;
  try {
    pem = readFileSync(tls.caFile, 'utf8');
  } catch (err) {
    throw new PolicyConfigError('config.tls.caFile', `cannot be read: ${(err as Error).message}`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new PolicyConfigError('config.tls.caFile', 'holds no PEM certificate');
  return pem;
}

function readAuthFields(o: Raw, config: LdapConfig): void {
  if (o.superuserAttribute !== undefined) config.superuserAttribute = attributeField(o.superuserAttribute, 'config.superuserAttribute');
  if (o.superuserGroups !== undefined) {
    if (!Array.isArray(o.superuserGroups) || o.superuserGroups.length > MAX_GROUP_RULES) throw new PolicyConfigError('config.superuserGroups', `must be a list of at most ${MAX_GROUP_RULES} group DNs or names`);
    config.superuserGroups = o.superuserGroups.map((g, i) => groupNameField(g, `config.superuserGroups[${i}]`));
    if (config.superuserGroups.length > 0 && config.groups === null) throw new PolicyConfigError('config.groups', 'is required with superuserGroups (how a user\'s groups are found)');
  }
}

function readAclFields(o: Raw, config: LdapConfig): void {
  if (config.groups === null) throw new PolicyConfigError('config.groups', 'is required: {base, filter, scope} (a group search) or {attribute} (e.g. memberOf)');
  const list = o.groupRules;
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_GROUP_RULES) {
    throw new PolicyConfigError('config.groupRules', `must be a list of 1 to ${MAX_GROUP_RULES} {group, rules: [{permission, action, topic}]}`);
  }
  config.groupRules = list.map((entry, i) => groupRuleField(entry, `config.groupRules[${i}]`));
  config.groupCacheTtl = integerField(o.groupCacheTtl, 'config.groupCacheTtl', 0, 86_400, 60);
  config.groupCacheSize = integerField(o.groupCacheSize, 'config.groupCacheSize', 0, 1_000_000, 10_000);
}

function groupRuleField(v: unknown, field: string): LdapGroupRule {
  const o = configObject(v, ['group', 'rules'], field);
  const group = groupNameField(o.group, `${field}.group`);
  if (!Array.isArray(o.rules) || o.rules.length === 0 || o.rules.length > MAX_RULES_PER_GROUP) {
    throw new PolicyConfigError(`${field}.rules`, `must be a list of 1 to ${MAX_RULES_PER_GROUP} {permission, action, topic}`);
  }
  return { group, rules: o.rules.map((r, j) => ruleField(r, `${field}.rules[${j}]`)) };
}

function ruleField(v: unknown, field: string): AclGrant {
  const o = configObject(v, ['permission', 'action', 'topic'], field);
  if (o.permission !== 'allow' && o.permission !== 'deny') throw new PolicyConfigError(`${field}.permission`, 'must be "allow" or "deny"');
  if (o.action !== 'publish' && o.action !== 'subscribe' && o.action !== 'all') throw new PolicyConfigError(`${field}.action`, 'must be "publish", "subscribe" or "all"');
  if (typeof o.topic !== 'string') throw new PolicyConfigError(`${field}.topic`, 'must be a topic filter (with %u, %c)');
  const problem = aclPatternProblem(o.topic);
  if (problem !== undefined) throw new PolicyConfigError(`${field}.topic`, problem);
  return { permission: o.permission, action: o.action, topic: o.topic };
}

function groupNameField(v: unknown, field: string): string {
  if (typeof v !== 'string' || v.trim() === '' || v.length > MAX_TEXT) throw new PolicyConfigError(field, 'must be a group DN (cn=sensors,ou=groups,...) or a group name (sensors)');
  return v.trim();
}

function urlsField(v: unknown): string[] {
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_URLS) throw new PolicyConfigError('config.urls', `is required: an ldap:// or ldaps:// url, or a list of 1 to ${MAX_URLS} (tried in order)`);
  return list.map((u, i) => {
    const field = typeof v === 'string' ? 'config.urls' : `config.urls[${i}]`;
    if (typeof u !== 'string') throw new PolicyConfigError(field, 'must be an ldap:// or ldaps:// url');
    let url: URL;
    try {
      url = new URL(u);
    } catch {
      throw new PolicyConfigError(field, 'is not a valid url');
    }
    if (url.protocol !== 'ldap:' && url.protocol !== 'ldaps:') throw new PolicyConfigError(field, 'scheme must be ldap or ldaps');
    if (url.hostname === '') throw new PolicyConfigError(field, 'needs a host');
    if ((url.pathname !== '' && url.pathname !== '/') || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
      throw new PolicyConfigError(field, 'takes a scheme, a host and a port only (the base DN and the account are fields of their own)');
    }
    return `${url.protocol}//${url.host}`;
  });
}

function tlsField(v: unknown, usesTls: boolean): LdapTlsConfig | null {
  if (v === undefined || v === false) return null;
  if (!usesTls) throw new PolicyConfigError('config.tls', 'applies to ldaps:// urls or with startTls');
  if (v === true) return { rejectUnauthorized: true };
  const o = configObject(v, ['rejectUnauthorized', 'ca', 'caFile'], 'config.tls');
  const tls: LdapTlsConfig = { rejectUnauthorized: booleanField(o.rejectUnauthorized, 'config.tls.rejectUnauthorized', true) };
  if (o.ca !== undefined && o.caFile !== undefined) throw new PolicyConfigError('config.tls.caFile', 'cannot be given with config.tls.ca');
  if (o.ca !== undefined) {
    if (typeof o.ca !== 'string' || !o.ca.includes('-----BEGIN CERTIFICATE-----')) throw new PolicyConfigError('config.tls.ca', 'must be a PEM certificate');
    tls.ca = o.ca;
  }
  if (o.caFile !== undefined) {
    if (typeof o.caFile !== 'string' || o.caFile === '') throw new PolicyConfigError('config.tls.caFile', 'must be the path of a PEM file');
    tls.caFile = o.caFile;
    caOf(tls);
  }
  return tls;
}

function serviceField(v: unknown): LdapConfig['service'] {
  if (v === undefined) return null;
  const o = configObject(v, ['dn', 'password'], 'config.service');
  if (typeof o.dn !== 'string' || o.dn.trim() === '' || o.dn.length > MAX_TEXT) throw new PolicyConfigError('config.service.dn', 'must be the DN of the account searches bind as');
  // A DN with an empty password is an unauthenticated bind (RFC 4513 5.1.2): it succeeds as
  // anonymous on most directories, which is never what a service account means.
  if (typeof o.password !== 'string' || o.password === '') throw new PolicyConfigError('config.service.password', 'is required (an empty one is an unauthenticated bind)');
  return { dn: o.dn.trim(), password: o.password };
}

function groupsField(v: unknown): LdapGroupsSpec | null {
  if (v === undefined) return null;
  const o = configObject(v, ['base', 'filter', 'scope', 'attribute'], 'config.groups');
  if (o.attribute !== undefined) {
    for (const f of ['base', 'filter', 'scope']) if (o[f] !== undefined) throw new PolicyConfigError(`config.groups.${f}`, 'cannot be given with config.groups.attribute');
    return { kind: 'attribute', attribute: attributeField(o.attribute, 'config.groups.attribute') };
  }
  return { kind: 'search', ...searchField(o, 'config.groups', GROUP_PARAMS, undefined) };
}

/** base, filter and scope at `prefix`; the filter must read `needs` when given. */
function searchField(o: Raw, prefix: string, allowed: readonly LdapParam[], needs: LdapParam | undefined): LdapSearchSpec {
  if (typeof o.base !== 'string' || o.base.length > MAX_TEXT) throw new PolicyConfigError(`${prefix}.base`, 'is required: the DN to search under, e.g. ou=people,dc=example,dc=org');
  if (o.base.includes('${') || /%[ucd%]/.test(o.base)) throw new PolicyConfigError(`${prefix}.base`, 'is a fixed DN (placeholders go in the filter)');
  const example = needs === 'username' ? '(&(objectClass=inetOrgPerson)(uid=${username}))' : '(&(objectClass=groupOfNames)(member=${dn}))';
  const filter = templateField(o.filter, `${prefix}.filter`, 'filter', allowed, `a filter, e.g. ${example}`, needs);
  const problem = filterShapeProblem(filter);
  if (problem !== undefined) throw new PolicyConfigError(`${prefix}.filter`, problem);
  let scope: LdapScope = 'sub';
  if (o.scope !== undefined) {
    if (!SCOPES.includes(o.scope as LdapScope)) throw new PolicyConfigError(`${prefix}.scope`, 'must be "sub", "one" or "base"');
    scope = o.scope as LdapScope;
  }
  return { base: o.base.trim(), filter, scope };
}

/** A template at `field`; it must read `needs` (undefined: ${dn} or ${username}). */
function templateField(v: unknown, field: string, context: 'dn' | 'filter', allowed: readonly LdapParam[], what: string, needs: LdapParam | undefined): string {
  if (typeof v !== 'string' || v.trim() === '' || v.length > MAX_TEXT) throw new PolicyConfigError(field, `is required: ${what}`);
  const template = LdapTemplate.parse(v, context, allowed, field);
  if (needs !== undefined && !template.params.has(needs)) throw new PolicyConfigError(field, `must use \${${needs}} (without it every user is the same entry)`);
  if (needs === undefined && !template.params.has('dn') && !template.params.has('username')) throw new PolicyConfigError(field, 'must use ${dn} or ${username} (without it every user has the same groups)');
  return v;
}

function attributeField(v: unknown, field: string): string {
  if (typeof v !== 'string' || !ATTRIBUTE.test(v)) throw new PolicyConfigError(field, 'must be an attribute name (e.g. memberOf) or an OID');
  return v;
}

function booleanField(v: unknown, field: string, fallback: boolean): boolean {
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') throw new PolicyConfigError(field, 'must be true or false');
  return v;
}

function configObject(raw: unknown, fields: readonly string[], at = 'config'): Raw {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new PolicyConfigError(at, 'must be an object');
  // A null field is an absent one (a client may send every field, the unused ones null).
  const o = Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined && v !== null));
  for (const key of Object.keys(o)) {
    if (!fields.includes(key)) throw new PolicyConfigError(`${at}.${key}`, `is not a field here (${fields.join(', ')})`);
  }
  return o;
}

function toRecord(c: LdapConfig, kind: PolicyKind): Record<string, unknown> {
  const out: Record<string, unknown> = {
    urls: [...c.urls],
    startTls: c.startTls,
    tls: c.tls === null ? null : { ...c.tls },
    connectTimeout: c.connectTimeout,
    timeout: c.timeout,
    poolSize: c.poolSize,
    service: c.service === null ? null : { ...c.service },
    mode: c.mode,
  };
  if (c.mode === 'bind') out.userDn = c.userDn;
  else Object.assign(out, { base: c.user!.base, filter: c.user!.filter, scope: c.user!.scope });
  out.groups = c.groups === null ? null : c.groups.kind === 'attribute' ? { attribute: c.groups.attribute } : { base: c.groups.base, filter: c.groups.filter, scope: c.groups.scope };
  if (kind === 'auth') {
    if (c.superuserAttribute !== undefined) out.superuserAttribute = c.superuserAttribute;
    out.superuserGroups = [...c.superuserGroups];
  } else {
    out.groupRules = c.groupRules.map((g) => ({ group: g.group, rules: g.rules.map((r) => ({ ...r })) }));
    out.groupCacheTtl = c.groupCacheTtl;
    out.groupCacheSize = c.groupCacheSize;
  }
  return out;
}
