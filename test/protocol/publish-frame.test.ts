// The JavaScript PUBLISH writer (delivery without properties) against the native encoder, byte
// for byte, over versions, QoS, flags, topic and payload sizes across every varint boundary.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { encodePublish } from '../../src/native/index.ts';
import { writePublishFrame } from '../../src/protocol/publish-frame.ts';
import { publishLength, type Version } from '../../src/protocol/send.ts';

const SIZES = [0, 1, 64, 100, 121, 122, 127, 128, 16_000, 16_383, 16_384, 2_097_151, 2_097_152];

test('writePublishFrame writes what the native encoder writes', () => {
  let cases = 0;
  for (const version of [3, 4, 5] as Version[]) {
    for (const qos of [0, 1, 2]) {
      for (const dup of qos === 0 ? [false] : [false, true]) { // [MQTT-3.3.1-2] no DUP at QoS 0
        for (const retain of [false, true]) {
          for (const topicLen of [0, 1, 7, 300]) {
            if (topicLen === 0 && version !== 5) continue; // an empty topic only stands for an alias (v5)
            for (const size of SIZES) {
              const topic = Buffer.alloc(topicLen, 0x61);
              const payload = Buffer.alloc(size, size & 0xff);
              const len = publishLength(version, qos, topicLen, 0, size);
              const js = Buffer.alloc(len, 0xee);
              writePublishFrame(js, (qos << 1) | (dup ? 8 : 0) | (retain ? 1 : 0), qos ? 0x1234 : 0, topic, payload, version === 5);
              const native = Buffer.alloc(len, 0xee);
              const written = encodePublish(version, native, 0, qos | (dup ? 4 : 0) | (retain ? 8 : 0), qos ? 0x1234 : 0, topic, payload, undefined);
              assert.equal(written, len, `native length v${version} q${qos} ${topicLen}/${size}`);
              assert.ok(js.equals(native), `v${version} qos ${qos} dup ${dup} retain ${retain} topic ${topicLen} payload ${size}`);
              cases++;
            }
          }
        }
      }
    }
  }
  assert.ok(cases > 1000, `${cases} cases`);
});
