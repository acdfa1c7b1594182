// The Sparkplug page in a real browser (Debian's Chromium through playwright-core): an edge node's
// NBIRTH and a device's DBIRTH (encoded by protobufjs from a .proto the test writes) show it
// online with its last birth; opened, it shows the device and the birth metrics with the values
// NDATA set; cut off abruptly, its NDEATH will shows it offline with its last death; the primary
// host's STATE shows in the hosts table.
// needs: broker, chromium
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import protobuf from 'protobufjs';
import type { Browser } from 'playwright-core';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { launchBrowser, signIn } from '../helpers/browser.ts';

const Payload = protobuf.parse(`
syntax = "proto2";
message Payload {
  message Metric {
    optional string name = 1;
    optional uint64 alias = 2;
    optional uint32 datatype = 4;
    oneof value { uint32 int_value = 10; uint64 long_value = 11; double double_value = 13; }
  }
  optional uint64 timestamp = 1;
  repeated Metric metrics = 2;
  optional uint64 seq = 3;
}`, { keepCase: true }).root.lookupType('Payload');
const spb = (seq: number | null, metrics: Record<string, unknown>[]) =>
  Buffer.from(Payload.encode(Payload.fromObject({ timestamp: Date.now(), metrics, ...(seq === null ? {} : { seq }) })).finish());

let b: AdminBroker;
let browser: Browser;

before(async () => {
  b = await startAdminBroker();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await b?.stop();
});

test('edge nodes and devices with their last birth and death, online then offline by the will', async () => {
  const host = await connect(b.url, { clientId: 'console-host', will: { topic: 'spBv1.0/STATE/console-host', payload: Buffer.from('{"online":false,"timestamp":1}'), qos: 1, retain: true } });
  await host.publishAsync('spBv1.0/STATE/console-host', '{"online":true,"timestamp":2}', { qos: 1, retain: true });
  const bdSeq = [{ name: 'bdSeq', datatype: 4, long_value: 3 }];
  const edge = await connect(b.url, { clientId: 'console-edge', will: { topic: 'spBv1.0/site/NDEATH/gw1', payload: spb(null, bdSeq), qos: 1, retain: false } });
  await edge.publishAsync('spBv1.0/site/NBIRTH/gw1', spb(0, [...bdSeq, { name: 'uptime', alias: 1, datatype: 3, int_value: 5 }]));
  await edge.publishAsync('spBv1.0/site/DBIRTH/gw1/tank', spb(1, [{ name: 'level', alias: 2, datatype: 10, double_value: 0.5 }]));
  await edge.publishAsync('spBv1.0/site/NDATA/gw1', spb(2, [{ alias: 1, datatype: 3, int_value: 77 }]));

  const page = await signIn(browser, b.base);
  try {
    await page.getByRole('link', { name: 'Sparkplug', exact: true }).click();
    const row = page.locator('tr[data-node="site/gw1"]');
    await row.locator('[data-online="true"]').waitFor();
    assert.match(await row.innerText(), /site\s+gw1\s+online\s+3/);
    await page.locator('tr[data-host="console-host"] [data-online="true"]').waitFor();

    await row.getByRole('link', { name: 'gw1' }).click();
    const detail = page.getByRole('region', { name: 'edge node' });
    await detail.locator('tr[data-device="tank"] [data-online="true"]').waitFor();
    assert.match(await detail.locator('tr[data-device="tank"]').innerText(), /level = 0\.5/);
    await detail.locator('tr[data-metric="uptime"]').filter({ hasText: '77' }).waitFor();

    (edge as unknown as { stream: { destroy(): void } }).stream.destroy();
    edge.end(true);
    await row.locator('[data-online="false"]').waitFor();
    assert.notEqual((await row.locator('td').nth(5).innerText()).trim(), '', 'the last death is shown');
    await detail.locator('tr[data-device="tank"] [data-online="false"]').waitFor();
  } finally {
    await page.close();
    await end(host);
  }
});
