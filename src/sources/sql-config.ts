// Owns the config of the two SQL sources (mysql, postgresql): a `url` (mysql://user:pass@host:port/db)
// or host/port/database/username/password, plus tls, poolSize (1..100, default 8), connectTimeout
// (ms, default 5000) and requestTimeout (ms, default 10000). The normalized config never keeps
// the url: its parts are split into fields, so redact() has one password to remove.
import { configObject, intField, optionalString, portField, tlsField, type TlsConfig } from './config-fields.ts';
import { SourceConfigError } from './types.ts';

export interface SqlConfig {
  host: string;
  port: number;
  database: string;
  username: string;
  password: string;
  tls: TlsConfig | null;
  poolSize: number;
  connectTimeout: number;
  requestTimeout: number;
}

export interface SqlDialectDefaults {
  schemes: readonly string[];
  port: number;
}

/** mysql and mariadb: the mysql:// and mariadb:// schemes, port 3306. */
export function parseMysqlConfig(raw: unknown): SqlConfig {
  return parseSqlConfig(raw, { schemes: ['mysql', 'mariadb'], port: 3306 });
}

/** postgresql: the postgres:// and postgresql:// schemes, port 5432. */
export function parsePostgresqlConfig(raw: unknown): SqlConfig {
  return parseSqlConfig(raw, { schemes: ['postgres', 'postgresql'], port: 5432 });
}

export function parseSqlConfig(input: unknown, dialect: SqlDialectDefaults): SqlConfig {
  const raw = configObject(input);
  const url = optionalString(raw, 'url');
  const fromUrl = url === undefined ? {} : splitUrl(url, dialect);
  const host = optionalString(raw, 'host') ?? fromUrl.host ?? '';
  if (!host) throw new SourceConfigError('config.host', 'is required (or a url)');
  const database = optionalString(raw, 'database') ?? fromUrl.database ?? '';
  if (!database) throw new SourceConfigError('config.database', 'is required (or a url with a path)');
  return {
    host,
    port: raw.port !== undefined ? portField(raw, 'port', dialect.port) : (fromUrl.port ?? dialect.port),
    database,
    username: optionalString(raw, 'username') ?? fromUrl.username ?? '',
    password: optionalString(raw, 'password') ?? fromUrl.password ?? '',
    tls: tlsField(raw),
    poolSize: intField(raw, 'poolSize', 8, 1, 100),
    connectTimeout: intField(raw, 'connectTimeout', 5000, 100, 600_000),
    requestTimeout: intField(raw, 'requestTimeout', 10_000, 100, 3_600_000),
  };
}

interface UrlParts {
  host?: string;
  port?: number;
  database?: string;
  username?: string;
  password?: string;
}

function splitUrl(text: string, dialect: SqlDialectDefaults): UrlParts {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new SourceConfigError('config.url', 'is not a valid URL');
  }
  const scheme = url.protocol.replace(/:$/, '');
  if (!dialect.schemes.includes(scheme)) {
    throw new SourceConfigError('config.url', `scheme must be ${dialect.schemes.join(' or ')} (got ${scheme})`);
  }
  const parts: UrlParts = {};
  if (url.hostname) parts.host = url.hostname.replace(/^\[|\]$/g, '');
  if (url.port) parts.port = Number(url.port);
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (database) parts.database = database;
  if (url.username) parts.username = decodeURIComponent(url.username);
  if (url.password) parts.password = decodeURIComponent(url.password);
  return parts;
}
