// The servers the source tests talk to, made available by the project's own scripts (installed
// when missing, started when not running): ensureRedis() (127.0.0.1:6379), ensureKafka()
// (127.0.0.1:9092, KRaft), ensureFerretDb() (127.0.0.1:27017, MongoDB wire protocol) and
// ensureRabbitMq() (127.0.0.1:5672, the command tests; stopRabbitMq() stops it), ensureRocketMq()
// and ensurePulsar() (the ROCKETMQ and PULSAR command tests), ensureMailpit() (SMTP 127.0.0.1:1025,
// its HTTP API 127.0.0.1:8025: the email notification tests). Each
// script runs at most once per test process, and is quick when the file's "// needs:" line had
// make test-services run it before (test/helpers/tiers.ts; importing one of these implies that
// need, which test/helpers/tiers.test.ts checks).
// Also: a port on this machine where nothing listens, for the "refused" cases.
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const scripts = fileURLToPath(new URL('../../scripts/', import.meta.url));
const done = new Set<string>();

function ensure(script: string, timeoutMs: number): void {
  if (done.has(script)) return;
  execFileSync(`${scripts}${script}`, { stdio: ['ignore', 'inherit', 'inherit'], timeout: timeoutMs });
  done.add(script);
}

export function ensureRedis(): void {
  ensure('ensure-redis.sh', 5 * 60_000);
}

/** Resolving the Kafka jars the first time takes a minute or two. */
export function ensureKafka(): void {
  ensure('ensure-kafka.sh', 10 * 60_000);
}

/** Building FerretDB the first time takes a few minutes. */
export function ensureFerretDb(): void {
  ensure('ensure-ferretdb.sh', 10 * 60_000);
}

/** RabbitMQ on 127.0.0.1:5672 (guest/guest); installing it the first time takes a minute. */
export function ensureRabbitMq(): void {
  ensure('ensure-rabbitmq.sh', 5 * 60_000);
}

/** Stops the RabbitMQ node ensureRabbitMq() started (a test of a server that is down); call
 * ensureRabbitMq() again to start it. */
export function stopRabbitMq(): void {
  execFileSync(`${scripts}ensure-rabbitmq.sh`, ['stop'], { stdio: ['ignore', 'inherit', 'inherit'], timeout: 2 * 60_000 });
  done.delete('ensure-rabbitmq.sh');
}

/** RocketMQ 5 (name server 127.0.0.1:9876, proxy gRPC 127.0.0.1:18081) with topic `spindle-test`
 * and group `spindle-test-group`; resolving the jars the first time takes a minute or two, a
 * start ~30 s. */
export function ensureRocketMq(): void {
  ensure('ensure-rocketmq.sh', 10 * 60_000);
}

/** Pulsar standalone (binary 127.0.0.1:6650, HTTP and WebSocket API 127.0.0.1:8090); resolving
 * the jars the first time takes a few minutes, a start ~15 s. */
export function ensurePulsar(): void {
  ensure('ensure-pulsar.sh', 10 * 60_000);
}

/** Mailpit (SMTP 127.0.0.1:1025, HTTP API http://127.0.0.1:8025); building it with `go install`
 * the first time takes a minute or two. */
export function ensureMailpit(): void {
  ensure('ensure-mailpit.sh', 10 * 60_000);
}

/** A loopback port nothing listens on (bound by the OS, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
