// Owns the value checks of configuration keys: each checker says how an environment variable is
// coerced (its kind), describes the accepted values, and returns the problem with a value, or
// the cleaned value when it is acceptable. A checker's type parameter is the type of that cleaned
// value: the type of its key in BrokerConfig (types.ts) is read from it.
import { RATE_LIMIT_RANGES, rateLimitProblem, type RateLimit } from '../broker/rate-limit.ts';
import { trustedProblem } from '../broker/proxy-protocol.ts';
import { aclPatternProblem } from '../auth/acl-pattern.ts';
import { topicFilterProblem } from '../auth/topic-filter.ts';
import { passwordHashProblem } from '../auth/password.ts';
import { parseBridgeConfig, type BridgeConfig } from '../bridges/bridge-config.ts';
import { BridgeConfigError } from '../bridges/errors.ts';
import { checkRewriteRules, type RewriteRule } from '../features/rewrite/rules.ts';
import { DomainError } from '../errors/domain-error.ts';

/** How an environment variable's text becomes a value. */
export type EnvKind = 'string' | 'number' | 'boolean' | 'json';

/** A problem with a value: `at` is a path below the key ("[2].topic") or '' for the value itself. */
export interface Problem {
  at: string;
  message: string;
}

export interface Rejected {
  ok: false;
  problem: Problem;
}

export type CheckResult<T = unknown> = { ok: true; value: T } | Rejected;

/** Checks a value of unknown type; accepted, it is a T. */
export interface Checker<T = unknown> {
  kind: EnvKind;
  check(value: unknown): CheckResult<T>;
}

/** The type of the values `C` accepts: CheckedBy<Checker<number>> is number. */
export type CheckedBy<C> = C extends Checker<infer T> ? T : never;

export interface UserEntry {
  username: string;
  /** An argon2 or bcrypt hash. */
  password: string;
  /** The user's own inbound rate limit, over its endpoint's (src/broker/rate-limit.ts). */
  rateLimit?: RateLimit;
}

export interface AclEntry {
  permission: 'allow' | 'deny';
  action: 'publish' | 'subscribe' | 'pubsub';
  /** A topic filter; %c and %u inside a level stand for the client id and the username. */
  topic: string;
  username?: string;
  clientId?: string;
}

function accept<T>(value: T): CheckResult<T> {
  return { ok: true, value };
}

function reject(message: string, at = ''): Rejected {
  return { ok: false, problem: { at, message } };
}

/** A value as written in a message: JSON, cut short when long. */
export function shown(value: unknown): string {
  const text = value === undefined ? 'nothing' : JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

export function integer(min: number, max: number): Checker<number> {
  return {
    kind: 'number',
    check(value) {
      if (typeof value !== 'number' || !Number.isInteger(value)) return reject(`expected an integer, got ${shown(value)}`);
      if (value < min || value > max) return reject(`expected an integer in ${min}..${max}, got ${value}`);
      return accept(value);
    },
  };
}

/** A number in 0..1 (a ratio). */
export function fraction(): Checker<number> {
  return {
    kind: 'number',
    check(value) {
      if (typeof value !== 'number' || !Number.isFinite(value)) return reject(`expected a number, got ${shown(value)}`);
      if (value < 0 || value > 1) return reject(`expected a number in 0..1, got ${value}`);
      return accept(value);
    },
  };
}

/** A TCP port; 0 asks the system for any free port (tests). */
export function port(): Checker<number> {
  return integer(0, 65535);
}

export function boolean(): Checker<boolean> {
  return {
    kind: 'boolean',
    check(value) {
      return typeof value === 'boolean' ? accept(value) : reject(`expected true or false, got ${shown(value)}`);
    },
  };
}

export function string(options: { nonEmpty?: boolean; pattern?: RegExp; patternText?: string } = {}): Checker<string> {
  return {
    kind: 'string',
    check(value) {
      if (typeof value !== 'string') return reject(`expected a string, got ${shown(value)}`);
      if (options.nonEmpty === true && value === '') return reject('must not be empty');
      if (options.pattern !== undefined && !options.pattern.test(value)) return reject(`${options.patternText ?? `must match ${options.pattern}`}, got ${shown(value)}`);
      return accept(value);
    },
  };
}

/** Topic filters (topicMetrics.filters): each valid, none twice. Environment: JSON. */
export function topicFilters(): Checker<string[]> {
  return {
    kind: 'json',
    check(value) {
      if (!Array.isArray(value)) return reject(`expected a list of topic filters, got ${shown(value)}`);
      const seen = new Set<string>();
      for (let i = 0; i < value.length; i++) {
        const v: unknown = value[i];
        if (typeof v !== 'string') return reject(`expected a topic filter, got ${shown(v)}`, `[${i}]`);
        const problem = topicFilterProblem(v);
        if (problem) return reject(problem, `[${i}]`);
        if (seen.has(v)) return reject(`${v} is listed twice`, `[${i}]`);
        seen.add(v);
      }
      return accept([...(value as string[])]);
    },
  };
}

/** IP addresses or CIDR blocks (the trusted balancers of PROXY protocol). Environment: JSON. */
export function cidrs(): Checker<string[]> {
  return {
    kind: 'json',
    check(value) {
      if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) return reject(`expected a list of addresses or CIDR blocks ("10.0.0.0/8"), got ${shown(value)}`);
      const problem = trustedProblem(value as string[]);
      if (problem) return reject(problem.message, problem.index === undefined ? '' : `[${problem.index}]`);
      return accept([...(value as string[])]);
    },
  };
}

