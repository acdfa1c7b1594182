// Owns the config of a mongodb source: validated and normalized from what the admin API received.
// Either `url` (mongodb://user:pass@host:27017,host2:27017/db?authSource=admin, or mongodb+srv://)
// or host/port fields; explicit username/password/database/authSource/tls fields win over the
// URL's. The URL's other options are kept (`options`) and given back to the driver; its
// credentials never are (they go to the driver's auth option, so no connection string that a
// driver might echo holds a password). Mistakes name their field.
import { intField, optionalString, portField, tlsField, type Raw, type TlsConfig } from './config-fields.ts';
import { SourceConfigError } from './types.ts';

export interface MongoConfig {
  /** host:port of each seed (one host name for mongodb+srv). */
  hosts: string[];
  srv: boolean;
  username?: string;
  password?: string;
  /** The database the source writes to and reads from. */
  database: string;
  authSource?: string;
  tls: TlsConfig | null;
  /** Connection string options other than credentials, database, authSource and tls. */
  options: Record<string, string>;
  /** The driver's maxPoolSize: operations in flight at most. */
  poolSize: number;
  connectTimeout: number;
  requestTimeout: number;
}

const URL_SHAPE = /^(mongodb|mongodb\+srv):\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#]+)(?:\/([^?#]*))?(?:\?([^#]*))?$/;

export function parseMongoConfig(raw: Raw): MongoConfig {
  const url = optionalString(raw, 'url');
  const host = optionalString(raw, 'host');
  let hosts: string[];
  let srv = false;
  let username: string | undefined;
  let password: string | undefined;
  let database: string | undefined;
  let authSource: string | undefined;
  let tls = tlsField(raw);
  const options: Record<string, string> = {};
  if (url !== undefined) {
    if (host !== undefined) throw new SourceConfigError('config.url', 'give either url or host/port, not both');
    const m = URL_SHAPE.exec(url);
    if (m === null) throw new SourceConfigError('config.url', 'must look like mongodb://[user:password@]host[:port][,host2...]/database');
    srv = m[1] === 'mongodb+srv';
    if (m[2]) username = decodeURIComponent(m[2]);
    if (m[3]) password = decodeURIComponent(m[3]);
    hosts = m[4].split(',').map((h) => h.trim()).filter((h) => h !== '');
    for (const h of hosts) {
      if (!/^(\[[^\]]+\]|[^:]+)(:\d{1,5})?$/.test(h)) throw new SourceConfigError('config.url', `"${h}" is not host[:port]`);
    }
    if (srv && (hosts.length !== 1 || hosts[0].includes(':'))) throw new SourceConfigError('config.url', 'mongodb+srv:// takes one host name without a port');
    if (m[5]) database = decodeURIComponent(m[5]);
    for (const [k, v] of new URLSearchParams(m[6] ?? '')) {
      if (k === 'authSource') authSource = v;
      else if (k === 'tls' || k === 'ssl') {
        if (v === 'true' && tls === null) tls = { rejectUnauthorized: true };
      } else options[k] = v;
    }
  } else {
    if (host === undefined || host === '') throw new SourceConfigError('config.host', 'is required (or give url)');
    hosts = [`${host}:${portField(raw, 'port', 27017)}`];
  }
  database = optionalString(raw, 'database') ?? database;
  if (database === undefined || database === '') throw new SourceConfigError('config.database', 'is required (in the url path or as database)');
  if (/[/\\. "$\0]/.test(database)) throw new SourceConfigError('config.database', 'may not contain / \\ . space " $');
  const config: MongoConfig = {
    hosts,
    srv,
    database,
    tls,
    options,
    poolSize: intField(raw, 'poolSize', 8, 1, 1024),
    connectTimeout: intField(raw, 'connectTimeout', 5000, 100, 600_000),
    requestTimeout: intField(raw, 'requestTimeout', 5000, 100, 600_000),
  };
  username = optionalString(raw, 'username') ?? username;
  password = optionalString(raw, 'password') ?? password;
  authSource = optionalString(raw, 'authSource') ?? authSource;
  if (username !== undefined && username !== '') config.username = username;
  if (password !== undefined && password !== '') config.password = password;
  if (authSource !== undefined && authSource !== '') config.authSource = authSource;
  if (config.password !== undefined && config.username === undefined) throw new SourceConfigError('config.username', 'is required with a password');
  return config;
}

/** The connection string the driver gets: hosts, database and options, never credentials. */
export function mongoConnectionString(config: MongoConfig): string {
  const query = new URLSearchParams(config.options).toString();
  return `${config.srv ? 'mongodb+srv' : 'mongodb'}://${config.hosts.join(',')}/${encodeURIComponent(config.database)}${query ? `?${query}` : ''}`;
}
