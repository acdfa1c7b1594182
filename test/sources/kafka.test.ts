// The kafka source against a real Kafka (scripts/ensure-kafka.sh, KRaft): config errors name
// their field, check() classifies ok/refused/dns, send writes messages a kafkajs consumer reads
// back, a broker's refusal of the data is non-transient, and a source whose broker is unreachable
// goes down and fails fast. (No SASL listener on the test broker: the auth case is not covered.)
// needs: kafka
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../src/log/index.ts';
import { createKafkaSource, parseKafkaConfig } from '../../src/sources/kafka.ts';
import { SourceConfigError, SourceError, type KafkaSource } from '../../src/sources/types.ts';
import { closedPort, ensureKafka } from '../helpers/services.ts';
import { readKafka } from '../helpers/kafka.ts';
import { waitFor } from '../helpers/wait.ts';

const log = createLogger({ level: 'error' });

before(() => ensureKafka());

function fieldOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof SourceConfigError, `expected a SourceConfigError, got ${String(err)}`);
    return err.field;
  }
  assert.fail('expected the config to be refused');
}

describe('parseKafkaConfig', () => {
  test('url, bootstrapServers and host/port give the broker list', () => {
    assert.deepEqual(parseKafkaConfig({ url: 'kafka://a:9092,b:9093' }).brokers, ['a:9092', 'b:9093']);
    assert.deepEqual(parseKafkaConfig({ bootstrapServers: 'a:1, b:2' }).brokers, ['a:1', 'b:2']);
    assert.deepEqual(parseKafkaConfig({ bootstrapServers: ['a:1'] }).brokers, ['a:1']);
    const c = parseKafkaConfig({ host: 'h' });
    assert.deepEqual(c.brokers, ['h:9092']);
    assert.deepEqual(
      { acks: c.acks, compression: c.compression, clientId: c.clientId, poolSize: c.poolSize, sasl: c.sasl, tls: c.tls },
      { acks: -1, compression: 'none', clientId: 'spindle', poolSize: 8, sasl: null, tls: null },
    );
  });

  test('sasl from the object, from the URL, and TLS from kafka+ssl', () => {
    assert.deepEqual(parseKafkaConfig({ host: 'h', sasl: { mechanism: 'scram-sha-256', username: 'u', password: 'p' } }).sasl, {
      mechanism: 'scram-sha-256',
      username: 'u',
      password: 'p',
    });
    const c = parseKafkaConfig({ url: 'kafka+ssl://u:p@h:9093' });
    assert.deepEqual(c.sasl, { mechanism: 'plain', username: 'u', password: 'p' });
    assert.deepEqual(c.tls, { rejectUnauthorized: true });
    assert.equal(parseKafkaConfig({ host: 'h', acks: 'all', compression: 'gzip' }).compression, 'gzip');
  });

  test('mistakes name their field', () => {
    assert.equal(fieldOf(() => parseKafkaConfig({})), 'config.host');
    assert.equal(fieldOf(() => parseKafkaConfig({ url: 'http://h:1' })), 'config.url');
    assert.equal(fieldOf(() => parseKafkaConfig({ url: 'kafka://h:1', host: 'h' })), 'config.url');
    assert.equal(fieldOf(() => parseKafkaConfig({ bootstrapServers: 'h' })), 'config.bootstrapServers');
    assert.equal(fieldOf(() => parseKafkaConfig({ bootstrapServers: 5 })), 'config.bootstrapServers');
    assert.equal(fieldOf(() => parseKafkaConfig({ host: 'h', acks: 2 })), 'config.acks');
    assert.equal(fieldOf(() => parseKafkaConfig({ host: 'h', compression: 'snappy' })), 'config.compression');
    assert.equal(fieldOf(() => parseKafkaConfig({ host: 'h', sasl: { mechanism: 'gssapi', username: 'u' } })), 'config.sasl.mechanism');
    assert.equal(fieldOf(() => parseKafkaConfig({ host: 'h', sasl: { mechanism: 'plain' } })), 'config.sasl.username');
    assert.equal(fieldOf(() => parseKafkaConfig({ host: 'h', connectTimeout: -1 })), 'config.connectTimeout');
  });
});

