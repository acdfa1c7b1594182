// A raw MQTT client over a net.Socket, for what mqtt.js will not send (protocol violations,
// topic aliases by hand): packets out through mqtt-packet's generate() or as bytes, packets in
// through its parser, kept in order for next().
import net from 'node:net';
import { once } from 'node:events';

import mqttPacket, { type Packet } from 'mqtt-packet';
import { WAIT_MS } from './wait.ts';

export interface RawClient {
  socket: net.Socket;
  send(packet: Record<string, unknown> | Buffer): void;
  /** The next packet received (of type `cmd`, skipping others, when given). */
  next(cmd?: string, timeoutMs?: number): Promise<Packet>;
  /** Resolves when the server closes the connection. */
  closed(timeoutMs?: number): Promise<void>;
  end(): void;
}

export async function rawConnect(port: number, connect: Record<string, unknown>, protocolVersion: 4 | 5 = 5): Promise<RawClient & { connack: Packet }> {
  const socket = net.connect({ host: '127.0.0.1', port });
  await once(socket, 'connect');
  const parser = mqttPacket.parser({ protocolVersion });
  const inbox: Packet[] = [];
  const waiters: (() => void)[] = [];
  let isClosed = false;
  parser.on('packet', (p: Packet) => {
    inbox.push(p);
    for (const w of waiters.splice(0)) w();
  });
  socket.on('data', (b) => parser.parse(b));
  socket.on('error', () => { /* 'close' follows */ });
  socket.on('close', () => {
    isClosed = true;
    for (const w of waiters.splice(0)) w();
  });
  const client: RawClient = {
    socket,
    send(packet) {
      socket.write(Buffer.isBuffer(packet) ? packet : mqttPacket.generate(packet as unknown as Packet, { protocolVersion }));
    },
    async next(cmd, timeoutMs = WAIT_MS) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const i = inbox.findIndex((p) => cmd === undefined || p.cmd === cmd);
        if (i !== -1) return inbox.splice(i, 1)[0];
        if (isClosed) throw new Error(`connection closed while waiting for ${cmd ?? 'a packet'}`);
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no ${cmd ?? 'packet'} within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, left);
          waiters.push(() => { clearTimeout(t); resolve(); });
        });
      }
    },
    async closed(timeoutMs = WAIT_MS) {
      if (isClosed) return;
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error('connection still open')), timeoutMs);
        socket.once('close', () => { clearTimeout(t); resolve(); });
      });
    },
    end() {
      socket.destroy();
    },
  };
  client.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion, clean: true, keepalive: 60, ...connect });
  const connack = await client.next('connack');
  return Object.assign(client, { connack });
}
