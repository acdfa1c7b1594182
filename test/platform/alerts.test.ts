// The alert engine on a MemoryStore with a scripted signal source and a controlled clock: firing
// once and deduplicating, resolving, counter rate and increase across a reset, platform rules per
// organization, application narrowing, rule changes, status changes, persistence across engines,
// validation, the maxAlerts bound, the timer and the metrics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { Registry } from 'prom-client';

import { createLogger } from '../../src/log/index.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import {
  ALERT_KIND,
  AlertEngine,
  AlertRuleError,
  RULE_KIND,
  normalizeAlertRule,
  normalizeAlertStatus,
  registerAlertMetrics,
  signalAllowed,
  type AlertRecord,
  type AlertRuleRecord,
} from '../../src/platform/alerts/index.ts';
import { waitFor } from '../helpers/wait.ts';

/** Lines the engine logs (errors only), kept for the tests that expect one. */
const logged: string[] = [];
const log = createLogger({
  level: 'error',
  name: 'alerts-test',
  stream: new Writable({
    write(chunk: Buffer, _encoding, done) {
      logged.push(chunk.toString());
      done();
    },
  }),
});
const T0 = 1_700_000_000_000;

interface Note {
  kind: 'firing' | 'resolved';
  rule: AlertRuleRecord;
  alert: AlertRecord;
}

/** An engine whose read() answers `signals` at the clock `h.t`, and which records notifications. */
function harness(options: { store?: MemoryStore; maxAlerts?: number; t?: number } = {}) {
  const store = options.store ?? new MemoryStore();
  const h = {
    store,
    t: options.t ?? T0,
    broker: {} as Record<string, number>,
    organizations: new Map<string, Record<string, number>>(),
    applications: new Map<string, Record<string, number>>(),
    notes: [] as Note[],
    puts: 0,
    readError: null as Error | null,
    engine: null as unknown as AlertEngine,
    /** Advances the clock by `ms` and evaluates. */
    async step(ms = 10_000): Promise<void> {
      h.t += ms;
      await h.engine.evaluate();
    },
    async addRule(input: Record<string, unknown>, scope: { organizationId?: string | null; applicationId?: string | null } = {}): Promise<AlertRuleRecord> {
      const time = new Date(h.t).toISOString();
      return h.engine.addRule({
        id: `rule-${Math.random().toString(36).slice(2)}`,
        ...normalizeAlertRule(input),
        organizationId: scope.organizationId ?? null,
        applicationId: scope.applicationId ?? null,
        createTime: time,
        updateTime: time,
      });
    },
    count(kind: 'firing' | 'resolved'): number {
      return h.notes.filter((n) => n.kind === kind).length;
    },
  };
  const put = store.putAdmin.bind(store);
  store.putAdmin = (kind, id, doc) => {
    if (kind === ALERT_KIND) h.puts++;
    return put(kind, id, doc);
  };
  h.engine = new AlertEngine(store, log, {
    read: () => {
      if (h.readError) throw h.readError;
      return { time: h.t, broker: { ...h.broker }, organizations: new Map(h.organizations), applications: new Map(h.applications) };
    },
    notify: (rule, alert, kind) => h.notes.push({ kind, rule, alert }),
    maxAlerts: options.maxAlerts,
    now: () => h.t,
  });
  return h;
}

