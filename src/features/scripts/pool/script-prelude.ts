// The code every script context starts with, run before the script: it captures the intrinsics
// it needs (the script may replace the globals afterwards), defines `console` (lines are kept
// for the broker's log) and the Payload type the script is given, and the loop that calls
// convert. The thread talks to it only with primitives and typed arrays made by it, so no object
// of the thread's own realm ever reaches the script.
//
// Protocol (names under the frozen global __spindle):
// - load(topics, bytes, offsets, n): the batch (topics joined by U+0000, which no topic contains);
//   bytes and offsets are arrays made by alloc()/allocOffsets() and filled by the thread.
// - run(): the loop, called under the time limit from `next` to `end`; setRange(next, end).
// - kind / topicOut / payloadOut / errorOut: results per message; kind 0 means not done.
// - takeLogs(): the console lines since the last call, as one string.
// - hold(error), then describeHeld() under the time limit: what the script threw, as text.
export const KIND = { PENDING: 0, UNCHANGED: 1, CONVERTED: 2, DROPPED: 3, ERROR: 4, INVALID: 5 } as const;

export const PRELUDE = `
(function () {
  'use strict';
  const U8 = Uint8Array, U32 = Uint32Array, Arr = Array, isView = ArrayBuffer.isView, fromCharCode = String.fromCharCode;
  const freeze = Object.freeze, defineProperty = Object.defineProperty, stringify = JSON.stringify;
  const HEX = '0123456789abcdef', B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  function utf8(b) {
    let s = '', codes = [];
    const n = b.length;
    for (let i = 0; i < n;) {
      let c = b[i++];
      if (c < 0x80) {}
      else if (c >= 0xc2 && c < 0xe0 && i < n) c = ((c & 0x1f) << 6) | (b[i++] & 0x3f);
      else if (c >= 0xe0 && c < 0xf0 && i + 1 < n) { c = ((c & 0x0f) << 12) | ((b[i] & 0x3f) << 6) | (b[i + 1] & 0x3f); i += 2; }
      else if (c >= 0xf0 && c < 0xf5 && i + 2 < n) { c = ((c & 7) << 18) | ((b[i] & 0x3f) << 12) | ((b[i + 1] & 0x3f) << 6) | (b[i + 2] & 0x3f); i += 3; }
      else c = 0xfffd;
      if (c > 0xffff) { c -= 0x10000; codes.push(0xd800 | (c >> 10), 0xdc00 | (c & 0x3ff)); } else codes.push(c);
      if (codes.length >= 4096) { s += fromCharCode.apply(null, codes); codes = []; }
    }
    return s + fromCharCode.apply(null, codes);
  }
  function hex(b) { let s = ''; for (let i = 0; i < b.length; i++) s += HEX[b[i] >> 4] + HEX[b[i] & 15]; return s; }
  function base64(b) {
    let s = '', i = 0;
    for (; i + 2 < b.length; i += 3) { const v = (b[i] << 16) | (b[i + 1] << 8) | b[i + 2]; s += B64[v >> 18] + B64[(v >> 12) & 63] + B64[(v >> 6) & 63] + B64[v & 63]; }
    if (i < b.length) { const v = (b[i] << 16) | ((b[i + 1] ?? 0) << 8); s += B64[v >> 18] + B64[(v >> 12) & 63] + (i + 1 < b.length ? B64[(v >> 6) & 63] : '=') + '='; }
    return s;
  }
  /** A message's payload: its bytes, and toString() its text (utf8, or 'hex', 'base64'). */
  class Payload extends U8 {
    toString(encoding) {
      if (encoding === undefined || encoding === 'utf8' || encoding === 'utf-8') return utf8(this);
      if (encoding === 'hex') return hex(this);
      if (encoding === 'base64') return base64(this);
      throw new TypeError('unknown encoding ' + encoding + ': utf8, hex or base64');
    }
  }
  const describe = (e) => {
    try { return ('' + (e !== null && typeof e === 'object' && 'message' in e ? e.message : e)).slice(0, 500); }
    catch { return 'an error that cannot be shown'; }
  };
  const logs = [];
  let dropped = 0;
  const print = (...args) => {
    if (logs.length >= 50) { dropped++; return; }
    let line = '';
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      let t;
      try { t = typeof a === 'string' ? a : (typeof a === 'object' && a !== null && !isView(a) ? stringify(a) : '' + a); } catch { t = '[unprintable]'; }
      line += (i ? ' ' : '') + t;
    }
    logs.push(line.slice(0, 1000));
  };
  defineProperty(globalThis, 'console', { value: freeze({ log: print, info: print, warn: print, error: print, debug: print }) });

  let topicsText = '', topics = null, bytes = new U8(0), offsets = new U32(1), n = 0, next = 0, end = 0;
  let kind = new U8(0), topicOut = [], payloadOut = [], errorOut = [], held;
  const api = {
    alloc: (size) => new U8(size),
    allocOffsets: (count) => new U32(count),
    load(t, b, o, count) {
      topicsText = t; topics = null; bytes = b; offsets = o; n = count; next = 0; end = count;
      kind = new U8(count); topicOut = new Arr(count); payloadOut = new Arr(count); errorOut = new Arr(count);
    },
    setRange(from, to) { next = from; end = to; },
    hold(e) { held = e; },
    describeHeld() { const e = held; held = undefined; return describe(e); },
    next: () => next,
    kind: () => kind,
    topicOut: () => topicOut,
    payloadOut: () => payloadOut,
    errorOut: () => errorOut,
    takeLogs() {
      let s = '';
      for (let i = 0; i < logs.length; i++) s += (i ? '\\n' : '') + logs[i];
      if (dropped) s += (s ? '\\n' : '') + '(' + dropped + ' more console lines dropped)';
      logs.length = 0; dropped = 0;
      return s;
    },
    run() {
      if (topics === null) topics = topicsText.split('\\u0000');
      for (let i = next; i < end; i++) {
        next = i;
        const payload = new Payload(bytes.buffer, bytes.byteOffset + offsets[i], offsets[i + 1] - offsets[i]);
        let r, k, t, p, e;
        try {
          r = convert(topics[i], payload);
          if (r === undefined) k = ${KIND.UNCHANGED};
          else if (r === null) k = ${KIND.DROPPED};
          else if (typeof r === 'string' || isView(r)) { k = ${KIND.CONVERTED}; p = r; }
          else if (typeof r === 'object') {
            if (typeof r.then === 'function') { k = ${KIND.INVALID}; e = 'convert returned a promise: it must return its result synchronously'; }
            else {
              t = r.topic; p = r.payload;
              if (p === null) k = ${KIND.DROPPED};
              else if (t === undefined && p === undefined) { k = ${KIND.INVALID}; e = 'convert returned an object without topic or payload'; }
              else k = ${KIND.CONVERTED};
            }
          } else { k = ${KIND.INVALID}; e = 'convert returned a ' + typeof r + ': expected a string, bytes, {topic, payload}, undefined or null'; }
        } catch (err) { k = ${KIND.ERROR}; e = describe(err); }
        topicOut[i] = t; payloadOut[i] = p; errorOut[i] = e; kind[i] = k;
      }
      next = end;
    },
  };
  defineProperty(globalThis, '__spindle', { value: freeze(api) });
})();
`;
