// Authentication and ACL policies (spec 4.7): add (checked against its source first), query
// (paged, in chain order, credentials never shown), delete, and our additions update and test
// (the whole chain's answer for sample credentials or a topic); the password strategies (listed,
// or a hash made with one) and the salt types. A change applies at once on every worker
// (PolicyManager).
import { randomBytes } from 'node:crypto';

import { Type, type Static } from '@sinclair/typebox';

import { invalid } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { json, ok, paged, type Route } from '../http.ts';
import { byType, PAGING, pageOf, route, strict } from '../schema.ts';
import { choice } from '../../schema/check.ts';
import type { PolicyKind, PolicyManager } from '../../policies/manager.ts';
import { ACL_POLICY_TYPES, AUTH_POLICY_TYPES } from '../../policies/types.ts';
import { POLICY_CONFIG_SCHEMAS } from '../../policies/config-schemas.ts';
import { hashWithStrategy, PBKDF2_DIGESTS, SALT_TYPES, STRATEGIES, type Strategy, type StrategyOptions } from '../../auth/strategies/password-strategy.ts';
import { topicFilterProblem, topicNameProblem } from '../../auth/topic-filter.ts';

const PASSWORD_MAX = 4096;

/** The parameters each strategy takes, for clients building a form. */
const STRATEGY_INFO: Record<Strategy, { salted: boolean; params: string[]; description: string }> = {
  plain: { salted: true, params: ['saltType'], description: 'the (salted) password itself, compared exactly' },
  md5: { salted: true, params: ['saltType'], description: 'hex MD5 of the salted password' },
  sha1: { salted: true, params: ['saltType'], description: 'hex SHA-1 of the salted password' },
  sha256: { salted: true, params: ['saltType'], description: 'hex SHA-256 of the salted password' },
  sha512: { salted: true, params: ['saltType'], description: 'hex SHA-512 of the salted password' },
  bcrypt: { salted: false, params: ['cost'], description: 'a bcrypt hash ($2b$...), salt inside' },
  pbkdf2: { salted: true, params: ['iterations', 'digest', 'keyLength'], description: 'hex PBKDF2 of the password with the stored salt' },
  argon2: { salted: false, params: [], description: 'an argon2id hash ($argon2id$...), salt inside' },
};

/** The fields of an add or an update (its `id` aside); config and each type's fields are the
 * policy manager's to check (a policy of the configuration file goes through it too). */
function policyFields(types: readonly string[]) {
  return {
    name: Type.String({ minLength: 1, maxLength: 128 }),
    type: choice(types),
    config: Type.Record(Type.String(), Type.Unknown(), { description: 'the fields of the type (README, Policies); checked against its source unless dryRun is false' }),
    enabled: Type.Optional(Type.Boolean()),
    order: Type.Optional(Type.Integer({ description: 'place in the chain' })),
    dryRun: Type.Optional(Type.Boolean({ default: true, description: 'check the policy against its source first' })),
  };
}

/** The fields of an add besides type and config. */
function otherFields() {
  const { type: _type, config: _config, ...rest } = policyFields([]);
  return rest;
}

const policyObject = (types: readonly string[]) => Type.Object(policyFields(types), strict);

const CLIENTID = Type.String({ minLength: 1, maxLength: 65535 });
const OPTIONAL_TEXT = Type.Optional(Type.String({ maxLength: 65535 }));
const PEERHOST = Type.Optional(Type.String({ maxLength: 64, default: '127.0.0.1' }));

function crudRoutes(kind: PolicyKind, policies: PolicyManager): Route[] {
  const base = `/${kind}`;
  const what = kind === 'auth' ? 'authentication policy' : 'ACL policy';
  const types: readonly string[] = kind === 'auth' ? AUTH_POLICY_TYPES : ACL_POLICY_TYPES;
  const tag = kind === 'auth' ? 'auth-policies' : 'acl-policies';
  return [
    route({
      method: 'POST',
      path: `${base}/add`,
      access: 'write',
      tag,
      summary: kind === 'auth'
        ? `Add an ${what} (${types.join(', ')}), checked against its source unless dryRun is false; applied at once on every worker; answers the JSON string "success"`
        : `Add an ${what} (${types.join(', ')}), checked against its source unless dryRun is false; applied at once on every worker`,
      // One shape per type, with that type's config (policies/config-schemas.ts).
      body: byType<Static<ReturnType<typeof policyObject>>>(otherFields(), POLICY_CONFIG_SCHEMAS[kind]),
      async handler(req) {
        const { dryRun = true, ...input } = req.body;
        const record = await policies.add(kind, input, { dryRun });
        // The spec answers the JSON string "success" for /auth/add.
        return kind === 'auth' ? json('success') : ok(record);
      },
    }),
    route({
      method: 'POST',
      path: `${base}/query`,
      access: 'read',
      readOnly: true,
      tag,
      summary: `The ${what}s in chain order, paged, optionally by type or name (credentials never shown), with how each answered`,
      body: Type.Object({ ...PAGING, type: Type.Optional(choice(types)), name: Type.Optional(Type.String({ description: 'a substring of the name' })), id: Type.Optional(Type.String()) }, strict),
      handler(req) {
        const { page, size } = pageOf(req.body);
        const { type, name, id } = req.body;
        const all = policies.list(kind, { type, name }).filter((p) => id === undefined || p.id === id);
        return paged(all, page, size);
      },
    }),
    route({
      method: 'POST',
      path: `${base}/delete`,
      access: 'write',
      tag,
      summary: `Delete an ${what} (applied at once; the workers' cached answers are dropped)`,
      body: Type.Object({ id: Type.String({ minLength: 1 }) }, strict),
      async handler(req) {
        await policies.delete(kind, req.body.id);
        return ok({ id: req.body.id });
      },
    }),
    route({
      method: 'POST',
      path: `${base}/update`,
      access: 'write',
      tag,
      summary: `Change an ${what}: name, config (checked like an add's), enabled, order (addition)`,
      body: Type.Object({ id: Type.String({ minLength: 1 }), ...Type.Partial(Type.Object(policyFields(types))).properties }, strict),
      async handler(req) {
        const { id, dryRun = true, ...input } = req.body;
        return ok(await policies.update(kind, id, input, { dryRun }));
      },
    }),
  ];
}

