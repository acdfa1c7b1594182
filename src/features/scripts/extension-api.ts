// The interface of an extension (POST /extension/add): a module in the extensions directory that
// exports a class; the broker makes one instance per pool thread, calls init(options) once,
// onMessage for each message whose topic matches the extension's filter, and close() when the
// extension is removed or replaced or the broker stops. It runs in a pool thread, never on a
// listener thread; it sees the message, nothing of the broker. This file is the contract
// extension authors code against (extensions/README.md shows an example).

export interface ExtensionMessage {
  topic: string;
  /** The payload's bytes (the extension's own copy). */
  payload: Buffer;
  qos: 0 | 1 | 2;
  retain: boolean;
  /** The publisher's client id. */
  clientId: string;
}

/** A message to publish instead: an absent topic or payload keeps the input's. */
export interface ExtensionOutput {
  topic?: string;
  payload?: Buffer | Uint8Array | string;
}

/**
 * undefined: the message goes on unchanged; null or []: it is dropped; an output: it is replaced;
 * several outputs: each is published (in order, at most 1000), with the input's QoS and retain.
 */
export type ExtensionResult = ExtensionOutput | ExtensionOutput[] | null | undefined;

export interface MessageProcessor {
  init?(options: Readonly<Record<string, unknown>>): void | Promise<void>;
  onMessage(message: ExtensionMessage): ExtensionResult | Promise<ExtensionResult>;
  close?(): void | Promise<void>;
}

export type MessageProcessorClass = new () => MessageProcessor;
