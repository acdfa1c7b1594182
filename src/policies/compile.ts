// Owns the table of policy types: per kind and type, how a raw config is checked and normalized
// (a PolicyConfigError names the field) and how a stored record becomes a running policy.
import { parseDatabaseAclConfig, parseDatabaseAuthConfig } from './database-config.ts';
import { compileDatabaseAclPolicy, compileDatabaseAuthPolicy } from './database.ts';
import { compileHttpAclPolicy, compileHttpAuthPolicy, parseHttpPolicyConfig } from './http.ts';
import { compileJwtAuthPolicy, parseJwtPolicyConfig } from './jwt.ts';
import { compileLdapAclPolicy, compileLdapAuthPolicy, parseLdapPolicyConfig } from './ldap.ts';
import type { AclPolicyType, AuthPolicyType, CompiledAclPolicy, CompiledAuthPolicy, PolicyContext, PolicyRecord } from './types.ts';

export interface PolicyCompiler<P> {
  parse(raw: unknown): Record<string, unknown>;
  compile(record: PolicyRecord, ctx: PolicyContext): P;
}

export const AUTH_COMPILERS: Record<AuthPolicyType, PolicyCompiler<CompiledAuthPolicy>> = {
  database: { parse: parseDatabaseAuthConfig, compile: (r, ctx) => compileDatabaseAuthPolicy(r as PolicyRecord<'database'>, ctx) },
  http: { parse: (raw) => parseHttpPolicyConfig(raw, 'auth'), compile: (r, ctx) => compileHttpAuthPolicy(r as PolicyRecord<'http'>, ctx) },
  jwt: { parse: parseJwtPolicyConfig, compile: (r, ctx) => compileJwtAuthPolicy(r as PolicyRecord<'jwt'>, ctx) },
  ldap: { parse: (raw) => parseLdapPolicyConfig(raw, 'auth'), compile: (r, ctx) => compileLdapAuthPolicy(r as PolicyRecord<'ldap'>, ctx) },
};

export const ACL_COMPILERS: Record<AclPolicyType, PolicyCompiler<CompiledAclPolicy>> = {
  database: { parse: parseDatabaseAclConfig, compile: (r, ctx) => compileDatabaseAclPolicy(r as PolicyRecord<'database'>, ctx) },
  http: { parse: (raw) => parseHttpPolicyConfig(raw, 'acl'), compile: (r, ctx) => compileHttpAclPolicy(r as PolicyRecord<'http'>, ctx) },
  ldap: { parse: (raw) => parseLdapPolicyConfig(raw, 'acl'), compile: (r, ctx) => compileLdapAclPolicy(r as PolicyRecord<'ldap'>, ctx) },
};
