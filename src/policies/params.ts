// Owns the `${name}` parameters of policy queries, URLs and bodies: which names a text uses (an
// unknown name is a config error naming the field), and their values for one query. A value is
// always passed as a value (an SQL parameter, a Redis argument, a JSON string), never spliced into
// query text: fill() is for places where the whole text is a value (an HTTP body field, a Redis
// key, a URL query parameter, encoded by the caller).
import { PolicyConfigError, type AclQuery, type AuthQuery, type PolicyKind, type PolicyParam } from './types.ts';

export const PARAM = /\$\{([^}]*)\}/g;

export const AUTH_PARAMS: readonly PolicyParam[] = ['username', 'clientid', 'peerhost', 'password', 'sni', 'cert_common_name'];
export const ACL_PARAMS: readonly PolicyParam[] = ['username', 'clientid', 'peerhost', 'topic', 'action'];

/** The username of the sample questions a policy is dry-run with when it is added. */
export const DRY_RUN_USERNAME = '__spindle_dry_run__';
export const DRY_RUN_AUTH: AuthQuery = { clientid: 'dry-run', username: DRY_RUN_USERNAME, peerhost: '127.0.0.1', password: Buffer.alloc(0) };
export const DRY_RUN_ACL: AclQuery = { clientid: 'dry-run', username: DRY_RUN_USERNAME, peerhost: '127.0.0.1', topic: 'dry/run', action: 'publish' };

/** The parameters a policy of `kind` may use: AUTH_PARAMS or ACL_PARAMS. */
export function allowedParams(kind: PolicyKind): readonly PolicyParam[] {
  return kind === 'auth' ? AUTH_PARAMS : ACL_PARAMS;
}

/** The parameters `text` uses; throws PolicyConfigError(field) for a name not in `allowed`. */
export function paramsOf(text: string, allowed: readonly PolicyParam[], field: string): Set<PolicyParam> {
  const used = new Set<PolicyParam>();
  for (const m of text.matchAll(PARAM)) {
    const name = m[1] as PolicyParam;
    if (!allowed.includes(name)) {
      throw new PolicyConfigError(field, `unknown parameter \${${m[1]}} (one of ${allowed.map((a) => `\${${a}}`).join(', ')})`);
    }
    used.add(name);
  }
  return used;
}

/** The value of one parameter for a query; undefined when the client did not give it (no username). */
export function paramValue(name: PolicyParam, q: AuthQuery | AclQuery): string | undefined {
  switch (name) {
    case 'username':
      return q.username;
    case 'clientid':
      return q.clientid;
    case 'peerhost':
      return q.peerhost;
    case 'password':
      return 'password' in q ? q.password?.toString('utf8') : undefined;
    case 'topic':
      return 'topic' in q ? q.topic : undefined;
    case 'action':
      return 'action' in q ? q.action : undefined;
    case 'sni':
      return 'sni' in q ? q.sni : undefined;
    case 'cert_common_name':
      return 'certCommonName' in q ? q.certCommonName : undefined;
  }
}

/** `text` with every `${name}` replaced by its value ('' when absent). */
export function fill(text: string, q: AuthQuery | AclQuery): string {
  return text.replace(PARAM, (_, name: string) => paramValue(name as PolicyParam, q) ?? '');
}
