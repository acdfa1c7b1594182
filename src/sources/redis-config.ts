// Owns the config of a redis source: validated and normalized from what the admin API received.
// Either `url` (redis://user:pass@host:6379/0, rediss:// for TLS) or host/port fields; explicit
// username/password/database/tls fields win over the URL's. Mistakes name their field.
import { intField, optionalString, portField, tlsField, type Raw, type TlsConfig } from './config-fields.ts';
import { SourceConfigError } from './types.ts';

export interface RedisConfig {
  host: string;
  port: number;
  username?: string;
  password?: string;
  /** The database index (SELECT). */
  database: number;
  tls: TlsConfig | null;
  /** Operations in flight at most. */
  poolSize: number;
  connectTimeout: number;
  requestTimeout: number;
}

export function parseRedisConfig(raw: Raw): RedisConfig {
  const url = optionalString(raw, 'url');
  let host = optionalString(raw, 'host');
  let port = portField(raw, 'port', 6379);
  let username: string | undefined;
  let password: string | undefined;
  let database: number | undefined;
  let tls = tlsField(raw);
  if (url !== undefined) {
    if (host !== undefined) throw new SourceConfigError('config.url', 'give either url or host/port, not both');
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new SourceConfigError('config.url', 'is not a URL (redis://[user:password@]host[:port][/db])');
    }
    if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') throw new SourceConfigError('config.url', 'must start with redis:// or rediss://');
    if (parsed.hostname === '') throw new SourceConfigError('config.url', 'has no host');
    host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
    if (parsed.port !== '') port = Number(parsed.port);
    if (parsed.username !== '') username = decodeURIComponent(parsed.username);
    if (parsed.password !== '') password = decodeURIComponent(parsed.password);
    const path = parsed.pathname.replace(/^\//, '');
    if (path !== '') {
      if (!/^\d+$/.test(path)) throw new SourceConfigError('config.url', 'the path must be a database index (/0 .. /15)');
      database = Number(path);
    }
    if (parsed.protocol === 'rediss:' && tls === null) tls = { rejectUnauthorized: true };
  }
  if (host === undefined || host === '') throw new SourceConfigError('config.host', 'is required (or give url)');
  const config: RedisConfig = {
    host,
    port,
    database: raw.database === undefined ? (database ?? 0) : intField(raw, 'database', 0, 0, 1_000_000),
    tls,
    poolSize: intField(raw, 'poolSize', 8, 1, 1024),
    connectTimeout: intField(raw, 'connectTimeout', 5000, 100, 600_000),
    requestTimeout: intField(raw, 'requestTimeout', 5000, 100, 600_000),
  };
  username = optionalString(raw, 'username') ?? username;
  password = optionalString(raw, 'password') ?? password;
  if (username !== undefined && username !== '') config.username = username;
  if (password !== undefined && password !== '') config.password = password;
  return config;
}
