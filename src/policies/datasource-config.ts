// Owns a database policy's own `datasource` (the spec's form: {url, username?, password?} plus any
// field the driver takes, such as poolSize or requestTimeout): its source type from the URL scheme
// (a `jdbc:` prefix, as the spec's Java broker writes them, is dropped; a `type` field, if given,
// must agree and is dropped), and its normalized form.
// Credentials in the URL move to the username/password fields (explicit fields win), so a stored
// policy has one password field to redact. SQL and redis URLs take no query parameters (their
// drivers would ignore them silently, e.g. a `sslmode` the user relies on): JDBC's user and
// password are moved to the fields, anything else is refused with a pointer to the field to use.
// The result is validated by the driver's own parse (drivers.ts), its mistakes named under
// `config.datasource`.
import { DRIVERS } from '../sources/drivers.ts';
import { SourceConfigError, type SourceType } from '../sources/types.ts';
import { PolicyConfigError } from './types.ts';

export const DATABASE_SOURCE_TYPES = ['mysql', 'postgresql', 'redis', 'mongodb'] as const;
export type DatabaseSourceType = (typeof DATABASE_SOURCE_TYPES)[number];

const SCHEMES: Record<string, DatabaseSourceType> = {
  mysql: 'mysql',
  mariadb: 'mysql',
  postgres: 'postgresql',
  postgresql: 'postgresql',
  redis: 'redis',
  rediss: 'redis',
  mongodb: 'mongodb',
  'mongodb+srv': 'mongodb',
};

const URL_PARTS = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(?:([^@/?#]*)@)?(.*)$/s;

export function isDatabaseSourceType(type: SourceType | undefined): type is DatabaseSourceType {
  return (DATABASE_SOURCE_TYPES as readonly string[]).includes(type ?? '');
}

/** The normalized datasource; throws PolicyConfigError naming `config.datasource.<field>`. */
export function parseDatasource(raw: unknown, field = 'config.datasource'): Record<string, unknown> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new PolicyConfigError(field, 'must be an object {url, username?, password?, ...}');
  const input = raw as Record<string, unknown>;
  if (typeof input.url !== 'string' || input.url.trim() === '') throw new PolicyConfigError(`${field}.url`, 'is required (e.g. postgres://host:5432/db, mysql://..., redis://..., mongodb://...)');
  const split = splitUrl(input.url.trim(), `${field}.url`);
  if (input.type !== undefined && input.type !== split.type) {
    throw new PolicyConfigError(`${field}.type`, `the URL's scheme makes it a ${split.type} source (got type ${JSON.stringify(input.type)}); the type can be left out`);
  }
  const { type: _derived, ...rest } = input;
  const config: Record<string, unknown> = { ...rest, url: split.url };
  for (const key of ['username', 'password'] as const) {
    if (config[key] === undefined && split[key] !== undefined) config[key] = split[key];
    if (config[key] === undefined) delete config[key];
  }
  const driver = DRIVERS[split.type];
  if (!driver) throw new PolicyConfigError(`${field}.url`, `${split.type} sources are not available in this build`);
  try {
    driver.parse(config);
  } catch (err) {
    if (err instanceof SourceConfigError) throw new PolicyConfigError(err.field.replace(/^config/, field), err.message.replace(/^[^:]*: /, ''));
    throw err;
  }
  return config;
}

/** The source type of a normalized datasource (its URL's scheme). */
export function datasourceType(config: Record<string, unknown>, field = 'config.datasource'): DatabaseSourceType {
  return splitUrl(String(config.url ?? ''), `${field}.url`).type;
}

interface SplitUrl {
  type: DatabaseSourceType;
  /** Without `jdbc:`, credentials and the JDBC user/password parameters. */
  url: string;
  username?: string;
  password?: string;
}

function splitUrl(text: string, field: string): SplitUrl {
  const m = URL_PARTS.exec(text.replace(/^jdbc:/i, ''));
  if (m === null) throw new PolicyConfigError(field, 'is not a URL (scheme://[user:password@]host[:port]/database)');
  const scheme = m[1].toLowerCase();
  const type = SCHEMES[scheme];
  if (type === undefined) throw new PolicyConfigError(field, `scheme ${scheme}: is not a database (one of ${Object.keys(SCHEMES).join(', ')})`);
  const out: SplitUrl = { type, url: `${scheme}://${m[3]}` };
  if (m[2] !== undefined) {
    const colon = m[2].indexOf(':');
    out.username = decoded(colon < 0 ? m[2] : m[2].slice(0, colon), field);
    if (colon >= 0) out.password = decoded(m[2].slice(colon + 1), field);
    if (out.username === '') delete out.username;
  }
  if (type !== 'mongodb') moveQueryCredentials(out, field);
  return out;
}

/** SQL and redis URLs: JDBC's ?user=&password= become fields; any other parameter is refused. */
function moveQueryCredentials(out: SplitUrl, field: string): void {
  const q = out.url.indexOf('?');
  if (q < 0) return;
  for (const [key, value] of new URLSearchParams(out.url.slice(q + 1))) {
    if (key === 'user' || key === 'username') out.username ??= value;
    else if (key === 'password') out.password ??= value;
    else throw new PolicyConfigError(field, `URL parameter ${key} is not supported for ${out.type}: give tls, poolSize, connectTimeout or requestTimeout as datasource fields`);
  }
  out.url = out.url.slice(0, q);
}

function decoded(text: string, field: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new PolicyConfigError(field, 'has a malformed %-escape in its credentials');
  }
}
