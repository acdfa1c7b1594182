// Owns the shape of the broker configuration.
import type { LogLevel } from '../log/levels.ts';
import type { BridgeConfig } from '../bridges/bridge-config.ts';

export interface UserEntry {
  username: string;
  /** An argon2 or bcrypt hash. */
  password: string;
}

export interface AclEntry {
  permission: 'allow' | 'deny';
  action: 'publish' | 'subscribe' | 'pubsub';
  /** A topic filter; %c and %u inside a level stand for the client id and the username. */
  topic: string;
  username?: string;
  clientId?: string;
}

export interface BrokerConfig {
  nodeName: string;
  workers: number;
  workerYoungGeneration: number;
  dataDir: string;
  log: {
    level: LogLevel;
    /** The log store: rotating NDJSON files in <dataDir>/logs (src/log/log-store.ts). */
    file: { enabled: boolean; maxSize: number; maxFiles: number };
  };
  mqtt: {
    host: string;
    tcp: { enabled: boolean; port: number };
    ws: { enabled: boolean; port: number; path: string };
    tls: {
      enabled: boolean;
      port: number;
      cert: string;
      key: string;
      ca: string;
      requestCert: boolean;
      rejectUnauthorized: boolean;
      cnAsUsername: boolean;
    };
  };
  limits: {
    maxPacketSize: number;
    receiveMaximum: number;
    maxInflight: number;
    maxKeepalive: number;
    topicAliasMaximum: number;
    maxQueuedMessages: number;
    queueDropPolicy: 'drop-oldest' | 'drop-newest';
    queueQos0: boolean;
    maxSessionExpiry: number;
    maxClientIdLength: number;
    maxTopicLevels: number;
    authMaxFailures: number;
    authFailureWindow: number;
    authLockout: number;
    maxOutboundBytes: number;
    slowConsumerTimeout: number;
    partialPacketTimeout: number;
  };
  auth: {
    allowAnonymous: boolean;
    users: UserEntry[];
    acl: AclEntry[];
    aclDefault: 'allow' | 'deny';
    /** A Mosquitto password file path; '' for none. */
    passwordFile: string;
    /** A Mosquitto ACL file path; '' for none. */
    aclFile: string;
    cacheSize: number;
    /** Seconds; 0: authentication policy answers are not cached. */
    policyCacheTtl: number;
    policyCacheSize: number;
    /** Milliseconds. */
    policyTimeout: number;
    policyMaxPending: number;
    /** 0: half the CPUs. */
    hashConcurrency: number;
  };
  store: {
    storeType: 'LOCAL' | 'MEMORY' | 'POSTGRESQL' | 'MYSQL';
    datasource: { url: string; username: string; password: string };
  };
  admin: {
    enabled: boolean;
    host: string;
    port: number;
    maxBodySize: number;
    tokenLifetime: number;
    loginMaxFailures: number;
    loginWindow: number;
    loginLockout: number;
    username: string;
    password: string;
    licensePublicKey: string;
  };
  rules: { actionQueueLimit: number };
  scripts: { threads: number; timeout: number; memoryLimit: number; onError: 'pass' | 'drop' };
  extensions: { dir: string };
  platform: { maxTenants: number; alertInterval: number; maxAlerts: number };
  audit: { retentionDays: number };
  cluster: {
    enabled: boolean; natsUrl: string; localAddress: string; addresses: string[]; clientPort: number; natsServer: string;
    discovery: { service: string; namespace: string }; maxNodes: number;
  };
  /** MQTT bridges to remote brokers (src/bridges/bridge-config.ts), every default filled in. */
  bridges: BridgeConfig[];
  sys: { enabled: boolean; interval: number };
  shutdownTimeout: number;
}

