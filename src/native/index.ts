// The one place that loads the native addon (native/node/spindle.<platform>.node, built by
// `make build`). Everything else imports from here: typed functions from the generated
// declarations, the descriptor layout constants, and the typed errors rebuilt from native ones.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import path from 'node:path';
import os from 'node:os';

import type * as Addon from '../../native/node/index.d.ts';
import { ROOT } from '../install/root.ts';

const root = ROOT;

function addonPath(): string {
  // The glibc build, or a musl one where that is what was built (process.report.getReport()
  // would tell the libc, but costs ~10 ms in every thread at start).
  const base = path.join(root, 'native', 'node', `spindle.${os.platform()}-${os.arch()}`);
  const file = [`${base}-gnu.node`, `${base}-musl.node`].find((f) => existsSync(f));
  if (!file) throw new Error(`native addon not built: ${base}-gnu.node is missing (run "make build")`);
  return file;
}

const require = createRequire(import.meta.url);
const addon = require(addonPath()) as typeof Addon;

export const {
  Framer,
  Router,
  RetainedIndex,
  RetainedStore,
  ClientRegistry,
  LocalStore,
  rewritePublishProperties,
  decodePacket,
  encodePacket,
  checkPacket,
  encodePublish,
  publishFrameLen,
  reuseportListener,
  listenerPort,
  closeFd,
  crlFileProblem,
  NetDriver,
  debugPanic,
} = addon;
export type { NetTlsOptions, NetProxyOptions } from '../../native/node/index.d.ts';
export type { JsPacket as Packet, JsProperties as Properties, JsSubscription as SubscriptionRequest, JsWill as Will, ErrorInfo } from '../../native/node/index.d.ts';

/** u32 words per packet in a Framer descriptor table. */
export const DESC_SLOTS = 12;
/** Descriptor word 0: header byte in bits 0-7, then these flags. */
export const DESC_HELD = 1 << 8;
export const DESC_EXPIRY = 1 << 9;
/** Router.match: bits of a delivery's second word. */
export const DELIVERY_RAP = 1 << 18;
export const DELIVERY_SHARED = 1 << 19;
export const NO_PUBLISHER = 0xffffffff;
/** The worker number of taps (node/taps.ts): a main-thread feature's filters (a rule's FROM, a
 * log topic, a bridge's forwards, a viewer, a remote node's interest) are subscribed in the routing
 * core under its own handle with this worker, so the match a PUBLISH does anyway finds them; the
 * publishing thread acts on the match or posts it to the main thread (RouterHost.tapMatched). */
export const TAP_WORKER = 0xffff;

/** Error base class with a stable string `code` and, where one applies, the MQTT 5 reason code. */
export class SpindleError extends Error {
  readonly code: string;
  readonly reason: number | undefined;
  constructor(code: string, message: string, reason?: number, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.reason = reason;
  }
}

/** A packet failed validation: `reason` is the MQTT 5 reason code to answer with. */
export class CodecError extends SpindleError {}
/** A topic name or filter was refused by the routing core. */
export class TopicError extends SpindleError {}

const REASON_PREFIX = /^\[0x([0-9a-f]{2})\] /;

/** Rebuilds a typed error from a native one (`code` plus a `[0xNN]` message prefix). */
export function fromNative(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string') return err;
  const m = REASON_PREFIX.exec(err.message);
  if (!m) return new SpindleError(code, err.message, undefined, { cause: err });
  const reason = parseInt(m[1], 16);
  const message = err.message.slice(m[0].length);
  const Cls = reason === 0x8f || reason === 0x90 ? TopicError : CodecError;
  return new Cls(code, message, reason, { cause: err });
}

/** Calls a native function and rethrows its error as a typed SpindleError. */
export function native<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw fromNative(err);
  }
}
