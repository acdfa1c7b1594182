// The mongodb source against a real MongoDB-protocol server (scripts/ensure-ferretdb.sh: FerretDB
// over SQLite): config errors name their field, check() classifies ok/refused/dns, insertMany
// writes documents a separate client finds, a duplicate key is non-transient, and a source whose
// server is unreachable goes down and fails fast. (FerretDB's SQLite backend does not check
// credentials: the auth case is not covered.)
// needs: ferretdb
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MongoClient } from 'mongodb';
import { createLogger } from '../../src/log/index.ts';
import { createMongoSource, parseMongoConfig } from '../../src/sources/mongodb.ts';
import { mongoConnectionString } from '../../src/sources/mongodb-config.ts';
import { SourceConfigError, SourceError, type MongoSource } from '../../src/sources/types.ts';
import { closedPort, ensureFerretDb } from '../helpers/services.ts';
import { waitFor } from '../helpers/wait.ts';

const log = createLogger({ level: 'error' });
const database = 'spindle_test';
const collection = `docs_${process.pid}_${Date.now()}`;
let reader: MongoClient;

before(async () => {
  ensureFerretDb();
  reader = new MongoClient('mongodb://127.0.0.1:27017/', { serverSelectionTimeoutMS: 5000 });
  await reader.connect();
});

after(async () => {
  await reader.db(database).collection(collection).drop().catch(() => {});
  await reader.close();
});

function fieldOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof SourceConfigError, `expected a SourceConfigError, got ${String(err)}`);
    return err.field;
  }
  assert.fail('expected the config to be refused');
}

describe('parseMongoConfig', () => {
  test('a URL gives hosts, credentials, database and options; the connection string has no credentials', () => {
    const c = parseMongoConfig({ url: 'mongodb://u:p%40ss@a:27017,b:27018/app?authSource=admin&replicaSet=rs0&tls=true' });
    assert.deepEqual(
      { hosts: c.hosts, username: c.username, password: c.password, database: c.database, authSource: c.authSource, options: c.options },
      { hosts: ['a:27017', 'b:27018'], username: 'u', password: 'p@ss', database: 'app', authSource: 'admin', options: { replicaSet: 'rs0' } },
    );
    assert.deepEqual(c.tls, { rejectUnauthorized: true });
    assert.equal(mongoConnectionString(c), 'mongodb://a:27017,b:27018/app?replicaSet=rs0');
    assert.equal(c.poolSize, 8);
  });

  test('host/port fields', () => {
    const c = parseMongoConfig({ host: 'h', database: 'd', poolSize: 3 });
    assert.deepEqual(c.hosts, ['h:27017']);
    assert.equal(c.poolSize, 3);
    assert.equal(c.srv, false);
  });

  test('mistakes name their field', () => {
    assert.equal(fieldOf(() => parseMongoConfig({ database: 'd' })), 'config.host');
    assert.equal(fieldOf(() => parseMongoConfig({ host: 'h' })), 'config.database');
    assert.equal(fieldOf(() => parseMongoConfig({ url: 'postgres://h/d' })), 'config.url');
    assert.equal(fieldOf(() => parseMongoConfig({ url: 'mongodb://h/d', host: 'h' })), 'config.url');
    assert.equal(fieldOf(() => parseMongoConfig({ url: 'mongodb+srv://h:1/d' })), 'config.url');
    assert.equal(fieldOf(() => parseMongoConfig({ host: 'h', database: 'a.b' })), 'config.database');
    assert.equal(fieldOf(() => parseMongoConfig({ host: 'h', database: 'd', password: 'p' })), 'config.username');
    assert.equal(fieldOf(() => parseMongoConfig({ host: 'h', database: 'd', port: 0 })), 'config.port');
    assert.equal(fieldOf(() => parseMongoConfig({ host: 'h', database: 'd', authSource: 1 })), 'config.authSource');
  });
});

