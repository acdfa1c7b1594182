// Authentication and ACL policies (spec 4.7): add (checked against its source first), query
// (paged, in chain order, credentials never shown), delete, and our additions update and test
// (the whole chain's answer for sample credentials or a topic); the password strategies (listed,
// or a hash made with one) and the salt types. A change applies at once on every worker
// (PolicyManager).
import { randomBytes } from 'node:crypto';

import { invalid } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { json, ok, paged, type Route } from '../http.ts';
import { bool, int, object, oneOf, onlyFields, paging, reqStr, str, type Body } from '../validate.ts';
import type { PolicyKind, PolicyManager } from '../../policies/manager.ts';
import { ACL_POLICY_TYPES, AUTH_POLICY_TYPES } from '../../policies/types.ts';
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

function policyBody(b: Body, withId: boolean): { id?: string; input: Record<string, unknown>; dryRun: boolean } {
  onlyFields(b, withId ? ['id', 'name', 'type', 'config', 'enabled', 'order', 'dryRun'] : ['name', 'type', 'config', 'enabled', 'order', 'dryRun']);
  const id = withId ? reqStr(b, 'id') : undefined;
  if (!withId) {
    reqStr(b, 'name', { max: 128 });
    reqStr(b, 'type');
  }
  if (b.config !== undefined) object(b.config, 'config');
  else if (!withId) throw invalid('config', 'is required (an object)');
  const dryRun = bool(b, 'dryRun') ?? true;
  return { id, input: { name: b.name, type: b.type, config: b.config, enabled: b.enabled, order: b.order }, dryRun };
}

function crudRoutes(kind: PolicyKind, policies: PolicyManager): Route[] {
  const base = `/${kind}`;
  const what = kind === 'auth' ? 'authentication policy' : 'ACL policy';
  const types: readonly string[] = kind === 'auth' ? AUTH_POLICY_TYPES : ACL_POLICY_TYPES;
  const tag = kind === 'auth' ? 'auth-policies' : 'acl-policies';
  return [
    {
      method: 'POST',
      path: `${base}/add`,
      access: 'write',
      tag,
      summary: kind === 'auth'
        ? `Add an ${what} (${types.join(', ')}), checked against its source unless dryRun is false; applied at once on every worker; answers the JSON string "success"`
        : `Add an ${what} (${types.join(', ')}), checked against its source unless dryRun is false; applied at once on every worker`,
      body: { type: 'object', required: ['name', 'type', 'config'], properties: { name: { type: 'string' }, type: { enum: types }, config: { type: 'object' }, enabled: { type: 'boolean' }, order: { type: 'integer' }, dryRun: { type: 'boolean' } } },
      async handler(req) {
        const { input, dryRun } = policyBody(object(req.body), false);
        const record = await policies.add(kind, input, { dryRun });
        // The spec answers the JSON string "success" for /auth/add.
        return kind === 'auth' ? json('success') : ok(record);
      },
    },
    {
      method: 'POST',
      path: `${base}/query`,
      access: 'read',
      readOnly: true,
      tag,
      summary: `The ${what}s in chain order, paged, optionally by type or name (credentials never shown), with how each answered`,
      body: { type: 'object', properties: { page: { type: 'integer' }, size: { type: 'integer' }, type: { enum: types }, name: { type: 'string' }, id: { type: 'string' } } },
      handler(req) {
        const b = object(req.body);
        onlyFields(b, ['page', 'size', 'type', 'name', 'id']);
        const { page, size } = paging(b);
        const type = oneOf(b, 'type', types);
        const name = str(b, 'name');
        const id = str(b, 'id');
        const all = policies.list(kind, { type, name }).filter((p) => id === undefined || p.id === id);
        return paged(all, page, size);
      },
    },
    {
      method: 'POST',
      path: `${base}/delete`,
      access: 'write',
      tag,
      summary: `Delete an ${what} (applied at once; the workers' cached answers are dropped)`,
      body: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['id']);
        const id = reqStr(b, 'id');
        await policies.delete(kind, id);
        return ok({ id });
      },
    },
    {
      method: 'POST',
      path: `${base}/update`,
      access: 'write',
      tag,
      summary: `Change an ${what}: name, config (checked like an add's), enabled, order (addition)`,
      body: { type: 'object', required: ['id'], properties: { id: { type: 'string' }, name: { type: 'string' }, type: { enum: types }, config: { type: 'object' }, enabled: { type: 'boolean' }, order: { type: 'integer' }, dryRun: { type: 'boolean' } } },
      async handler(req) {
        const { id, input, dryRun } = policyBody(object(req.body), true);
        return ok(await policies.update(kind, id!, input, { dryRun }));
      },
    },
  ];
}

