// A raw MQTT client over a plain TCP socket, for packets mqtt.js will not send (protocol
// violations, resends with DUP, withheld acknowledgements). Packets go out through mqtt-packet's
// generator (or as hand-written bytes) and come back parsed, in order.
import net from 'node:net';
import { once } from 'node:events';

import mqttPacket from 'mqtt-packet';
import { WAIT_MS } from './wait.ts';

export type RawPacket = mqttPacket.Packet & Record<string, any>;

export class RawClient {
  readonly packets: RawPacket[] = [];
  closed = false;
  private waiters: (() => void)[] = [];
  private readonly parser: ReturnType<typeof mqttPacket.parser>;

  private constructor(readonly socket: net.Socket, public protocolVersion: number) {
    this.parser = mqttPacket.parser({ protocolVersion });
    this.parser.on('packet', (p: RawPacket) => {
      this.packets.push(p);
      this.wake();
    });
    this.parser.on('error', (err: Error) => {
      this.packets.push({ cmd: 'parse-error', message: err.message } as unknown as RawPacket);
      this.wake();
    });
    socket.on('data', (b) => this.parser.parse(b));
    socket.on('error', () => { /* a reset by the broker shows as close */ });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
  }

  static async open(url: string, protocolVersion = 4): Promise<RawClient> {
    const u = new URL(url);
    const socket = net.connect({ host: u.hostname, port: Number(u.port) });
    await once(socket, 'connect');
    return new RawClient(socket, protocolVersion);
  }

  /** Opens a socket, sends CONNECT and waits for CONNACK. */
  static async connect(url: string, connect: Partial<mqttPacket.IConnectPacket> & { clientId: string }): Promise<{ client: RawClient; connack: RawPacket }> {
    const protocolVersion = connect.protocolVersion ?? 4;
    const client = await RawClient.open(url, protocolVersion);
    client.send({ cmd: 'connect', protocolId: protocolVersion === 3 ? 'MQIsdp' : 'MQTT', protocolVersion, clean: true, keepalive: 0, ...connect } as mqttPacket.IConnectPacket);
    const connack = await client.next('connack');
    return { client, connack };
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  send(packet: mqttPacket.Packet): void {
    this.socket.write(mqttPacket.generate(packet, { protocolVersion: this.protocolVersion }));
  }

  write(bytes: Buffer | number[]): void {
    this.socket.write(Buffer.from(bytes));
  }

  /** The next packet (of type `cmd`, skipping none: another type first is an error). */
  async next(cmd?: string, timeoutMs = WAIT_MS): Promise<RawPacket> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const p = this.packets.shift();
      if (p) {
        if (cmd && p.cmd !== cmd) throw new Error(`expected ${cmd}, got ${JSON.stringify(p)}`);
        return p;
      }
      if (this.closed) throw new Error(`connection closed while waiting for ${cmd ?? 'a packet'}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${cmd ?? 'packet'} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(t); resolve(); });
      });
    }
  }

  /** Resolves when the broker has closed the connection; rejects after `timeoutMs`. */
  async waitClosed(timeoutMs = WAIT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`still open after ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(t); resolve(); });
      });
    }
  }

  /** Waits `ms` and returns the packets that arrived meanwhile. */
  async collect(ms: number): Promise<RawPacket[]> {
    await new Promise((r) => setTimeout(r, ms));
    return this.packets.splice(0);
  }

  destroy(): void {
    this.socket.destroy();
  }
}