test('a gauge over its threshold fires once, deduplicates over many evaluations with bounded writes, then resolves', async () => {
  const h = harness();
  const rule = await h.addRule({ name: 'too many clients', signal: 'connections', aggregation: 'max', window: 60, operator: '>', threshold: 100, severity: 'critical' });
  h.broker.connections = 50;
  await h.step();
  assert.equal(h.engine.listAlerts().length, 0);

  h.broker.connections = 120;
  await h.step();
  const [alert] = h.engine.listAlerts();
  assert.equal(alert.state, 'firing');
  assert.equal(alert.status, 'unhandled');
  assert.equal(alert.value, 120);
  assert.equal(alert.severity, 'critical');
  assert.equal(alert.ruleId, rule.id);
  assert.equal(alert.organizationId, null);
  assert.equal(alert.message, 'connections max 120 > 100 over 60 s');
  assert.equal(h.count('firing'), 1);
  assert.equal(h.notes[0].alert.id, alert.id);
  assert.equal(h.notes[0].rule.id, rule.id);

  // Twenty more evaluations one second apart while it stays over: one alert, one notification,
  // occurrences counted, and the store written at most every 10 s.
  h.broker.connections = 130;
  const putsBefore = h.puts;
  for (let i = 0; i < 20; i++) await h.step(1_000);
  assert.equal(h.engine.listAlerts().length, 1);
  assert.equal(h.count('firing'), 1);
  const still = h.engine.getAlert(alert.id)!;
  assert.equal(still.occurrences, 21);
  assert.equal(still.value, 130);
  assert.equal(still.lastTime, new Date(h.t).toISOString());
  assert.ok(h.puts - putsBefore <= 3, `${h.puts - putsBefore} writes for 20 deduplicated evaluations`);
  assert.ok(h.puts - putsBefore >= 1, 'the firing alert is written again within the interval');

  // Back under: the max over 60 s still sees 130 until it leaves the window.
  h.broker.connections = 50;
  await h.step(10_000);
  assert.equal(h.engine.getAlert(alert.id)!.state, 'firing');
  await h.step(55_000);
  const resolved = h.engine.getAlert(alert.id)!;
  assert.equal(resolved.state, 'resolved');
  assert.equal(resolved.resolvedTime, new Date(h.t).toISOString());
  assert.equal(resolved.occurrences, 22);
  assert.equal(h.count('resolved'), 1);
  assert.equal(h.notes[1].alert.state, 'resolved');
  const stored = await h.store.getAdmin<AlertRecord>(ALERT_KIND, alert.id);
  assert.equal(stored?.state, 'resolved');
  assert.equal(stored?.occurrences, 22);

  // Staying under: nothing more.
  await h.step();
  await h.step();
  assert.equal(h.notes.length, 2);
  // Over again: a new alert.
  h.broker.connections = 500;
  await h.step();
  assert.equal(h.engine.listAlerts().length, 2);
  assert.equal(h.engine.listAlerts()[0].state, 'firing', 'newest first');
  assert.equal(h.count('firing'), 2);
});

test('counter rate and increase, across a counter reset', async () => {
  const h = harness();
  const rate = await h.addRule({ name: 'drops', signal: 'messages.dropped', aggregation: 'rate', window: 60, operator: '>', threshold: 10 });
  const increase = await h.addRule({ name: 'auth', signal: 'auth.failures', aggregation: 'increase', window: 60, operator: '>=', threshold: 50 });
  h.broker['messages.dropped'] = 1000;
  h.broker['auth.failures'] = 100;
  await h.step();
  // One sample: a rate or increase has no value yet, so nothing fires whatever the level.
  assert.equal(h.engine.listAlerts().length, 0);

  h.broker['messages.dropped'] = 1050; // 50 in 10 s: 5/s
  h.broker['auth.failures'] = 130; // +30
  await h.step();
  assert.equal(h.engine.listAlerts().length, 0);

  h.broker['messages.dropped'] = 20; // reset: +20, so 70 in 20 s = 3.5/s
  h.broker['auth.failures'] = 10; // reset: +10 (40)
  await h.step();
  assert.equal(h.engine.listAlerts().length, 0, 'a reset is not a huge negative or positive jump');

  h.broker['messages.dropped'] = 400; // +380: 450 in 30 s = 15/s
  h.broker['auth.failures'] = 25; // +15 (55)
  await h.step();
  const byRule = new Map(h.engine.listAlerts().map((a) => [a.ruleId, a]));
  assert.equal(byRule.get(rate.id)?.value, 15);
  assert.equal(byRule.get(rate.id)?.message, 'messages.dropped rate 15/s > 10 over 60 s');
  assert.equal(byRule.get(increase.id)?.value, 55);
  assert.equal(h.count('firing'), 2);

  // The counters stop: after the window passes the rate and the increase fall to 0 and resolve.
  for (let i = 0; i < 7; i++) await h.step();
  assert.deepEqual(h.engine.listAlerts().map((a) => a.state), ['resolved', 'resolved']);
  assert.equal(h.count('resolved'), 2);
});

