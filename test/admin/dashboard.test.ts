// Saved dashboards: GET and POST /monitor/dashboard (save by name), delete, and every refusal
// (401, 403 for a viewer, 400 naming the field, 404), which must leave the saved ones unchanged.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { waitFor } from '../helpers/wait.ts';

let b: AdminBroker;
before(async () => {
  b = await startAdminBroker({ store: { storeType: 'MEMORY' } });
});
after(() => b.stop());

const traffic = {
  name: 'traffic',
  panels: [
    { title: 'Connections', type: 'line', metric: 'svc_endpoint_connections_current' },
    { title: 'Messages in', type: 'stat', metric: 'svc_endpoint_messages_received_rate' },
  ],
};

async function saved(): Promise<{ name: string; panels: unknown[]; createTime: string; updateTime: string }[]> {
  const r = await b.api('GET', '/monitor/dashboard');
  assert.equal(r.status, 200);
  return r.json.data;
}

test('no dashboards at first; a saved one is listed with id and times', async () => {
  assert.deepEqual(await saved(), []);
  const r = await b.api('POST', '/monitor/dashboard', { body: traffic });
  assert.equal(r.status, 200);
  assert.equal(r.json.code, 200);
  assert.equal(r.json.data.id, 'traffic');
  assert.deepEqual(r.json.data.panels, traffic.panels);
  assert.ok(!Number.isNaN(Date.parse(r.json.data.createTime)));
  const list = await saved();
  assert.equal(list.length, 1);
  assert.equal(list[0].name, 'traffic');
  assert.deepEqual(list[0].panels, traffic.panels);
});

test('saving under the same name replaces the panels and keeps createTime', async () => {
  const before = (await saved()).find((d) => d.name === 'traffic')!;
  // Times have millisecond resolution: let the clock move past the first save.
  await waitFor(() => Date.now() > Date.parse(before.updateTime), { interval: 1, message: 'the clock to pass the first save' });
  const panels = [{ title: 'Sessions', type: 'gauge', metric: 'svc_endpoint_sessions_current' }];
  const r = await b.api('POST', '/monitor/dashboard', { body: { name: 'traffic', panels } });
  assert.equal(r.status, 200);
  const list = await saved();
  assert.equal(list.filter((d) => d.name === 'traffic').length, 1);
  const after = list.find((d) => d.name === 'traffic')!;
  assert.deepEqual(after.panels, panels);
  assert.equal(after.createTime, before.createTime);
  assert.ok(after.updateTime > before.updateTime);
});

test('a record read back from GET can be saved as it is', async () => {
  const [first] = await saved();
  const r = await b.api('POST', '/monitor/dashboard', { body: first });
  assert.equal(r.status, 200);
});

test('bad dashboards are 400 naming the field, and nothing is saved', async () => {
  const before = await saved();
  const cases: [unknown, string][] = [
    [{ panels: [] }, 'name'],
    [{ name: '  ', panels: [] }, 'name'],
    [{ name: 7, panels: [] }, 'name'],
    [{ name: 'x' }, 'panels'],
    [{ name: 'x', panels: {} }, 'panels'],
    [{ name: 'x', panels: ['line'] }, 'panels[0]'],
    [{ name: 'x', panels: [{ type: 'line', metric: 'm' }] }, 'panels[0].title'],
    [{ name: 'x', panels: [{ title: 't', type: 'pie', metric: 'm' }] }, 'panels[0].type'],
    [{ name: 'x', panels: [{ title: 't', type: 'line', metric: 'm' }, { title: 't', type: 'line', metric: 3 }] }, 'panels[1].metric'],
    [{ name: 'x', panels: [{ title: 't', type: 'line', metric: 'm', colour: 'red' }] }, 'panels[0].colour'],
    [{ name: 'x', panels: [], owner: 'me' }, 'owner'],
    [[traffic], 'body'],
  ];
  for (const [body, field] of cases) {
    const r = await b.api('POST', '/monitor/dashboard', { body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.json.field, field, JSON.stringify(body));
    assert.equal(r.json.error, 'INVALID_PARAMETER');
  }
  const bad = await b.api('POST', '/monitor/dashboard', { raw: '{"name":' });
  assert.equal(bad.status, 400);
  assert.deepEqual(await saved(), before);
});

test('credentials: 401 without; a viewer reads but may not save or delete (403)', async () => {
  assert.equal((await b.api('GET', '/monitor/dashboard', { as: 'none' })).status, 401);
  assert.equal((await b.api('POST', '/monitor/dashboard', { as: 'none', body: traffic })).status, 401);
  assert.equal((await b.api('GET', '/monitor/dashboard', { as: 'viewer' })).status, 200);
  const before = await saved();
  const save = await b.api('POST', '/monitor/dashboard', { as: 'viewer', body: { name: 'viewer-made', panels: [] } });
  assert.equal(save.status, 403);
  assert.equal((await b.api('POST', '/monitor/dashboard/delete', { as: 'viewer', body: { name: 'traffic' } })).status, 403);
  assert.deepEqual(await saved(), before);
});

test('delete: 404 for an unknown name, 400 without one, then gone', async () => {
  await b.api('POST', '/monitor/dashboard', { body: { name: 'temp', panels: [] } });
  const missing = await b.api('POST', '/monitor/dashboard/delete', { body: { name: 'nope' } });
  assert.equal(missing.status, 404);
  assert.equal(missing.json.error, 'NOT_FOUND');
  const noName = await b.api('POST', '/monitor/dashboard/delete', { body: {} });
  assert.equal(noName.status, 400);
  assert.equal(noName.json.field, 'name');
  assert.equal((await b.api('POST', '/monitor/dashboard/delete', { body: { name: 'temp' } })).status, 200);
  assert.ok(!(await saved()).some((d) => d.name === 'temp'));
});