export function policyRoutes(ctx: AdminContext): Route[] {
  const policies = ctx.policies;
  return [
    ...crudRoutes('auth', policies),
    route({
      method: 'POST',
      path: '/auth/test',
      access: 'write',
      readOnly: true,
      tag: 'auth-policies',
      summary: 'The authentication chain\'s answer for sample credentials: allow (superuser, acl), deny, or ignore (the static users decide) (addition)',
      body: Type.Object({ clientid: CLIENTID, username: OPTIONAL_TEXT, password: OPTIONAL_TEXT, peerhost: PEERHOST }, strict),
      async handler(req) {
        const { clientid, username, password, peerhost = '127.0.0.1' } = req.body;
        const r = await policies.authenticate({ clientid, username, password: password === undefined ? undefined : Buffer.from(password, 'utf8'), peerhost });
        return ok({ ...r.answer, cacheable: r.cacheable });
      },
    }),
    route({
      method: 'POST',
      path: '/auth/password/encrypt',
      access: 'read',
      readOnly: true,
      tag: 'auth-policies',
      summary: 'The password strategies with their parameters; with {strategy, password, salt?, saltType?, ...} the hash to store for it',
      body: Type.Object(
        {
          strategy: Type.Optional(choice(STRATEGIES)),
          password: Type.Optional(Type.String({ minLength: 1, maxLength: PASSWORD_MAX })),
          salt: Type.Optional(Type.String({ maxLength: 1024, description: 'default: 8 random bytes, hex' })),
          saltType: Type.Optional(choice(SALT_TYPES)),
          iterations: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000, description: 'pbkdf2 (default 10000)' })),
          digest: Type.Optional(choice(PBKDF2_DIGESTS, { description: 'pbkdf2 (default sha256)' })),
          keyLength: Type.Optional(Type.Integer({ minimum: 1, maximum: 1024, description: 'pbkdf2 (default: the digest length)' })),
          cost: Type.Optional(Type.Integer({ minimum: 4, maximum: 16, description: 'bcrypt (default 10)' })),
        },
        strict,
      ),
      async handler(req) {
        const b = req.body;
        // Nothing asked: the list of strategies; else both a strategy and a password.
        if (b.strategy === undefined && b.password === undefined) {
          return ok(STRATEGIES.map((s) => ({ strategy: s, ...STRATEGY_INFO[s] })));
        }
        if (b.strategy === undefined) throw invalid('strategy', 'is required');
        if (b.password === undefined) throw invalid('password', 'is required');
        const { strategy, password } = b;
        const info = STRATEGY_INFO[strategy];
        const saltType = info.salted ? (b.saltType ?? (strategy === 'pbkdf2' ? 'prefix' : 'disable')) : 'disable';
        const salt = info.salted && (saltType !== 'disable' || strategy === 'pbkdf2') ? (b.salt ?? randomBytes(8).toString('hex')) : '';
        const opts: StrategyOptions = { strategy, saltType };
        if (strategy === 'pbkdf2') {
          const digest = b.digest ?? 'sha256';
          opts.pbkdf2 = { iterations: b.iterations ?? 10_000, digest, keyLength: b.keyLength ?? { sha1: 20, sha256: 32, sha512: 64 }[digest] };
        }
        if (strategy === 'bcrypt') opts.bcryptCost = b.cost ?? 10;
        const hash = await hashWithStrategy(opts, password, salt);
        return ok({ strategy, saltType, salt, hash, ...(opts.pbkdf2 ? { iterations: opts.pbkdf2.iterations, digest: opts.pbkdf2.digest, keyLength: opts.pbkdf2.keyLength } : {}) });
      },
    }),
    ...(['POST', 'GET'] as const).map((method): Route => ({
      method,
      path: '/auth/salt/type',
      access: 'read',
      tag: 'auth-policies',
      summary: 'The salt types (an array of strings): where a digest strategy puts the salt',
      handler: () => ok([...SALT_TYPES]),
    })),
    ...crudRoutes('acl', policies),
    route({
      method: 'POST',
      path: '/acl/test',
      access: 'write',
      readOnly: true,
      tag: 'acl-policies',
      summary: 'The ACL chain\'s answer for a client, action and topic: allow, deny, or ignore (the static ACL decides) (addition)',
      body: Type.Object(
        { clientid: CLIENTID, username: OPTIONAL_TEXT, peerhost: PEERHOST, action: choice(['publish', 'subscribe'] as const), topic: Type.String({ minLength: 1, maxLength: 65535 }) },
        strict,
      ),
      async handler(req) {
        const { clientid, username, peerhost = '127.0.0.1', action, topic } = req.body;
        const problem = action === 'publish' ? topicNameProblem(topic) : topicFilterProblem(topic);
        if (problem !== undefined) throw invalid('topic', problem);
        const r = await policies.authorize({ clientid, username, peerhost, action, topic });
        return ok({ ...r.answer, cacheable: r.cacheable });
      },
    }),
  ];
}