test('a platform rule on a tenant signal evaluates each organization; a missing organization resolves', async () => {
  const h = harness();
  await h.addRule({ name: 'tenant load', signal: 'tenant.connections', aggregation: 'last', operator: '>', threshold: 10 });
  h.organizations.set('o1', { 'tenant.connections': 5 });
  h.organizations.set('o2', { 'tenant.connections': 20 });
  await h.step();
  let alerts = h.engine.listAlerts();
  assert.equal(alerts.length, 1);
  assert.equal(alerts[0].organizationId, 'o2');
  assert.equal(alerts[0].message, 'tenant.connections last 20 > 10 over 60 s (organization o2)');

  h.organizations.set('o1', { 'tenant.connections': 15 });
  await h.step();
  alerts = h.engine.listAlerts({ state: 'firing' });
  assert.deepEqual(alerts.map((a) => a.organizationId), ['o1', 'o2']);
  assert.equal(h.count('firing'), 2);
  assert.equal(h.engine.listAlerts({ organizationId: 'o1' }).length, 1);
  assert.equal(h.engine.listAlerts({ organizationId: null }).length, 0, 'no platform-level alert');

  // o2 leaves the sample (no values): its alert resolves; o1's stays firing, not duplicated.
  h.organizations.delete('o2');
  await h.step();
  assert.equal(h.engine.listAlerts({ organizationId: 'o2' })[0].state, 'resolved');
  assert.equal(h.engine.listAlerts({ organizationId: 'o1' })[0].state, 'firing');
  assert.equal(h.engine.listAlerts().length, 2);
  assert.equal(h.count('resolved'), 1);

  // An organization's own rule sees only its own values.
  const mine = await h.addRule({ name: 'mine', signal: 'tenant.connections', operator: '>', threshold: 1 }, { organizationId: 'o3' });
  await h.step();
  assert.equal(h.engine.listAlerts({ organizationId: 'o3' }).length, 0, 'o3 has no values: nothing fires');
  h.organizations.set('o3', { 'tenant.connections': 2 });
  await h.step();
  const o3 = h.engine.listAlerts({ organizationId: 'o3' });
  assert.equal(o3.length, 1, "o3's own rule fires (the platform rule's threshold is 10)");
  assert.equal(o3[0].ruleId, mine.id);
  assert.equal(h.engine.listAlerts({ organizationId: 'o1', state: 'firing' }).length, 1, "o1's values do not fire o3's rule");
});

test('broker signals are for platform rules only', async () => {
  const h = harness();
  assert.equal(signalAllowed('connections', null), true);
  assert.equal(signalAllowed('connections', 'o1'), false);
  assert.equal(signalAllowed('tenant.connections', 'o1'), true);
  assert.equal(signalAllowed('nope', null), false);
  await assert.rejects(
    h.addRule({ name: 'x', signal: 'connections', operator: '>', threshold: 1 }, { organizationId: 'o1' }),
    (err: unknown) => err instanceof AlertRuleError && err.field === 'signal',
  );
  assert.equal(h.engine.listRules().length, 0);
});

test('an application rule sees only its application', async () => {
  const h = harness();
  const rule = await h.addRule({ name: 'app', signal: 'tenant.connections', aggregation: 'last', operator: '>=', threshold: 10 }, { organizationId: 'o1', applicationId: 'a1' });
  h.organizations.set('o1', { 'tenant.connections': 70 });
  h.applications.set('a1', { 'tenant.connections': 5 });
  h.applications.set('a2', { 'tenant.connections': 50 });
  await h.step();
  assert.equal(h.engine.listAlerts().length, 0, "neither the organization's nor another application's values count");
  h.applications.set('a1', { 'tenant.connections': 20 });
  await h.step();
  const [alert] = h.engine.listAlerts();
  assert.equal(alert.ruleId, rule.id);
  assert.equal(alert.organizationId, 'o1');
  assert.equal(alert.applicationId, 'a1');
  assert.equal(alert.value, 20);
  assert.match(alert.message, /\(application a1\)$/);
  h.applications.set('a1', { 'tenant.connections': 3 });
  await h.step();
  assert.equal(h.engine.getAlert(alert.id)!.state, 'resolved');
  assert.deepEqual(h.notes.map((n) => n.kind), ['firing', 'resolved']);

  // Firing again, then the application's value goes missing from the sample: resolved (its
  // last value, still in the window, does not keep it firing).
  h.applications.set('a1', { 'tenant.connections': 30 });
  await h.step();
  assert.equal(h.engine.listAlerts({ state: 'firing' }).length, 1);
  h.applications.set('a1', {});
  await h.step();
  assert.equal(h.engine.listAlerts({ state: 'firing' }).length, 0);
  h.applications.set('a1', { 'tenant.connections': 30 });
  await h.step();
  h.applications.delete('a1');
  await h.step();
  assert.equal(h.engine.listAlerts({ state: 'firing' }).length, 0);
  assert.deepEqual(h.notes.map((n) => n.kind), ['firing', 'resolved', 'firing', 'resolved', 'firing', 'resolved']);
});

