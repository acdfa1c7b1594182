// The three test tiers, and what puts a test file in one. A file declares what it needs beyond
// itself on one line of its first comment block:
//
//   // needs: broker, postgresql
//
// No such line: a unit test (make test-unit): no broker and no server to start, nothing beyond
// this machine (a stub the test serves itself on 127.0.0.1 is fine). Only `broker`, `nats`,
// `mosquitto`, `chromium`, `haproxy`, `otelcol` (all started by the test itself, on free ports), `helm` (programs the
// test runs, installed by their ensure script) or `deb` (a Debian 12 chroot the test installs the
// package in, its broker in a network namespace of its own): an end-to-end test (make test-e2e).
// Any shared server (postgresql, redis, kafka, ...): a services test (make test-services), and
// scripts/test-tier.ts runs only the ensure scripts of the servers its selected files declare.
// NEEDS is the one table of what can be declared and what makes it
// available; PROVIDERS says which helper imports imply which need, and tiers.test.ts fails when
// a file's declaration and its imports disagree.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export type Tier = 'unit' | 'e2e' | 'services';

export interface NeedInfo {
  /** 'e2e': started by the test itself (a child process or sockets in the test's process);
   * 'services': a shared server that must be running before the file starts. */
  tier: 'e2e' | 'services';
  /** The script (in scripts/) that installs it, or installs and starts it; null: `make build`. */
  ensure: string | null;
  what: string;
}

export const NEEDS = {
  broker: { tier: 'e2e', ensure: null, what: 'a broker with listening sockets: in-process (helpers/broker.ts, admin.ts) or a `spindle` process (process-broker.ts)' },
  nats: { tier: 'e2e', ensure: 'ensure-nats.sh', what: 'nats-server binaries the cluster tests start on free ports (helpers/nats.ts)' },
  mosquitto: { tier: 'e2e', ensure: 'ensure-system-packages.sh', what: "Debian's Mosquitto, started by the bridge tests on a free port (helpers/mosquitto.ts)" },
  chromium: { tier: 'e2e', ensure: 'ensure-system-packages.sh', what: "Debian's Chromium for the console tests (helpers/browser.ts)" },
  helm: { tier: 'e2e', ensure: 'ensure-helm.sh', what: 'helm and the offline manifest validator (deploy/helm/validate), run by the chart test (helpers/helm.ts)' },
  'ocsp-responder': { tier: 'e2e', ensure: 'ensure-system-packages.sh', what: "OpenSSL's command line: a test CA, CRLs, and its OCSP responder (`openssl ocsp -index ... -port`), started by the test on a free port (helpers/ocsp-pki.ts); mosquitto_pub with client certificates" },
  haproxy: { tier: 'e2e', ensure: 'ensure-haproxy.sh', what: "Debian's HAProxy, started by the PROXY protocol tests on free ports in front of a broker (helpers/haproxy.ts)" },
  slapd: { tier: 'e2e', ensure: 'ensure-slapd.sh', what: "Debian's OpenLDAP server and ldap-utils: the LDAP policy tests start their own slapd on free ports (helpers/slapd.ts)" },
  otelcol: { tier: 'e2e', ensure: 'ensure-otelcol.sh', what: 'an OpenTelemetry Collector (OTLP receiver, file exporter) built from scripts/otelcol/, started by the OpenTelemetry tests on free ports (helpers/otelcol.ts)' },
  deb: { tier: 'e2e', ensure: 'ensure-deb-tools.sh', what: 'dpkg-dev, lintian, debootstrap and mosquitto-clients: make deb and a Debian 12 chroot the test installs the package in (helpers/debian-root.ts)' },
  postgresql: { tier: 'services', ensure: 'ensure-databases.sh', what: 'PostgreSQL on 127.0.0.1:5432 (store/databases.ts PG_URL)' },
  mariadb: { tier: 'services', ensure: 'ensure-databases.sh', what: 'MariaDB on 127.0.0.1:3306 (store/databases.ts MYSQL_URL)' },
  redis: { tier: 'services', ensure: 'ensure-redis.sh', what: 'Redis on 127.0.0.1:6379' },
  kafka: { tier: 'services', ensure: 'ensure-kafka.sh', what: 'Kafka (KRaft) on 127.0.0.1:9092' },
  ferretdb: { tier: 'services', ensure: 'ensure-ferretdb.sh', what: 'FerretDB (MongoDB wire protocol) on 127.0.0.1:27017' },
  rabbitmq: { tier: 'services', ensure: 'ensure-rabbitmq.sh', what: 'RabbitMQ on 127.0.0.1:5672' },
  rocketmq: { tier: 'services', ensure: 'ensure-rocketmq.sh', what: 'RocketMQ 5 (name server 127.0.0.1:9876, proxy 127.0.0.1:18081)' },
  pulsar: { tier: 'services', ensure: 'ensure-pulsar.sh', what: 'Pulsar standalone (127.0.0.1:6650, HTTP 127.0.0.1:8090)' },
  mailpit: { tier: 'services', ensure: 'ensure-mailpit.sh', what: 'Mailpit (SMTP 127.0.0.1:1025, API 127.0.0.1:8025)' },
} as const satisfies Record<string, NeedInfo>;