export function policyRoutes(ctx: AdminContext): Route[] {
  const policies = ctx.policies;
  return [
    ...crudRoutes('auth', policies),
    {
      method: 'POST',
      path: '/auth/test',
      access: 'write',
      readOnly: true,
      tag: 'auth-policies',
      summary: 'The authentication chain\'s answer for sample credentials: allow (superuser, acl), deny, or ignore (the static users decide) (addition)',
      body: { type: 'object', required: ['clientid'], properties: { clientid: { type: 'string' }, username: { type: 'string' }, password: { type: 'string' }, peerhost: { type: 'string' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['clientid', 'username', 'password', 'peerhost']);
        const clientid = reqStr(b, 'clientid', { max: 65535 });
        const username = str(b, 'username', { max: 65535 });
        const password = str(b, 'password', { max: 65535 });
        const peerhost = str(b, 'peerhost', { max: 64 }) ?? '127.0.0.1';
        const r = await policies.authenticate({ clientid, username, password: password === undefined ? undefined : Buffer.from(password, 'utf8'), peerhost });
        return ok({ ...r.answer, cacheable: r.cacheable });
      },
    },
    {
      method: 'POST',
      path: '/auth/password/encrypt',
      access: 'read',
      readOnly: true,
      tag: 'auth-policies',
      summary: 'The password strategies with their parameters; with {strategy, password, salt?, saltType?, ...} the hash to store for it',
      body: { type: 'object', properties: { strategy: { enum: STRATEGIES }, password: { type: 'string' }, salt: { type: 'string' }, saltType: { enum: SALT_TYPES }, iterations: { type: 'integer' }, digest: { enum: PBKDF2_DIGESTS }, keyLength: { type: 'integer' }, cost: { type: 'integer' } } },
      async handler(req) {
        const b = req.body === undefined || req.body === null ? {} : object(req.body);
        onlyFields(b, ['strategy', 'password', 'salt', 'saltType', 'iterations', 'digest', 'keyLength', 'cost']);
        if (b.strategy === undefined && b.password === undefined) {
          return ok(STRATEGIES.map((s) => ({ strategy: s, ...STRATEGY_INFO[s] })));
        }
        const strategy = oneOf(b, 'strategy', STRATEGIES, { required: true })!;
        const password = reqStr(b, 'password', { max: PASSWORD_MAX });
        const info = STRATEGY_INFO[strategy];
        const saltType = info.salted ? (oneOf(b, 'saltType', SALT_TYPES) ?? (strategy === 'pbkdf2' ? 'prefix' : 'disable')) : 'disable';
        const salt = info.salted && (saltType !== 'disable' || strategy === 'pbkdf2') ? (str(b, 'salt', { max: 1024 }) ?? randomBytes(8).toString('hex')) : '';
        const opts: StrategyOptions = { strategy, saltType };
        if (strategy === 'pbkdf2') {
          const digest = oneOf(b, 'digest', PBKDF2_DIGESTS) ?? 'sha256';
          opts.pbkdf2 = { iterations: int(b, 'iterations', 1, 10_000_000) ?? 10_000, digest, keyLength: int(b, 'keyLength', 1, 1024) ?? { sha1: 20, sha256: 32, sha512: 64 }[digest] };
        }
        if (strategy === 'bcrypt') opts.bcryptCost = int(b, 'cost', 4, 16) ?? 10;
        const hash = await hashWithStrategy(opts, password, salt);
        return ok({ strategy, saltType, salt, hash, ...(opts.pbkdf2 ? { iterations: opts.pbkdf2.iterations, digest: opts.pbkdf2.digest, keyLength: opts.pbkdf2.keyLength } : {}) });
      },
    },
    ...(['POST', 'GET'] as const).map((method): Route => ({
      method,
      path: '/auth/salt/type',
      access: 'read',
      tag: 'auth-policies',
      summary: 'The salt types (an array of strings): where a digest strategy puts the salt',
      handler: () => ok([...SALT_TYPES]),
    })),
    ...crudRoutes('acl', policies),
    {
      method: 'POST',
      path: '/acl/test',
      access: 'write',
      readOnly: true,
      tag: 'acl-policies',
      summary: 'The ACL chain\'s answer for a client, action and topic: allow, deny, or ignore (the static ACL decides) (addition)',
      body: { type: 'object', required: ['clientid', 'action', 'topic'], properties: { clientid: { type: 'string' }, username: { type: 'string' }, peerhost: { type: 'string' }, action: { enum: ['publish', 'subscribe'] }, topic: { type: 'string' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['clientid', 'username', 'peerhost', 'action', 'topic']);
        const clientid = reqStr(b, 'clientid', { max: 65535 });
        const username = str(b, 'username', { max: 65535 });
        const peerhost = str(b, 'peerhost', { max: 64 }) ?? '127.0.0.1';
        const action = oneOf(b, 'action', ['publish', 'subscribe'] as const, { required: true })!;
        const topic = reqStr(b, 'topic', { max: 65535 });
        const problem = action === 'publish' ? topicNameProblem(topic) : topicFilterProblem(topic);
        if (problem !== undefined) throw invalid('topic', problem);
        const r = await policies.authorize({ clientid, username, peerhost, action, topic });
        return ok({ ...r.answer, cacheable: r.cacheable });
      },
    },
  ];
}
