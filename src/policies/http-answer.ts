// Owns reading what an `http` policy's endpoint answered, as EMQX's HTTP authentication and
// authorization define it: 204 is allow (not a superuser); 200 carries {"result": "allow" | "deny" |
// "ignore", "is_superuser": ...} as JSON (or as a form when its content-type says so); any other
// status, or a 200 whose body is not such an object, is a failure: ignore with error, never allow.
// is_superuser takes EMQX's spellings (superuser-flag.ts); another value makes the answer a failure.
import { isFormType } from './http-config.ts';
import type { PolicyResponse } from './http-exchange.ts';
import { superuserOf } from './superuser-flag.ts';
import type { AclAnswer, AuthAnswer } from './types.ts';

type Failure = { result: 'ignore'; reason: string; error: true };
type Decision = { result: 'allow' | 'deny' | 'ignore'; fields: Record<string, unknown> } | Failure;

const RESULTS = new Set(['allow', 'deny', 'ignore']);

export function authAnswerOf(res: PolicyResponse): AuthAnswer {
  const d = decisionOf(res);
  if ('error' in d) return d;
  if (d.result === 'deny') return { result: 'deny', reason: 'the HTTP service denied' };
  if (d.result === 'ignore') return { result: 'ignore', reason: 'the HTTP service ignored the client' };
  const superuser = superuserOf(d.fields.is_superuser);
  if (superuser === undefined) return failure(res, `is_superuser is ${JSON.stringify(d.fields.is_superuser)} (want true or false)`);
  return { result: 'allow', superuser };
}

export function aclAnswerOf(res: PolicyResponse): AclAnswer {
  const d = decisionOf(res);
  if ('error' in d) return d;
  if (d.result === 'ignore') return { result: 'ignore', reason: 'the HTTP service ignored the request' };
  return { result: d.result };
}

function decisionOf(res: PolicyResponse): Decision {
  if (res.status === 204) return { result: 'allow', fields: {} };
  if (res.status !== 200) return failure(res, `HTTP ${res.status} (want 200 or 204)`);
  const fields = bodyFields(res);
  if (fields === undefined) return failure(res, 'the body of the 200 is not a JSON object');
  const result = fields.result;
  if (typeof result !== 'string' || !RESULTS.has(result)) return failure(res, `"result" is ${JSON.stringify(result) ?? 'absent'} (want "allow", "deny" or "ignore")`);
  return { result: result as 'allow' | 'deny' | 'ignore', fields };
}

function bodyFields(res: PolicyResponse): Record<string, unknown> | undefined {
  if (isFormType(res.contentType ?? '')) return Object.fromEntries(new URLSearchParams(res.body));
  let parsed: unknown;
  try {
    parsed = JSON.parse(res.body);
  } catch {
    return undefined;
  }
  return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
}

function failure(res: PolicyResponse, why: string): Failure {
  const excerpt = res.body.length > 0 ? `: ${res.body.slice(0, 100)}` : '';
  return { result: 'ignore', reason: `bad answer from the HTTP service: ${why}${excerpt}`, error: true };
}
