// The client side of SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677), written apart from the
// broker's code so a test has a real SCRAM client on the other side; and an mqtt.js client that
// signs in with it over MQTT 5 AUTH packets (its `handleAuth` hook answers the server's AUTH 0x18;
// the CONNACK's server-final v= is verified, as a careful client does), re-authenticates (AUTH
// 0x19, which mqtt.js has no method for: written on its stream) and records every packet.
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';

import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import mqttPacket from 'mqtt-packet';

import { WAIT_MS } from './wait.ts';

export type Mechanism = 'SCRAM-SHA-256' | 'SCRAM-SHA-512';
const HASH = { 'SCRAM-SHA-256': ['sha256', 32], 'SCRAM-SHA-512': ['sha512', 64] } as const;

export class ScramClient {
  private readonly hash: 'sha256' | 'sha512';
  private readonly keyLength: number;
  private bare = '';
  private expectedSignature: Buffer | null = null;
  /** Changes the final message before it is sent (a test's tampering). */
  tamper: ((final: string) => string) | null = null;

  constructor(
    readonly mechanism: Mechanism,
    readonly username: string,
    readonly password: string,
    readonly nonce = randomBytes(18).toString('base64'),
    /** The gs2 header: `n,,` (no channel binding), or `p=tls-unique,,` to ask for it. */
    readonly gs2Header = 'n,,',
  ) {
    [this.hash, this.keyLength] = HASH[mechanism];
  }

  /** client-first-message. */
  first(): Buffer {
    const name = this.username.replace(/=/g, '=3D').replace(/,/g, '=2C');
    this.bare = `n=${name},r=${this.nonce}`;
    return Buffer.from(this.gs2Header + this.bare, 'utf8');
  }

  /** client-final-message for the server-first-message `data`. The password is used as it is:
   * the tests' passwords are ASCII, which SASLprep leaves unchanged. */
  final(data: Buffer): Buffer {
    const serverFirst = data.toString('utf8');
    const attrs = Object.fromEntries(serverFirst.split(',').map((a) => [a[0], a.slice(2)]));
    if (!attrs.r?.startsWith(this.nonce) || attrs.r.length <= this.nonce.length) throw new Error(`server nonce does not extend ours: ${serverFirst}`);
    const salt = Buffer.from(attrs.s, 'base64');
    const iterations = Number(attrs.i);
    const salted = pbkdf2Sync(this.password, salt, iterations, this.keyLength, this.hash);
    const clientKey = createHmac(this.hash, salted).update('Client Key').digest();
    const storedKey = createHash(this.hash).update(clientKey).digest();
    const withoutProof = `c=${Buffer.from(this.gs2Header).toString('base64')},r=${attrs.r}`;
    const authMessage = `${this.bare},${serverFirst},${withoutProof}`;
    const signature = createHmac(this.hash, storedKey).update(authMessage).digest();
    const proof = Buffer.alloc(clientKey.length);
    for (let i = 0; i < proof.length; i++) proof[i] = clientKey[i] ^ signature[i];
    const serverKey = createHmac(this.hash, salted).update('Server Key').digest();
    this.expectedSignature = createHmac(this.hash, serverKey).update(authMessage).digest();
    const final = `${withoutProof},p=${proof.toString('base64')}`;
    return Buffer.from(this.tamper ? this.tamper(final) : final, 'utf8');
  }

  /** Whether server-final-message `data` carries the server signature this exchange expects. */
  verify(data: Buffer | undefined): boolean {
    if (data === undefined || this.expectedSignature === null) return false;
    const text = data.toString('utf8');
    if (!text.startsWith('v=')) return false;
    const got = Buffer.from(text.slice(2), 'base64');
    return got.length === this.expectedSignature.length && timingSafeEqual(got, this.expectedSignature);
  }
}

export interface ScramSignIn {
  client: MqttClient;
  /** The CONNACK's reason code. */
  reasonCode: number;
  /** The CONNACK's Authentication Data (server-final: v=... or e=...). */
  data: string | undefined;
  /** The client verified the server's signature. */
  verified: boolean;
  /** Every packet the client received, in order. */
  packets: ({ cmd: string } & Record<string, any>)[];
}

/**
 * An mqtt.js client signing in with SCRAM: resolves once the CONNACK came (accepted or not). An
 * accepted CONNACK whose v= does not verify is reported (verified false) and the client ended,
 * as a client must not trust a server that cannot prove it holds the credentials.
 */