test('disabling, deleting and re-thresholding a rule resolve its firing alert', async () => {
  const h = harness();
  h.broker.connections = 200;
  h.broker['workers.down'] = 1;
  const a = await h.addRule({ name: 'a', signal: 'connections', operator: '>', threshold: 100 });
  const b = await h.addRule({ name: 'b', signal: 'workers.down', operator: '>', threshold: 0 });
  const c = await h.addRule({ name: 'c', signal: 'connections', operator: '>', threshold: 150 });
  await h.step();
  assert.equal(h.engine.listAlerts({ state: 'firing' }).length, 3);
  assert.equal(h.count('firing'), 3);

  // Disabled: resolved at once, and not evaluated any more.
  const disabled = await h.engine.updateRule({ ...a, enabled: false });
  assert.equal(disabled?.enabled, false);
  assert.equal(h.engine.listAlerts({ ruleId: a.id })[0].state, 'resolved');
  await h.step();
  assert.equal(h.engine.listAlerts({ ruleId: a.id }).length, 1);

  // Deleted: resolved, the rule gone from memory and store, its alert kept in the history.
  assert.equal(await h.engine.deleteRule(b.id), true);
  assert.equal(await h.engine.deleteRule(b.id), false);
  assert.equal(h.engine.getRule(b.id), undefined);
  assert.equal(await h.store.getAdmin(RULE_KIND, b.id), undefined);
  assert.equal(h.engine.listAlerts({ ruleId: b.id })[0].state, 'resolved');

  // A threshold still met: stays firing with the new threshold; one no longer met: resolved.
  await h.engine.updateRule({ ...c, threshold: 180, name: 'c2' });
  let alert = h.engine.listAlerts({ ruleId: c.id })[0];
  assert.equal(alert.state, 'firing');
  assert.equal(alert.threshold, 180);
  assert.equal(alert.ruleName, 'c2');
  assert.equal(alert.message, 'connections last 200 > 180 over 60 s');
  await h.engine.updateRule({ ...c, threshold: 250 });
  alert = h.engine.listAlerts({ ruleId: c.id })[0];
  assert.equal(alert.state, 'resolved');
  assert.equal(h.count('resolved'), 3);
  assert.equal(h.count('firing'), 3, 'no rule change fired anything');
  assert.equal(await h.engine.updateRule({ ...c, id: 'nope' }), undefined);
});

test('status changes are recorded and persisted; a bad status names the field', async () => {
  const h = harness();
  h.broker.connections = 200;
  await h.addRule({ name: 'a', signal: 'connections', operator: '>', threshold: 100 });
  await h.step();
  const [alert] = h.engine.listAlerts();
  const handled = await h.engine.setStatus(alert.id, 'handled', 'alice');
  assert.equal(handled?.status, 'handled');
  assert.equal(handled?.statusChangedBy, 'alice');
  assert.equal(handled?.statusTime, new Date(h.t).toISOString());
  assert.equal(handled?.state, 'firing', 'handling does not resolve');
  assert.equal((await h.store.getAdmin<AlertRecord>(ALERT_KIND, alert.id))?.status, 'handled');
  assert.equal(h.engine.listAlerts({ status: 'handled' }).length, 1);
  assert.equal(h.engine.listAlerts({ status: 'unhandled' }).length, 0);
  await h.step();
  assert.equal(h.engine.getAlert(alert.id)?.status, 'handled', 'an evaluation keeps the status');
  h.t += 1000;
  assert.equal((await h.engine.setStatus(alert.id, 'ignored', 'bob'))?.statusChangedBy, 'bob');
  assert.equal(await h.engine.setStatus('nope', 'handled', 'alice'), undefined);
  assert.equal(normalizeAlertStatus('handled'), 'handled');
  assert.throws(() => normalizeAlertStatus('done'), (err: unknown) => err instanceof AlertRuleError && err.field === 'status');
  await assert.rejects(h.engine.setStatus(alert.id, 'done' as never, 'x'), (err: unknown) => err instanceof AlertRuleError && err.field === 'status');
});