/** host:port addresses (cluster routes). Environment: JSON. */
export function addresses(): Checker<string[]> {
  return {
    kind: 'json',
    check(value) {
      if (!Array.isArray(value)) return reject(`expected a list of "host:port" strings, got ${shown(value)}`);
      for (let i = 0; i < value.length; i++) {
        const v = value[i];
        if (typeof v !== 'string' || !/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/.test(v) || Number(v.slice(v.lastIndexOf(':') + 1)) > 65535) return reject(`expected "host:port", got ${shown(v)}`, `[${i}]`);
      }
      return accept([...(value as string[])]);
    },
  };
}

/** One of `choices`; its type is their union: oneOf(['pass', 'drop']) is a Checker<'pass' | 'drop'>. */
export function oneOf<const C extends readonly string[]>(choices: C): Checker<C[number]> {
  const isChoice = (value: unknown): value is C[number] => typeof value === 'string' && choices.includes(value);
  return {
    kind: 'string',
    check(value) {
      if (isChoice(value)) return accept(value);
      return reject(`expected one of ${choices.join(', ')}, got ${shown(value)}`);
    },
  };
}

/** An http:// or https:// URL, e.g. an OTLP/HTTP endpoint. */
export function httpUrl(): Checker<string> {
  return {
    kind: 'string',
    check(value) {
      if (typeof value !== 'string') return reject(`expected a URL, got ${shown(value)}`);
      let url: URL;
      try {
        url = new URL(value);
      } catch {
        return reject(`expected an http:// or https:// URL, got ${shown(value)}`);
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return reject(`expected an http:// or https:// URL, got ${shown(value)}`);
      return accept(value);
    },
  };
}

/** A mapping of names to strings (HTTP headers, resource attributes), at most `max` entries; a
 * name must match `name`, and no value may hold a line break. Environment: JSON. */
export function stringMap(options: { max: number; name: RegExp; nameText: string }): Checker<Record<string, string>> {
  return {
    kind: 'json',
    check(value) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return reject(`expected a mapping of names to strings, got ${shown(value)}`);
      const entries = Object.entries(value as Record<string, unknown>);
      if (entries.length > options.max) return reject(`expected at most ${options.max} entries, got ${entries.length}`);
      const out: Record<string, string> = {};
      for (const [k, v] of entries) {
        if (!options.name.test(k)) return reject(`${options.nameText}, got ${shown(k)}`, `.${k}`);
        if (typeof v !== 'string') return reject(`expected a string, got ${shown(v)}`, `.${k}`);
        if (/[\r\n]/.test(v)) return reject('must not hold a line break', `.${k}`);
        out[k] = v;
      }
      return accept(out);
    },
  };
}

type Checkers = Record<string, Checker>;

/** The object `record` answers for these field checkers: the optional fields may be absent. */
type Fields<R extends Checkers, O extends Checkers> = { [F in keyof R]: CheckedBy<R[F]> } & { [F in keyof O]?: CheckedBy<O[F]> };

/** Checks a plain object's fields: `required` and `optional` map names to checkers; others are refused. */
function record<R extends Checkers, O extends Checkers>(value: unknown, at: string, required: R, optional: O): CheckResult<Fields<R, O>> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return reject(`expected an object, got ${shown(value)}`, at);
  const input = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const field of Object.keys(input)) {
    if (!(field in required) && !(field in optional)) {
      const known = [...Object.keys(required), ...Object.keys(optional)].join(', ');
      return reject(`unknown field (expected ${known})`, `${at}.${field}`);
    }
  }
  for (const [field, checker] of Object.entries({ ...required, ...optional })) {
    if (input[field] === undefined) {
      if (field in required) return reject('is required', `${at}.${field}`);
      continue;
    }
    const result = checker.check(input[field]);
    if (!result.ok) return reject(result.problem.message, `${at}.${field}${result.problem.at}`);
    out[field] = result.value;
  }
  // Every required field was checked and set above, and every optional one that was given.
  return accept(out as Fields<R, O>);
}

