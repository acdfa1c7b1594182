// The control platform's applications as the first authentication policy of the chain (main
// thread): an app key with its secret is allowed, confined to its namespace (ACL rules carried with
// the answer, checked on every worker before any other ACL) and counted in its tenant slots (the
// licence's limits); a wrong secret or a disabled application is denied; any other username is not
// this policy's (ignore: the next policy or the static users decide). A licence's clientRateLimit
// comes with the answer: each client of the application is throttled past it.
import type { AuthAnswer, AuthQuery, CompiledAuthPolicy, PolicyParam } from '../policies/types.ts';
import type { TenantDirectory } from './tenants.ts';
import type { RateLimit } from '../broker/rate-limit.ts';

export const TENANT_POLICY_ID = 'platform-applications';

export function tenantPolicy(tenants: TenantDirectory, clientRateLimit: (organizationId: string, applicationId: string) => RateLimit | null = () => null): CompiledAuthPolicy {
  const params: ReadonlySet<PolicyParam> = new Set<PolicyParam>(['username']);
  return {
    id: TENANT_POLICY_ID,
    name: 'control platform applications',
    type: 'platform',
    params,
    async authenticate(q: AuthQuery): Promise<AuthAnswer> {
      const check = tenants.authenticate(q.username, q.password);
      if (check.result === 'unknown') return { result: 'ignore' };
      if (check.result === 'deny') return { result: 'deny', reason: check.reason };
      const app = check.application;
      const appSlot = tenants.slots.of(app.id);
      const orgSlot = tenants.slots.of(app.organizationId);
      if (!appSlot || !orgSlot) return { result: 'deny', reason: 'application has no tenant slot' };
      const rateLimit = clientRateLimit(app.organizationId, app.id);
      return {
        ...(rateLimit ? { rateLimit } : {}),
        result: 'allow',
        superuser: false,
        acl: [
          { permission: 'allow', action: 'all', topic: `${app.namespace}/#` },
          { permission: 'deny', action: 'all', topic: '#' },
          // '#' does not cover topics starting with $ [MQTT-4.7.2-1]: the broker's own, denied too.
          { permission: 'deny', action: 'all', topic: '$SYS/#' },
        ],
        tenant: {
          applicationId: app.id, organizationId: app.organizationId,
          appSlot: appSlot.slot, appEpoch: appSlot.epoch, orgSlot: orgSlot.slot, orgEpoch: orgSlot.epoch,
        },
      };
    },
    dryRun: async () => {},
    close: async () => {},
  };
}
