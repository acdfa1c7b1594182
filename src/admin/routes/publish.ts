// HTTP publish (spec 4.3, /api/publish): a message the operator sends to the broker's
// subscribers, routed, retained and stored exactly like a client's PUBLISH. Answers {code: 0}
// once the message is routed (and stored, where it must be).
import { Type, type Static } from '@sinclair/typebox';

import { DomainError, conflict, invalid } from '../../errors/domain-error.ts';
import { hashString } from '../../protocol/client-hash.ts';
import { forwardedProperties } from '../../protocol/send.ts';
import { NO_PUBLISHER } from '../../native/index.ts';
import type { AdminContext } from '../context.ts';
import { json, type Route } from '../http.ts';
import { route, strict } from '../schema.ts';
import { choice } from '../../schema/check.ts';
import { QOS, onWorker, topicName } from './mqtt-common.ts';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

const PROPERTIES = Type.Object(
  {
    userProperties: Type.Optional(Type.Record(Type.String(), Type.String())),
    contentType: Type.Optional(Type.String()),
    responseTopic: Type.Optional(Type.String({ minLength: 1, description: 'a topic name' })),
    correlationData: Type.Optional(Type.String()),
    payloadFormatIndicator: Type.Optional(Type.Boolean()),
    messageExpiryInterval: Type.Optional(Type.Integer({ minimum: 1, maximum: 0xffffffff, description: 'seconds' })),
  },
  { ...strict, description: 'MQTT 5 properties' },
);

const PUBLISH = Type.Object(
  {
    topic: Type.String({ minLength: 1, description: 'a topic name: no wildcards, not starting with $' }),
    payload: Type.String(),
    payload_encoding: Type.Optional(choice(['plain', 'base64'] as const, { default: 'plain' })),
    qos: Type.Optional(QOS),
    retain: Type.Optional(Type.Boolean({ default: false })),
    clientId: Type.Optional(Type.String({ description: 'publish as this client: its No Local subscriptions skip the message' })),
    properties: Type.Optional(PROPERTIES),
  },
  strict,
);

let nextWorker = 0;

/** MQTT 5 properties sent with the message (v3 subscribers get the message without them). */
function properties(ctx: AdminContext, p: Static<typeof PROPERTIES> | undefined): { props: Buffer | null; expiresAt: number } {
  if (p === undefined) return { props: null, expiresAt: 0 };
  const user = Object.entries(p.userProperties ?? {});
  if (p.responseTopic !== undefined) topicName(ctx, p.responseTopic, 'properties.responseTopic');
  const props = forwardedProperties({
    userProperties: user.length ? user : undefined,
    contentType: p.contentType,
    responseTopic: p.responseTopic,
    correlationData: p.correlationData !== undefined ? Buffer.from(p.correlationData, 'utf8') : undefined,
    payloadFormatIndicator: p.payloadFormatIndicator,
  } as Parameters<typeof forwardedProperties>[0]);
  const expiry = p.messageExpiryInterval;
  return { props, expiresAt: expiry !== undefined ? Date.now() + expiry * 1000 : 0 };
}

/** A retained message the limits refuse from a client is refused here too: 400 for a payload
 * past limits.maxRetainedPayloadSize, 409 for a new topic past limits.maxRetainedMessages. */
function retainedWithinLimits(ctx: AdminContext, topic: string, payloadLength: number): void {
  const l = ctx.config.limits;
  if (l.maxRetainedPayloadSize !== 0 && payloadLength > l.maxRetainedPayloadSize) throw invalid('payload', `larger than limits.maxRetainedPayloadSize (${l.maxRetainedPayloadSize} bytes) for a retained message`);
  if (l.maxRetainedMessages !== 0 && !ctx.supervisor.retained.admits(topic, l.maxRetainedMessages)) throw conflict('retain', `limits.maxRetainedMessages (${l.maxRetainedMessages}) retained messages are held; replace or clear one first`);
}

export function publishRoutes(ctx: AdminContext): Route[] {
  return [
    route({
      method: 'POST',
      path: '/api/publish',
      access: 'write',
      tag: 'publish',
      summary: 'Publish a message to the subscribers (retained and stored like a client PUBLISH); answers {code: 0} once it is routed',
      body: PUBLISH,
      async handler(req) {
        const { payload: text, payload_encoding: encoding = 'plain', qos = 0, retain = false } = req.body;
        const topic = topicName(ctx, req.body.topic);
        if (encoding === 'base64' && !BASE64.test(text)) throw invalid('payload', 'is not valid base64');
        const payload = Buffer.from(text, encoding === 'base64' ? 'base64' : 'utf8');
        if (payload.length > ctx.config.limits.maxPacketSize) throw invalid('payload', `larger than limits.maxPacketSize (${ctx.config.limits.maxPacketSize} bytes)`);
        if (retain && payload.length > 0) retainedWithinLimits(ctx, topic, payload.length);
        const clientId = req.body.clientId || undefined;
        const { props, expiresAt } = properties(ctx, req.body.properties);
        // As the client when it has a session (No Local, shared-subscription hashing); else as the broker.
        const owner = clientId !== undefined ? ctx.supervisor.registry.lookup(clientId) : null;
        let worker: number;
        if (owner) worker = owner[1];
        else {
          const running = ctx.supervisor.runningWorkers();
          if (running.length === 0) throw new DomainError('UNAVAILABLE', 'no worker is running');
          worker = running[nextWorker++ % running.length];
        }
        await onWorker(ctx, worker, 'clients.publish', {
          topic,
          payload,
          qos: qos as 0 | 1 | 2,
          retain,
          props,
          expiresAt,
          publisher: owner ? owner[0] : NO_PUBLISHER,
          publisherHash: clientId !== undefined ? hashString(clientId) : 0,
          clientId,
        });
        return json({ code: 0 });
      },
    }),
  ];
}
