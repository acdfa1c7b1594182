// The Helm chart (deploy/helm/spindle), offline: `helm lint`, `helm template` with the default
// values and a few value sets, each render decoded strictly into Kubernetes' Go types and
// cross-checked (deploy/helm/validate), then what the chart promises: the discovery the nodes run
// names the headless Service, the configuration file and environment are ones the broker's own
// loader accepts, the preStop drain is there when asked for (and its script, run against a stub
// admin API, drains and waits), and bad values are refused.
// needs: helm
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

import { helm, validateManifests } from '../helpers/helm.ts';
import { loadConfig, unknownEnvVars, type BrokerConfig } from '../../src/config/index.ts';

// Loosely typed views of the rendered objects: the validator has checked their shapes.
interface Env {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string }; secretKeyRef?: { name: string; key: string } };
}
interface Container {
  name: string;
  command: string[];
  env: Env[];
  ports: { name: string; containerPort: number }[];
  startupProbe?: { httpGet: { path: string; port: string } };
  livenessProbe?: { httpGet: { path: string; port: string } };
  readinessProbe?: { httpGet: { path: string; port: string } };
  lifecycle?: { preStop?: { exec: { command: string[] } } };
}
type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; spec: any; data?: Record<string, string> };

interface Render {
  objects: Obj[];
  yaml: string;
}

/** helm template with `values`; fails the test when helm or the validator refuses the render. */
function render(values: unknown): Render {
  const r = helm('template', values);
  assert.equal(r.status, 0, `helm template: ${r.stderr}`);
  const v = validateManifests(r.stdout);
  assert.equal(v.status, 0, `spindle-k8s-validate:\n${v.stderr}`);
  const objects = parseAllDocuments(r.stdout).map((d) => d.toJS() as Obj).filter((o) => o !== null);
  return { objects, yaml: r.stdout };
}

function one(r: Render, kind: string, name?: string): Obj {
  const found = r.objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  assert.equal(found.length, 1, `one ${kind}${name ? ` ${name}` : ''} in the render, found ${found.length}`);
  return found[0];
}

function container(r: Render): Container {
  return one(r, 'StatefulSet').spec.template.spec.containers[0] as Container;
}

function envValue(c: Container, name: string): string | undefined {
  return c.env.find((e) => e.name === name)?.value;
}

/**
 * The configuration node `ordinal` would load: the ConfigMap's spindle.json as --config, and the
 * container's environment as the kubelet makes it ($(VAR) expanded, the field and Secret
 * references read), through the broker's own loader.
 */
function nodeConfig(r: Render, ordinal: number): { config: BrokerConfig; env: Record<string, string> } {
  const set = one(r, 'StatefulSet');
  const env: Record<string, string> = {};
  for (const e of container(r).env) {
    if (e.value !== undefined) env[e.name] = e.value.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, v: string) => env[v] ?? all);
    else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') env[e.name] = `${set.metadata.name}-${ordinal}`;
    else if (e.valueFrom?.fieldRef?.fieldPath === 'status.podIP') env[e.name] = `10.1.0.${10 + ordinal}`;
    else if (e.valueFrom?.secretKeyRef) {
      const secret = one(r, 'Secret', e.valueFrom.secretKeyRef.name);
      env[e.name] = Buffer.from(secret.data![e.valueFrom.secretKeyRef.key], 'base64').toString('utf8');
    }
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'spindle-chart-config-'));
  const file = path.join(dir, 'spindle.json');
  writeFileSync(file, one(r, 'ConfigMap').data!['spindle.json']);
  assert.deepEqual(unknownEnvVars(env), [], 'every SPINDLE_* variable names a key');
  return { config: loadConfig({ argv: ['--config', file], env, cpus: 2, hostname: 'h' }), env };
}