describe('mongodb source check()', () => {
  test('ok against the real server', async () => {
    const s = createMongoSource('m1', parseMongoConfig({ url: `mongodb://127.0.0.1:27017/${database}` }), log);
    try {
      const r = await s.check(5000);
      assert.equal(r.ok, true, r.message);
    } finally {
      await s.close();
    }
  });

  test('a closed port is refused', async () => {
    const s = createMongoSource('m2', parseMongoConfig({ host: '127.0.0.1', port: await closedPort(), database }), log);
    try {
      const r = await s.check(1500);
      assert.equal(r.ok, false);
      assert.equal(r.failure, 'refused', r.message);
    } finally {
      await s.close();
    }
  });

  test('an unresolvable host is dns', async () => {
    const s = createMongoSource('m3', parseMongoConfig({ host: 'nonexistent.invalid', database }), log);
    try {
      const r = await s.check(1500);
      assert.equal(r.ok, false);
      assert.equal(r.failure, 'dns', r.message);
    } finally {
      await s.close();
    }
  });
});

describe('mongodb source operations', () => {
  let source: MongoSource;
  before(() => {
    source = createMongoSource('ops', parseMongoConfig({ host: '127.0.0.1', port: 27017, database, poolSize: 2 }), log);
  });
  after(() => source.close());

  test('insertMany writes documents a separate client finds', async () => {
    const docs = [
      { _id: 'a', topic: 't/1', n: 1 },
      { _id: 'b', topic: 't/2', n: 2, nested: { ok: true } },
    ];
    await source.insertMany(collection, docs);
    assert.deepEqual(docs[0], { _id: 'a', topic: 't/1', n: 1 }, 'the caller\'s documents are not changed');
    const found = await reader.db(database).collection(collection).find({}).sort({ _id: 1 }).toArray();
    assert.deepEqual(found, docs);
    assert.deepEqual(await source.findOne(collection, { topic: 't/2' }), docs[1]);
    assert.equal(await source.findOne(collection, { topic: 'none' }), null);
    await waitFor(() => source.health().state === 'up', { message: 'the source is up' });
  });

  test('find answers at most `limit` matching documents, in insertion order', async () => {
    await source.insertMany(collection, [
      { _id: 'f1', group: 'g', n: 1 },
      { _id: 'f2', group: 'g', n: 2 },
      { _id: 'f3', group: 'g', n: 3 },
      { _id: 'f4', group: 'other', n: 4 },
    ]);
    assert.deepEqual((await source.find(collection, { group: 'g' }, 10)).map((d) => d._id), ['f1', 'f2', 'f3']);
    assert.deepEqual((await source.find(collection, { group: 'g' }, 2)).map((d) => d._id), ['f1', 'f2']);
    assert.deepEqual(await source.find(collection, { group: 'none' }, 10), []);
  });

  test('a duplicate key is non-transient and leaves the source up', async () => {
    await assert.rejects(source.insertMany(collection, [{ _id: 'a', n: 3 }]), (err: unknown) => {
      assert.ok(err instanceof SourceError, String(err));
      assert.equal(err.transient, false, err.message);
      assert.equal(err.kind, 'database');
      return true;
    });
    assert.equal(source.health().state, 'up');
  });

  test('at most poolSize operations are in flight', async () => {
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, source.health().inFlight)), 1);
    try {
      await Promise.all(Array.from({ length: 8 }, (_, i) => source.insertMany(collection, [{ _id: `p${i}`, i }])));
    } finally {
      clearInterval(sampler);
    }
    assert.ok(peak <= 2, `peak in flight ${peak}`);
    assert.equal(await reader.db(database).collection(collection).countDocuments({ i: { $gte: 0 } }), 8);
  });
});

describe('mongodb source with its server unreachable', () => {
  test('goes down and fails fast with transient errors', async () => {
    const s = createMongoSource('down', parseMongoConfig({ host: '127.0.0.1', port: await closedPort(), database, connectTimeout: 500, requestTimeout: 1000 }), log);
    try {
      const started = Date.now();
      const err = await s.insertMany('c', [{ x: 1 }]).then(
        () => assert.fail('the insert should fail'),
        (e: unknown) => e,
      );
      assert.ok(Date.now() - started < 1500, `failed after ${Date.now() - started} ms`);
      assert.ok(err instanceof SourceError);
      assert.equal(err.transient, true);
      await waitFor(() => s.health().state === 'down', { message: 'the source goes down' });
      const again = Date.now();
      await assert.rejects(s.findOne('c', {}), (e: unknown) => e instanceof SourceError && e.transient);
      assert.ok(Date.now() - again < 200, 'refused at once while down');
    } finally {
      await s.close();
    }
  });
});