test('a new engine on the same store restores rules and a firing alert, and does not fire it again', async () => {
  const store = new MemoryStore();
  const h1 = harness({ store });
  h1.broker.connections = 200;
  h1.broker['messages.dropped'] = 0;
  const gauge = await h1.addRule({ name: 'g', signal: 'connections', operator: '>', threshold: 100 });
  const rate = await h1.addRule({ name: 'r', signal: 'messages.dropped', aggregation: 'rate', window: 60, operator: '>', threshold: 1 });
  await h1.step();
  h1.broker['messages.dropped'] = 100;
  await h1.step(1_000);
  await h1.step(1_000); // a deduplicated evaluation, not written yet (within 10 s)
  assert.equal(h1.engine.listAlerts({ state: 'firing' }).length, 2);
  await h1.engine.close(); // writes what changed since the last write
  const saved = h1.engine.listAlerts();

  const h2 = harness({ store, t: h1.t });
  await h2.engine.load();
  assert.deepEqual(h2.engine.listRules().map((r) => r.id).sort(), [gauge.id, rate.id].sort());
  assert.deepEqual(h2.engine.listAlerts(), saved, 'alerts restored as they were, occurrences included');
  // The rate rule has one sample after the restart (no value yet): its alert neither resolves nor
  // fires again; the gauge's is found firing again and deduplicated.
  h2.broker = { connections: 300, 'messages.dropped': 100 };
  await h2.step(1_000);
  assert.equal(h2.engine.listAlerts().length, 2);
  assert.equal(h2.engine.listAlerts({ state: 'firing' }).length, 2);
  assert.equal(h2.notes.length, 0, 'no notification for alerts already firing');
  assert.equal(h2.engine.listAlerts({ ruleId: gauge.id })[0].occurrences, saved.find((a) => a.ruleId === gauge.id)!.occurrences + 1);
  h2.broker['messages.dropped'] = 100; // no increase: the rate falls to 0 and resolves
  await h2.step(1_000);
  assert.equal(h2.engine.listAlerts({ ruleId: rate.id })[0].state, 'resolved');
  assert.deepEqual(h2.notes.map((n) => [n.kind, n.rule.id]), [['resolved', rate.id]]);
});

test('load resolves a firing alert whose rule is gone, and leaves out invalid documents', async () => {
  const store = new MemoryStore();
  const h1 = harness({ store });
  h1.broker.connections = 200;
  const rule = await h1.addRule({ name: 'g', signal: 'connections', operator: '>', threshold: 100 });
  await h1.step();
  // The rule vanishes behind the engine's back (a crash between the two writes of a delete).
  await store.deleteAdmin(RULE_KIND, rule.id);
  await store.putAdmin(RULE_KIND, 'bad', { name: '', signal: 'connections' });
  await store.putAdmin(ALERT_KIND, 'bad', { id: 'bad' });
  const h2 = harness({ store, t: h1.t });
  await h2.engine.load();
  assert.equal(h2.engine.listRules().length, 0);
  assert.equal(h2.engine.listAlerts().length, 1);
  await h2.step();
  assert.equal(h2.engine.listAlerts()[0].state, 'resolved');
  assert.equal(h2.notes.length, 0, 'no rule to notify with');
  assert.ok(logged.some((l) => l.includes('stored alert rule is not valid') && l.includes('"bad"')));
  assert.ok(logged.some((l) => l.includes('stored alert is not valid') && l.includes('"bad"')));
});