export type Need = keyof typeof NEEDS;

export function isNeed(name: string): name is Need {
  return Object.hasOwn(NEEDS, name);
}

/**
 * What importing a module implies, for tiers.test.ts: a list (any value import of the module), or
 * per imported name (a module that serves several servers, or also harmless helpers such as
 * closedPort and uniqueName). Paths are relative to the repository root; npm packages by name.
 */
export const PROVIDERS: Record<string, readonly Need[] | Record<string, readonly Need[]>> = {
  'test/helpers/broker.ts': ['broker'],
  'test/helpers/admin.ts': ['broker'],
  'test/helpers/process-broker.ts': ['broker'],
  'test/helpers/raw.ts': ['broker'],
  'test/helpers/raw-client.ts': ['broker'],
  'test/helpers/worker-ports.ts': ['broker'],
  'test/helpers/nats.ts': ['nats'],
  'test/helpers/mosquitto.ts': ['mosquitto'],
  'test/helpers/browser.ts': ['chromium'],
  'test/helpers/helm.ts': ['helm'],
  'test/helpers/debian-root.ts': ['deb'],
  'test/helpers/ocsp-pki.ts': ['ocsp-responder'],
  'test/helpers/haproxy.ts': ['haproxy'],
  'test/helpers/slapd.ts': ['slapd'],
  'test/helpers/otelcol.ts': ['otelcol'],
  'test/helpers/kafka.ts': ['kafka'],
  'test/helpers/services.ts': {
    ensureRedis: ['redis'],
    ensureKafka: ['kafka'],
    ensureFerretDb: ['ferretdb'],
    ensureRabbitMq: ['rabbitmq'],
    stopRabbitMq: ['rabbitmq'],
    ensureRocketMq: ['rocketmq'],
    ensurePulsar: ['pulsar'],
    ensureMailpit: ['mailpit'],
  },
  'test/store/databases.ts': { PG_URL: ['postgresql'], pgSchema: ['postgresql'], MYSQL_URL: ['mariadb'] },
  'test/commands/helpers.ts': {
    KAFKA: ['kafka'],
    produceKafka: ['kafka'],
    createKafkaTopic: ['kafka'],
    RABBITMQ: ['rabbitmq'],
    publishRabbit: ['rabbitmq'],
    deleteQueue: ['rabbitmq'],
  },
  // A client library imported by a test talks to its server.
  postgres: ['postgresql'],
  'mysql2/promise': ['mariadb'],
  ioredis: ['redis'],
  kafkajs: ['kafka'],
  mongodb: ['ferretdb'],
  amqplib: ['rabbitmq'],
  'rocketmq-client-nodejs': ['rocketmq'],
};

/** Code that needs a broker without importing a broker helper. */
export const BROKER_CODE = [/\bnew Supervisor\(/, /\bstartAdmin\(/, /bin\/spindle\.mjs/];

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Every test file (test/**\/*.test.ts), relative to the repository root, sorted. */
export function testFiles(): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.test.ts')) found.push(rel);
    }
  };
  walk('test');
  return found.sort();
}

export function readSource(file: string): string {
  return readFileSync(path.join(ROOT, file), 'utf8');
}

const DECLARATION = /^\/\/ needs: (.*)$/;

/** The lines of the first comment block (the `//` lines the file opens with). */
export function headerLines(source: string): string[] {
  const lines: string[] = [];
  for (const line of source.split('\n')) {
    if (!line.startsWith('//')) break;
    lines.push(line);
  }
  return lines;
}

/** What `source` declares in its first comment block (empty: nothing). Throws on an unknown
 * name, so a typo is not read as a unit test. */
export function declaredNeeds(source: string, file = 'source'): Need[] {
  const lines = headerLines(source).filter((l) => DECLARATION.test(l));
  if (lines.length > 1) throw new Error(`${file}: more than one "// needs:" line`);
  if (lines.length === 0) return [];
  const names = DECLARATION.exec(lines[0])![1].split(',').map((s) => s.trim()).filter(Boolean);
  for (const name of names) {
    if (!isNeed(name)) throw new Error(`${file}: "// needs: ${name}" is none of ${Object.keys(NEEDS).join(', ')}`);
  }
  return names as Need[];
}

export function tierOf(needs: readonly Need[]): Tier {
  if (needs.some((n) => NEEDS[n].tier === 'services')) return 'services';
  return needs.length > 0 ? 'e2e' : 'unit';
}

/** The ensure scripts for `needs`, each once, in the order of NEEDS. */
export function ensureScripts(needs: Iterable<Need>): string[] {
  const wanted = new Set(needs);
  const scripts: string[] = [];
  for (const [name, info] of Object.entries(NEEDS) as [Need, NeedInfo][]) {
    if (wanted.has(name) && info.ensure && !scripts.includes(info.ensure)) scripts.push(info.ensure);
  }
  return scripts;
}