export async function scramConnect(url: string, scram: ScramClient, options: IClientOptions = {}): Promise<ScramSignIn> {
  const packets: ScramSignIn['packets'] = [];
  const client = mqtt.connect(url, { protocolVersion: 5, reconnectPeriod: 0, connectTimeout: WAIT_MS, manualConnect: true, ...options, properties: { authenticationMethod: scram.mechanism, authenticationData: scram.first(), ...options.properties } });
  client.on('packetreceive', (p) => packets.push(p as ScramSignIn['packets'][number]));
  client.on('error', () => { /* a refused CONNACK: read from the packets */ });
  answerAuth(client, scram);
  client.connect();
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const connack = packets.find((p) => p.cmd === 'connack');
    if (connack) {
      const data = connack.properties?.authenticationData as Buffer | undefined;
      const verified = connack.reasonCode === 0 && scram.verify(data);
      if (connack.reasonCode === 0 && !verified) client.end(true);
      return { client, reasonCode: connack.reasonCode as number, data: data?.toString('utf8'), verified, packets };
    }
    if (Date.now() > deadline) throw new Error('no CONNACK');
    await packetOrClose(client);
    if (!client.connected && client.disconnected && !packets.some((p) => p.cmd === 'connack')) throw new Error(`closed without CONNACK after ${JSON.stringify(packets.map((p) => p.cmd))}`);
  }
}

/** mqtt.js asks `handleAuth` for the answer to each AUTH of the server: client-final for 0x18. */
function answerAuth(client: MqttClient, scram: ScramClient): void {
  client.handleAuth = (packet, callback) => {
    if (packet.reasonCode !== 0x18) return callback();
    try {
      const data = scram.final(packet.properties!.authenticationData!);
      callback(undefined, { cmd: 'auth', reasonCode: 0x18, properties: { authenticationMethod: scram.mechanism, authenticationData: data } });
    } catch (err) {
      callback(err as Error);
    }
  };
}

/**
 * Re-authenticates a connected client with `scram` (AUTH 0x19, then mqtt.js answers the server's
 * AUTH 0x18 through handleAuth): resolves with the server's AUTH 0x00 (verified) or its DISCONNECT.
 */
export async function reauthenticate(signIn: ScramSignIn, scram: ScramClient, method: string = scram.mechanism): Promise<{ cmd: 'auth' | 'disconnect'; reasonCode: number; verified: boolean; data: string | undefined }> {
  const { client, packets } = signIn;
  const seen = packets.length;
  answerAuth(client, scram);
  client.stream.write(mqttPacket.generate({ cmd: 'auth', reasonCode: 0x19, properties: { authenticationMethod: method, authenticationData: scram.first() } }, { protocolVersion: 5 }));
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const end = packets.slice(seen).find((p) => p.cmd === 'disconnect' || (p.cmd === 'auth' && p.reasonCode === 0));
    if (end) {
      const data = end.properties?.authenticationData as Buffer | undefined;
      return { cmd: end.cmd as 'auth' | 'disconnect', reasonCode: end.reasonCode as number, verified: end.cmd === 'auth' && scram.verify(data), data: data?.toString('utf8') };
    }
    if (Date.now() > deadline) throw new Error(`no end of the re-authentication: ${JSON.stringify(packets.slice(seen).map((p) => [p.cmd, p.reasonCode]))}`);
    await packetOrClose(client);
    if (client.disconnected && !packets.slice(seen).some((p) => p.cmd === 'disconnect')) throw new Error('closed without DISCONNECT');
  }
}

/** RFC 5803 credentials of `password`, made here (not by the broker): a client's own. A
 * `serverKey` given replaces the real one (a server that cannot prove it knows the password). */
export function scramCredentials(mechanism: Mechanism, password: string, iterations = 4096, salt = randomBytes(16), serverKey?: Buffer): string {
  const [hash, keyLength] = HASH[mechanism];
  const salted = pbkdf2Sync(password, salt, iterations, keyLength, hash);
  const storedKey = createHash(hash).update(createHmac(hash, salted).update('Client Key').digest()).digest();
  const realServerKey = createHmac(hash, salted).update('Server Key').digest();
  return `${mechanism}$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${(serverKey ?? realServerKey).toString('base64')}`;
}

/** Resolves at the client's next received packet or close (both listeners removed then). */
function packetOrClose(client: MqttClient): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      client.off('packetreceive', done);
      client.off('close', done);
      resolve();
    };
    client.on('packetreceive', done);
    client.on('close', done);
  });
}