test('validation errors name the field', () => {
  const ok = { name: 'n', signal: 'connections', operator: '>', threshold: 1 };
  const cases: [Record<string, unknown>, string][] = [
    [{ ...ok, signal: 'nope' }, 'signal'],
    [{ ...ok, signal: undefined }, 'signal'],
    [{ ...ok, aggregation: 'rate' }, 'aggregation'],
    [{ ...ok, signal: 'messages.sent', aggregation: 'max' }, 'aggregation'],
    [{ ...ok, aggregation: 'median' }, 'aggregation'],
    [{ ...ok, window: 0 }, 'window'],
    [{ ...ok, window: 86_401 }, 'window'],
    [{ ...ok, window: 1.5 }, 'window'],
    [{ ...ok, window: '60' }, 'window'],
    [{ ...ok, threshold: 'x' }, 'threshold'],
    [{ ...ok, threshold: Infinity }, 'threshold'],
    [{ ...ok, threshold: undefined }, 'threshold'],
    [{ ...ok, operator: '=>' }, 'operator'],
    [{ ...ok, severity: 'fatal' }, 'severity'],
    [{ ...ok, channelIds: 'c1' }, 'channelIds'],
    [{ ...ok, channelIds: ['c1', 2] }, 'channelIds[1]'],
    [{ ...ok, channelIds: Array.from({ length: 21 }, (_, i) => `c${i}`) }, 'channelIds'],
    [{ ...ok, name: '' }, 'name'],
    [{ ...ok, name: '   ' }, 'name'],
    [{ ...ok, name: 'x'.repeat(129) }, 'name'],
    [{ ...ok, name: undefined }, 'name'],
    [{ ...ok, enabled: 'yes' }, 'enabled'],
    [{ ...ok, description: 'x'.repeat(1025) }, 'description'],
    [{ ...ok, colour: 'red' }, 'colour'],
  ];
  for (const [input, field] of cases) {
    assert.throws(
      () => normalizeAlertRule(input),
      (err: unknown) => err instanceof AlertRuleError && err.field === field && err.message.length > 0,
      `${JSON.stringify(input)} should be refused on ${field}`,
    );
  }
  assert.throws(() => normalizeAlertRule([]), (err: unknown) => err instanceof AlertRuleError && err.field === 'body');

  // Defaults, route fields ignored, duplicate channels collapsed.
  assert.deepEqual(normalizeAlertRule({ ...ok, organizationId: 'o1', channelIds: ['c1', 'c1', 'c2'] }), {
    name: 'n',
    signal: 'connections',
    aggregation: 'last',
    window: 60,
    operator: '>',
    threshold: 1,
    severity: 'warning',
    channelIds: ['c1', 'c2'],
    enabled: true,
    description: '',
  });
  assert.equal(normalizeAlertRule({ ...ok, signal: 'messages.sent' }).aggregation, 'rate');

  // An update keeps what it leaves out; a new signal of another kind needs a fitting aggregation.
  const existing: AlertRuleRecord = {
    id: 'r',
    organizationId: null,
    applicationId: null,
    createTime: '',
    updateTime: '',
    ...normalizeAlertRule({ ...ok, aggregation: 'max', window: 300, severity: 'info', channelIds: ['c'] }),
  };
  const updated = normalizeAlertRule({ threshold: 5 }, existing);
  assert.equal(updated.threshold, 5);
  assert.equal(updated.aggregation, 'max');
  assert.equal(updated.window, 300);
  assert.deepEqual(updated.channelIds, ['c']);
  assert.equal(normalizeAlertRule({ signal: 'messages.sent' }, existing).aggregation, 'rate', 'the old aggregation does not fit a counter: its default');
  assert.throws(() => normalizeAlertRule({ signal: 'messages.sent', aggregation: 'avg' }, existing), (err: unknown) => err instanceof AlertRuleError && err.field === 'aggregation');
});

test('maxAlerts: the oldest resolved alerts are pruned (memory and store); when all are firing a new one is refused', async () => {
  const h = harness({ maxAlerts: 3 });
  await h.addRule({ name: 'flap', signal: 'connections', operator: '>', threshold: 100 });
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    h.broker.connections = 200;
    await h.step();
    ids.push(h.engine.listAlerts({ state: 'firing' })[0].id);
    h.broker.connections = 0;
    await h.step();
  }
  assert.equal(h.count('firing'), 5);
  assert.equal(h.count('resolved'), 5);
  assert.deepEqual(h.engine.listAlerts().map((a) => a.id), ids.slice(2).reverse(), 'the three newest kept, newest first');
  assert.deepEqual((await h.store.listAdmin<AlertRecord>(ALERT_KIND)).map((d) => d.id).sort(), ids.slice(2).sort());
  assert.equal(h.engine.stats().pruned, 2);

  // Three organizations firing fill the bound; a fourth is refused (not notified) and counted.
  const h2 = harness({ maxAlerts: 3 });
  await h2.addRule({ name: 'tenants', signal: 'tenant.connections', operator: '>', threshold: 0 });
  for (const o of ['o1', 'o2', 'o3', 'o4']) h2.organizations.set(o, { 'tenant.connections': 1 });
  await h2.step();
  assert.equal(h2.engine.listAlerts().length, 3);
  assert.equal(h2.count('firing'), 3);
  assert.equal(h2.engine.stats().refused, 1);
  // Once one resolves, the refused organization gets its alert (the resolved one makes room).
  h2.organizations.set('o1', { 'tenant.connections': 0 });
  await h2.step();
  assert.equal(h2.engine.listAlerts({ state: 'firing' }).length, 3);
  assert.equal(h2.count('firing'), 4);
});