describe('kafka source check()', () => {
  test('ok against the real broker', async () => {
    const s = createKafkaSource('k1', parseKafkaConfig({ bootstrapServers: '127.0.0.1:9092' }), log);
    try {
      const r = await s.check(5000);
      assert.equal(r.ok, true, r.message);
    } finally {
      await s.close();
    }
  });

  test('a closed port is refused', async () => {
    const s = createKafkaSource('k2', parseKafkaConfig({ host: '127.0.0.1', port: await closedPort() }), log);
    try {
      const r = await s.check(3000);
      assert.equal(r.ok, false);
      assert.equal(r.failure, 'refused', r.message);
    } finally {
      await s.close();
    }
  });

  test('an unresolvable host is dns', async () => {
    const s = createKafkaSource('k3', parseKafkaConfig({ url: 'kafka://nonexistent.invalid:9092' }), log);
    try {
      const r = await s.check(3000);
      assert.equal(r.ok, false);
      assert.equal(r.failure, 'dns', r.message);
    } finally {
      await s.close();
    }
  });
});

describe('kafka source send', () => {
  const topic = `spindle-test-${process.pid}-${Date.now()}`;
  let source: KafkaSource;
  before(() => {
    source = createKafkaSource('send', parseKafkaConfig({ url: 'kafka://127.0.0.1:9092', requestTimeout: 10_000, compression: 'gzip' }), log);
  });
  after(async () => {
    await source.close();
  });

  test('sends messages a separate consumer reads back', async () => {
    await source.send([
      {
        topic,
        messages: [
          { key: 'k1', value: 'one', headers: { h: 'x' } },
          { key: null, value: Buffer.from('two') },
        ],
      },
    ]);
    await source.send([{ topic, messages: [{ key: 'k3', value: 'three' }] }]);
    assert.equal(source.health().state, 'up');

    const records = await readKafka(topic, (rs) => rs.length >= 3);
    const seen = records.map((r) => ({ key: r.key, value: r.value, h: r.headers.h }));
    assert.deepEqual(seen, [
      { key: 'k1', value: 'one', h: 'x' },
      { key: null, value: 'two', h: undefined },
      { key: 'k3', value: 'three', h: undefined },
    ]);
  });

  test('a topic the broker refuses is a non-transient error, and the source stays up', async () => {
    await assert.rejects(source.send([{ topic: 'not a valid topic!', messages: [{ key: null, value: 'x' }] }]), (err: unknown) => {
      assert.ok(err instanceof SourceError, String(err));
      assert.equal(err.transient, false, err.message);
      return true;
    });
    assert.equal(source.health().state, 'up');
  });
});

describe('kafka source with its broker unreachable', () => {
  test('goes down and fails fast with transient errors', async () => {
    const s = createKafkaSource('down', parseKafkaConfig({ host: '127.0.0.1', port: await closedPort(), requestTimeout: 2000 }), log);
    try {
      const started = Date.now();
      const err = await s.send([{ topic: 't', messages: [{ key: null, value: 'x' }] }]).then(
        () => assert.fail('the send should fail'),
        (e: unknown) => e,
      );
      assert.ok(Date.now() - started < 2500, `failed after ${Date.now() - started} ms`);
      assert.ok(err instanceof SourceError);
      assert.equal(err.transient, true);
      await waitFor(() => s.health().state === 'down', { message: 'the source goes down' });
      const again = Date.now();
      await assert.rejects(s.send([{ topic: 't', messages: [{ key: null, value: 'y' }] }]), (e: unknown) => e instanceof SourceError && e.transient);
      assert.ok(Date.now() - again < 200, 'refused at once while down');
    } finally {
      await s.close();
    }
  });
});