test('helm lint --strict passes with the default values', () => {
  const r = helm('lint', {}, ['--strict']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('default values: a 3-node cluster that finds its peers through the headless Service', () => {
  const r = render({});
  const set = one(r, 'StatefulSet');
  assert.equal(set.spec.replicas, 3);
  assert.equal(set.spec.podManagementPolicy, 'Parallel');
  assert.equal(set.spec.volumeClaimTemplates[0].spec.resources.requests.storage, '10Gi');
  const image = set.spec.template.spec.containers[0].image;
  assert.equal(image, 'spindle:0.1.0', 'the tag is the chart appVersion, Spindle\'s version');

  const headless = one(r, 'Service', set.spec.serviceName);
  assert.equal(headless.spec.clusterIP, 'None');
  assert.equal(headless.spec.publishNotReadyAddresses, true, 'starting peers must be in DNS');
  const c = container(r);
  // What src/cluster/nats-process.ts resolves: <discovery.service>.<discovery.namespace>.
  assert.equal(envValue(c, 'SPINDLE_CLUSTER_DISCOVERY_SERVICE'), headless.metadata.name);
  assert.equal(envValue(c, 'SPINDLE_CLUSTER_DISCOVERY_NAMESPACE'), 'mqtt');
  assert.equal(headless.metadata.namespace, 'mqtt');

  const { config, env } = nodeConfig(r, 1);
  assert.equal(config.nodeName, 'r-spindle-1');
  assert.equal(config.dataDir, '/var/lib/spindle');
  assert.equal(config.cluster.enabled, true);
  assert.deepEqual(config.cluster.discovery, { service: headless.metadata.name, namespace: 'mqtt' });
  assert.equal(config.cluster.localAddress, '10.1.0.11:6222', 'routes listen on the pod address');
  assert.deepEqual(config.cluster.addresses, [0, 1, 2].map((i) => `r-spindle-${i}.${headless.metadata.name}.mqtt.svc:6222`));
  assert.equal(config.admin.port, 8080);
  assert.equal(config.admin.password.length, 24, 'the password of the generated Secret');
  assert.equal(env.SPINDLE_ADMIN_USERNAME, config.admin.username);
  assert.equal(config.workers, 2);

  const ports = Object.fromEntries(c.ports.map((p) => [p.name, p.containerPort]));
  assert.deepEqual(ports, { mqtt: config.mqtt.tcp.port, 'mqtt-ws': config.mqtt.ws.port, admin: config.admin.port, 'nats-route': 6222 });
  for (const probe of [c.startupProbe, c.livenessProbe]) assert.deepEqual(probe?.httpGet, { path: '/health', port: 'admin' });
  // Readiness: 503 while the node drains, so it takes no new client.
  assert.deepEqual(c.readinessProbe?.httpGet, { path: '/health/ready', port: 'admin' });
  // The image of make image: the package's command, its bundled node for the preStop, its nats-server.
  assert.deepEqual(c.command, ['/usr/bin/spindle', '--config', '/etc/spindle/spindle.json']);
  assert.equal(c.lifecycle?.preStop?.exec?.command?.[0], '/usr/lib/spindle/node/bin/node');

  const client = one(r, 'Service', 'r-spindle');
  assert.deepEqual(client.spec.ports.map((p: { name: string; port: number }) => [p.name, p.port]), [['mqtt', 1883], ['mqtt-ws', 8083]]);
  assert.equal(client.spec.publishNotReadyAddresses, undefined, 'clients reach ready nodes only');
  assert.equal(one(r, 'PodDisruptionBudget').spec.maxUnavailable, 1);

  // The preStop drain: node (no curl in the image), the script from the ConfigMap, 60 - 15 s.
  assert.deepEqual(c.lifecycle?.preStop?.exec.command, ['/usr/lib/spindle/node/bin/node', '/etc/spindle/drain.mjs', '--port=8080', '--path=/api/cluster/drain', '--rate=100', '--timeout=45']);
  assert.match(one(r, 'ConfigMap').data!['drain.mjs'], /spindle_connections_current/);
  assert.equal(set.spec.template.spec.terminationGracePeriodSeconds, 60);

  const security = set.spec.template.spec.securityContext;
  assert.equal(security.runAsNonRoot, true);
  // The file the ConfigMap mounts is the one the broker is told to read.
  assert.deepEqual(c.command.slice(-2), ['--config', '/etc/spindle/spindle.json']);
  assert.equal((c as unknown as { securityContext: { readOnlyRootFilesystem: boolean } }).securityContext.readOnlyRootFilesystem, true);
});

test('one node: no clustering, no discovery, no disruption budget', () => {
  const r = render({ replicas: 1 });
  assert.equal(one(r, 'StatefulSet').spec.replicas, 1);
  assert.equal(r.objects.filter((o) => o.kind === 'PodDisruptionBudget').length, 0);
  const { config } = nodeConfig(r, 0);
  assert.equal(config.cluster.enabled, false);
  assert.deepEqual(config.cluster.discovery, { service: '', namespace: '' });
});

test('five nodes without seed peers: discovery alone', () => {
  const r = render({ replicas: 5, cluster: { seedPeers: false } });
  assert.equal(one(r, 'StatefulSet').spec.replicas, 5);
  const { config } = nodeConfig(r, 4);
  assert.deepEqual(config.cluster.addresses, []);
  assert.equal(config.cluster.discovery.service, 'r-spindle-headless');
});

test('TLS on: the Secret mounted, its files in the configuration, port 8883 on the Service', () => {
  const r = render({ mqtt: { tls: { enabled: true, secretName: 'mqtt-cert', requestClientCert: true } }, config: { mqtt: { tls: { cnAsUsername: true } } } });
  const { config } = nodeConfig(r, 0);
  assert.equal(config.mqtt.tls.enabled, true);
  assert.equal(config.mqtt.tls.port, 8883);
  assert.equal(config.mqtt.tls.cert, '/etc/spindle-tls/tls.crt');
  assert.equal(config.mqtt.tls.ca, '/etc/spindle-tls/ca.crt');
  assert.equal(config.mqtt.tls.cnAsUsername, true, 'keys of `config` the chart does not set pass through');
  const volumes = one(r, 'StatefulSet').spec.template.spec.volumes as { name: string; secret?: { secretName: string } }[];
  assert.equal(volumes.find((v) => v.name === 'tls')?.secret?.secretName, 'mqtt-cert');
  assert.ok(one(r, 'Service', 'r-spindle').spec.ports.some((p: { name: string; port: number }) => p.name === 'mqtt-tls' && p.port === 8883));
});

test("the chart's keys win over `config`, false and 0 included", () => {
  const r = render({ mqtt: { websocket: { enabled: false } }, config: { mqtt: { ws: { enabled: true }, tcp: { port: 1 } }, dataDir: '/elsewhere' } });
  const { config } = nodeConfig(r, 0);
  assert.equal(config.mqtt.ws.enabled, false);
  assert.equal(config.mqtt.tcp.port, 1883);
  assert.equal(config.dataDir, '/var/lib/spindle');
  assert.ok(!container(r).ports.some((p) => p.name === 'mqtt-ws'));
});

test('drain off: no preStop hook; drain on with its own wait and rate', () => {
  assert.equal(container(render({ drain: { enabled: false } })).lifecycle, undefined);
  const c = container(render({ terminationGracePeriodSeconds: 120, drain: { rate: 0, timeoutSeconds: 90 } }));
  assert.deepEqual(c.lifecycle?.preStop?.exec.command.slice(-2), ['--rate=0', '--timeout=90']);
});

test('bad values are refused by helm', () => {
  const refused: [unknown, RegExp][] = [
    [{ replicas: 'x' }, /replicas.*want integer|got string/],
    [{ replica: 3 }, /additional properties 'replica' not allowed/],
    [{ mqtt: { port: 70000 } }, /mqtt\/port/],
    [{ mqtt: { tls: { enabled: true } } }, /mqtt\.tls\.enabled needs mqtt\.tls\.secretName/],
    [{ terminationGracePeriodSeconds: 10 }, /must be at least 1 s and below terminationGracePeriodSeconds/],
    [{ drain: { timeoutSeconds: 60 } }, /below terminationGracePeriodSeconds \(60 s\)/],
  ];
  for (const [values, message] of refused) {
    const r = helm('template', values);
    assert.notEqual(r.status, 0, `${JSON.stringify(values)} rendered`);
    assert.match(r.stderr, message, JSON.stringify(values));
  }
});

test('the validator refuses what the API server or a running cluster would not take', () => {
  const good = helm('template', {}).stdout;
  const broken: [string, string, RegExp][] = [
    ['an unknown field', good.replace('podManagementPolicy: Parallel', 'podManagementPolicy: Parallel\n  replica: 3'), /unknown field "spec.replica"/],
    ['a field in the wrong case', good.replace('serviceName:', 'ServiceName:'), /unknown field "spec.ServiceName"/],
    ['an unknown kind', good.replace('kind: PodDisruptionBudget', 'kind: PodDisruptionBudgit'), /unknown apiVersion and kind "policy\/v1 PodDisruptionBudgit"/],
    ['a probe on an undeclared port', good.replace(/port: admin\n(\s+)periodSeconds: 10/, 'port: adminn\n$1periodSeconds: 10'), /livenessProbe names port "adminn"/],
    ['a serviceName with no Service', good.replace(/serviceName: (\S+)/, 'serviceName: nobody'), /serviceName "nobody" names no Service/],
    ['a selector that misses the pods', good.replace(/(kind: Service[\s\S]*?selector:\n\s+app.kubernetes.io\/name:) spindle/, '$1 other'), /selects no pod template/],
    ['a quantity that does not parse', good.replace('storage: 10Gi', 'storage: ten'), /quantities must match/],
  ];
  for (const [what, yaml, message] of broken) {
    assert.notEqual(yaml, good, `${what}: the edit applies`);
    const r = validateManifests(yaml);
    assert.equal(r.status, 1, `${what}: accepted`);
    assert.match(r.stderr, message, what);
  }
});

/** Runs the chart's preStop script against a stub admin API on 127.0.0.1 that starts with
 * `clients` connections and loses `perPoll` at each /prometheus read. */
async function runDrain(options: { drainStatus: number; clients: number; perPoll: number; timeout: number }) {
  const seen: { method: string; url: string; authorization?: string; body: string }[] = [];
  let clients = options.clients;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization, body });
      if (req.url === '/api/cluster/drain') {
        res.writeHead(options.drainStatus).end(options.drainStatus === 404 ? '{"message":"not found"}' : '{}');
        return;
      }
      const now = clients;
      clients = Math.max(0, clients - options.perPoll);
      res.end(`# TYPE spindle_connections_current gauge\nspindle_connections_current{node="r-spindle-0"} ${now}\nspindle_connections_total 99\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const script = path.join(mkdtempSync(path.join(tmpdir(), 'spindle-drain-')), 'drain.mjs');
  writeFileSync(script, one(render({}), 'ConfigMap').data!['drain.mjs']);
  try {
    const child = spawn(process.execPath, [script, `--port=${port}`, '--path=/api/cluster/drain', '--rate=50', `--timeout=${options.timeout}`, '--log=-'], {
      env: { ...process.env, SPINDLE_ADMIN_USERNAME: 'admin', SPINDLE_ADMIN_PASSWORD: 'pw:1' },
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const [code] = (await once(child, 'exit')) as [number];
    return { code, out, seen };
  } finally {
    server.close();
  }
}

test('the preStop script: POST the drain as the admin user, then wait for the connections to go', async () => {
  const r = await runDrain({ drainStatus: 202, clients: 3, perPoll: 2, timeout: 20 });
  assert.equal(r.code, 0, r.out);
  const basic = `Basic ${Buffer.from('admin:pw:1').toString('base64')}`;
  assert.deepEqual(r.seen[0], { method: 'POST', url: '/api/cluster/drain', authorization: basic, body: '{"rate":50}' });
  // 3, 1, 0 connections: three reads, then done.
  assert.deepEqual(r.seen.slice(1).map((s) => [s.method, s.url, s.authorization]), Array(3).fill(['GET', '/prometheus', basic]));
  assert.match(r.out, /done: no connection left/);
});

test('the preStop script fails, saying why, when the drain endpoint is missing', async () => {
  const r = await runDrain({ drainStatus: 404, clients: 3, perPoll: 0, timeout: 5 });
  assert.equal(r.code, 1);
  assert.match(r.out, /POST \/api\/cluster\/drain: HTTP 404/);
  assert.equal(r.seen.length, 1, 'no waiting without a drain');
});

test('the preStop script stops waiting at its timeout', async () => {
  const started = Date.now();
  const r = await runDrain({ drainStatus: 200, clients: 5, perPoll: 0, timeout: 2 });
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /time is up with 5 connection\(s\) left/);
  assert.ok(Date.now() - started < 10_000);
});