test('the timer evaluates, logs and survives a failing read, and close stops it; metrics count', async () => {
  const h = harness();
  h.t = Date.now();
  const registry = new Registry();
  const stop = registerAlertMetrics(registry, h.engine);
  await h.addRule({ name: 'a', signal: 'connections', operator: '>', threshold: 100 });
  h.broker.connections = 200;
  h.readError = new Error('signal source down');
  h.engine.start(20);
  await waitFor(() => h.engine.stats().evaluationErrors >= 2, { message: 'failing evaluations counted' });
  assert.ok(logged.some((l) => l.includes('alert evaluation failed') && l.includes('signal source down')));
  h.readError = null;
  await waitFor(() => h.count('firing') === 1, { message: 'the timer fires the alert once the read works' });
  await waitFor(() => h.engine.stats().evaluations >= h.engine.stats().evaluationErrors + 3, { message: 'more evaluations' });
  assert.equal(h.count('firing'), 1, 'deduplicated across timer evaluations');
  await h.engine.close();
  const after = h.engine.stats().evaluations;
  const text = await registry.metrics();
  assert.match(text, /^spindle_alerts_firing 1$/m);
  assert.match(text, /^spindle_alerts_fired_total 1$/m);
  assert.match(text, /^spindle_alerts_resolved_total 0$/m);
  assert.match(text, new RegExp(`^spindle_alert_evaluations_total ${after}$`, 'm'));
  assert.match(text, /^spindle_alert_evaluation_errors_total [1-9]\d*$/m);
  assert.match(text, new RegExp(`^spindle_alert_evaluation_duration_seconds_count ${after}$`, 'm'));
  assert.match(text, /^spindle_alerts_pruned_total 0$/m);
  assert.match(text, /^spindle_alert_rules 1$/m);
  stop();
  // Closed: a marker evaluation run by hand is the only one after close.
  await h.engine.evaluate();
  assert.equal(h.engine.stats().evaluations, after + 1);
});

test('a throwing notify and a refused alert write are logged and counted; the write is retried', async () => {
  const store = new MemoryStore();
  let failWrites = false;
  const put = store.putAdmin.bind(store);
  store.putAdmin = async (kind, id, doc) => {
    if (failWrites && kind === ALERT_KIND) throw new Error('disk full');
    return put(kind, id, doc);
  };
  let t = T0;
  const engine = new AlertEngine(store, log, {
    read: () => ({ time: t, broker: { connections: 200 }, organizations: new Map(), applications: new Map() }),
    notify: () => {
      throw new Error('mail server down');
    },
    now: () => t,
  });
  const time = new Date(t).toISOString();
  await engine.addRule({ id: 'r', ...normalizeAlertRule({ name: 'a', signal: 'connections', operator: '>', threshold: 100 }), organizationId: null, applicationId: null, createTime: time, updateTime: time });
  failWrites = true;
  await engine.evaluate();
  const [alert] = engine.listAlerts();
  assert.equal(alert.state, 'firing', 'the alert is kept though notify threw and the write failed');
  assert.equal(engine.stats().notifyErrors, 1);
  assert.equal(engine.stats().storeErrors, 1);
  assert.ok(logged.some((l) => l.includes('alert notification failed') && l.includes('mail server down')));
  assert.ok(logged.some((l) => l.includes('alert not written to the store') && l.includes('disk full')));
  assert.equal(await store.getAdmin(ALERT_KIND, alert.id), undefined);
  // The store is back: the next evaluation 10 s on writes the alert again.
  failWrites = false;
  t += 10_000;
  await engine.evaluate();
  assert.equal((await store.getAdmin<AlertRecord>(ALERT_KIND, alert.id))?.occurrences, 2);
  assert.equal(engine.stats().notifyErrors, 1, 'no notification for a deduplicated evaluation');
});
