// Owns the `http` policy type (auth and ACL, main thread), as EMQX's HTTP authentication and
// authorization: each query becomes one request to the configured endpoint (http-request.ts), sent
// through the policy's own bounded transport (http-exchange.ts), and its answer is read by
// http-answer.ts. Every failure (network, timeout, status, body) is an "ignore" with error, written
// at warn at most once per 10 s per policy with a count; nothing here throws to the caller.
import { aclAnswerOf, authAnswerOf } from './http-answer.ts';
import { isHttpsUrl, readHttpPolicyConfig } from './http-config.ts';
import { ExchangeError, HttpExchanger, type PolicyResponse } from './http-exchange.ts';
import { HttpRequestTemplate } from './http-request.ts';
import { DRY_RUN_ACL, DRY_RUN_AUTH, DRY_RUN_USERNAME } from './params.ts';
import { RateLimitedWarn } from './rate-limited-warn.ts';
import {
  PolicyConfigError,
  type AclAnswer,
  type AclQuery,
  type AuthAnswer,
  type AuthQuery,
  type CompiledAclPolicy,
  type CompiledAuthPolicy,
  type PolicyContext,
  type PolicyKind,
  type PolicyRecord,
} from './types.ts';

export { parseHttpPolicyConfig } from './http-config.ts';

/** The username the dry run sends in place of a client's. */
export const DRY_RUN_VALUE = DRY_RUN_USERNAME;

type Failure = { result: 'ignore'; reason: string; error: true };

export function compileHttpAuthPolicy(record: PolicyRecord<'http'>, ctx: PolicyContext): CompiledAuthPolicy {
  const core = new HttpPolicyCore(record, ctx, 'auth');
  return {
    id: record.id,
    name: record.name,
    type: 'http',
    params: core.template.params,
    authenticate: (q: AuthQuery): Promise<AuthAnswer> => core.ask(q, authAnswerOf),
    dryRun: () => core.dryRun(DRY_RUN_AUTH),
    close: async () => core.close(),
  };
}

export function compileHttpAclPolicy(record: PolicyRecord<'http'>, ctx: PolicyContext): CompiledAclPolicy {
  const core = new HttpPolicyCore(record, ctx, 'acl');
  return {
    id: record.id,
    name: record.name,
    type: 'http',
    params: core.template.params,
    authorize: async (q: AclQuery): Promise<AclAnswer> => readScoped(q, await core.ask(q, aclAnswerOf)),
    dryRun: () => core.dryRun(DRY_RUN_ACL),
    close: async () => core.close(),
  };
}

/** What the auth and the ACL policy share: the request template, the transport, the warnings. */
class HttpPolicyCore {
  readonly template: HttpRequestTemplate;
  private readonly exchanger: HttpExchanger;
  private readonly warning: RateLimitedWarn;

  constructor(record: PolicyRecord<'http'>, ctx: PolicyContext, kind: PolicyKind) {
    const config = readHttpPolicyConfig(record.config, kind);
    this.template = new HttpRequestTemplate(config, kind);
    this.exchanger = new HttpExchanger(isHttpsUrl(config.url), config.tls, config.timeout);
    const log = ctx.log.child({ policy: record.name, policyId: record.id, type: 'http', kind });
    this.warning = new RateLimitedWarn(log);
  }

  /** The endpoint's answer read by `read`; any failure is an ignore with error, logged. */
  async ask<A extends AuthAnswer | AclAnswer>(q: AuthQuery | AclQuery, read: (res: PolicyResponse) => A): Promise<A | Failure> {
    let answer: A | Failure;
    try {
      answer = read(await this.exchanger.send(this.template.build(q)));
    } catch (err) {
      answer = { result: 'ignore', reason: `http: ${err instanceof Error ? err.message : String(err)}`, error: true };
    }
    if (answer.result === 'ignore' && answer.error === true) this.warning.warn('http policy: the HTTP service gave no usable answer (the client was ignored)', { reason: answer.reason });
    return answer;
  }

  /** Passes on any HTTP answer (even 4xx/5xx): the dry run checks the endpoint is reachable. */
  async dryRun(sample: AuthQuery | AclQuery): Promise<void> {
    const req = this.template.build(sample);
    try {
      await this.exchanger.send(req);
    } catch (err) {
      if (err instanceof ExchangeError && err.kind === 'too-large') return;
      const detail = err instanceof Error ? err.message : String(err);
      throw new PolicyConfigError('config.url', `cannot reach ${req.url.origin}: ${detail}`);
    }
  }

  close(): void {
    this.exchanger.close();
  }
}

/** An HTTP service answers for the filter it was shown, not for each topic the filter can match:
 * a wildcard subscription it allows (or ignores) is checked per delivered topic, each asked of the
 * service as a subscribe to that topic name (auth/acl-scope.ts), as Mosquitto's auth plugins are
 * asked for read access. */
function readScoped(q: AclQuery, answer: AclAnswer): AclAnswer {
  if (q.action !== 'subscribe' || answer.result === 'deny' || !/(^|\/)[+#](\/|$)/.test(q.topic)) return answer;
  return { ...answer, overlaps: answer.result === 'allow' ? { allow: false, deny: true } : { allow: true, deny: true } };
}