function list<T>(item: (value: unknown, at: string) => CheckResult<T>): Checker<T[]> {
  return {
    kind: 'json',
    check(value) {
      if (!Array.isArray(value)) return reject(`expected a list, got ${shown(value)}`);
      const out: T[] = [];
      for (let i = 0; i < value.length; i++) {
        const result = item(value[i], `[${i}]`);
        if (!result.ok) return result;
        out.push(result.value);
      }
      return accept(out);
    },
  };
}

function passwordHash(): Checker<string> {
  return {
    kind: 'string',
    check(value) {
      if (typeof value !== 'string') return reject(`expected a string, got ${shown(value)}`);
      const problem = passwordHashProblem(value);
      return problem === undefined ? accept(value) : reject(problem);
    },
  };
}

function aclPattern(): Checker<string> {
  return {
    kind: 'string',
    check(value) {
      if (typeof value !== 'string') return reject(`expected a string, got ${shown(value)}`);
      const problem = aclPatternProblem(value);
      return problem === undefined ? accept(value) : reject(`${shown(value)} is not a valid topic filter: ${problem}`);
    },
  };
}

/** auth.users: [{username, password}] with unique usernames and hashed passwords. */
export function users(): Checker<UserEntry[]> {
  const entries = list((value, at) => record(value, at, { username: string({ nonEmpty: true }), password: passwordHash() }, { rateLimit: rateLimit() }));
  return {
    kind: 'json',
    check(value) {
      const result = entries.check(value);
      if (!result.ok) return result;
      const seen = new Set<string>();
      const all = result.value;
      for (let i = 0; i < all.length; i++) {
        if (seen.has(all[i].username)) return reject(`${shown(all[i].username)} is listed twice`, `[${i}].username`);
        seen.add(all[i].username);
      }
      return result;
    },
  };
}

/** A rate limit ({messagesPerSecond, messagesBurst, bytesPerSecond, bytesBurst}, each optional;
 * a burst needs its rate). */
export function rateLimit(): Checker<RateLimit> {
  const r = RATE_LIMIT_RANGES;
  return {
    kind: 'json',
    check(value) {
      const result = record(value, '', {}, {
        messagesPerSecond: integer(...r.messagesPerSecond), messagesBurst: integer(...r.messagesBurst),
        bytesPerSecond: integer(...r.bytesPerSecond), bytesBurst: integer(...r.bytesBurst),
      });
      if (!result.ok) return result;
      const problem = rateLimitProblem(result.value);
      return problem ? reject(problem.message, `.${problem.field}`) : result;
    },
  };
}

/** rewrite: [{action, sourceFilter, regex, destination}] (src/features/rewrite/rules.ts). */
export function rewriteRules(): Checker<RewriteRule[]> {
  return {
    kind: 'json',
    check(value) {
      try {
        return accept(checkRewriteRules(value));
      } catch (err) {
        if (!(err instanceof DomainError)) throw err;
        const at = err.field ?? '';
        return reject(err.message.startsWith(`${at}: `) ? err.message.slice(at.length + 2) : err.message, at === 'rules' ? '' : at);
      }
    },
  };
}

/** auth.acl: [{permission, action, topic, username?, clientId?}]. */
export function aclRules(): Checker<AclEntry[]> {
  return list((value, at) =>
    record(
      value,
      at,
      { permission: oneOf(['allow', 'deny']), action: oneOf(['publish', 'subscribe', 'pubsub']), topic: aclPattern() },
      { username: string(), clientId: string() },
    ),
  );
}

/** bridges: a list of MQTT bridges (src/bridges/bridge-config.ts) with unique names. */
export function bridges(): Checker<BridgeConfig[]> {
  return {
    kind: 'json',
    check(value) {
      if (!Array.isArray(value)) return reject(`expected a list of bridges, got ${shown(value)}`);
      const out: BridgeConfig[] = [];
      const names = new Set<string>();
      for (let i = 0; i < value.length; i++) {
        try {
          const b = parseBridgeConfig(value[i]);
          if (names.has(b.name)) return reject(`${shown(b.name)} is listed twice`, `[${i}].name`);
          names.add(b.name);
          out.push(b);
        } catch (err) {
          if (!(err instanceof BridgeConfigError)) throw err;
          return reject(err.reason, err.field === 'body' ? `[${i}]` : `[${i}].${err.field}`);
        }
      }
      return accept(out);
    },
  };
}
