// HTTP publish (spec 4.3, /api/publish): a message the operator sends to the broker's
// subscribers, routed, retained and stored exactly like a client's PUBLISH. Answers {code: 0}
// once the message is routed (and stored, where it must be).
import { DomainError, invalid } from '../../errors/domain-error.ts';
import { hashString } from '../../protocol/client-hash.ts';
import { forwardedProperties } from '../../protocol/send.ts';
import { NO_PUBLISHER } from '../../native/index.ts';
import type { AdminContext } from '../context.ts';
import { json, type Route } from '../http.ts';
import { bool, object, oneOf, onlyFields, qos as qosField, str, type Body } from '../validate.ts';
import { onWorker, topicNameField } from './mqtt-common.ts';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

let nextWorker = 0;

/** MQTT 5 properties sent with the message (v3 subscribers get the message without them). */
function properties(ctx: AdminContext, b: Body): { props: Buffer | null; expiresAt: number } {
  if (b.properties === undefined || b.properties === null) return { props: null, expiresAt: 0 };
  const p = object(b.properties, 'properties');
  onlyFields(p, ['userProperties', 'contentType', 'responseTopic', 'correlationData', 'payloadFormatIndicator', 'messageExpiryInterval']);
  const user: [string, string][] = [];
  if (p.userProperties !== undefined && p.userProperties !== null) {
    const u = object(p.userProperties, 'properties.userProperties');
    for (const [k, v] of Object.entries(u)) {
      if (typeof v !== 'string') throw invalid(`properties.userProperties.${k}`, 'expected a string');
      user.push([k, v]);
    }
  }
  const sub = (field: string) => {
    const v = p[field];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') throw invalid(`properties.${field}`, 'expected a string');
    return v;
  };
  const responseTopic = sub('responseTopic');
  if (responseTopic !== undefined) topicNameField(ctx, { 'properties.responseTopic': responseTopic }, 'properties.responseTopic');
  const pfi = p.payloadFormatIndicator ?? undefined;
  if (pfi !== undefined && typeof pfi !== 'boolean') throw invalid('properties.payloadFormatIndicator', 'expected true or false');
  const expiry = p.messageExpiryInterval ?? undefined;
  if (expiry !== undefined && (typeof expiry !== 'number' || !Number.isInteger(expiry) || expiry < 1 || expiry > 0xffffffff)) {
    throw invalid('properties.messageExpiryInterval', 'expected an integer from 1 to 4294967295 (seconds)');
  }
  const correlation = sub('correlationData');
  const props = forwardedProperties({
    userProperties: user.length ? user : undefined,
    contentType: sub('contentType'),
    responseTopic,
    correlationData: correlation !== undefined ? Buffer.from(correlation, 'utf8') : undefined,
    payloadFormatIndicator: pfi as boolean | undefined,
  } as Parameters<typeof forwardedProperties>[0]);
  return { props, expiresAt: expiry !== undefined ? Date.now() + (expiry as number) * 1000 : 0 };
}

export function publishRoutes(ctx: AdminContext): Route[] {
  return [
    {
      method: 'POST',
      path: '/api/publish',
      access: 'write',
      tag: 'publish',
      summary: 'Publish a message to the subscribers (retained and stored like a client PUBLISH); answers {code: 0} once it is routed',
      body: {
        type: 'object',
        required: ['topic', 'payload'],
        properties: {
          topic: { type: 'string', description: 'a topic name: no wildcards, not starting with $' },
          payload: { type: 'string' },
          payload_encoding: { enum: ['plain', 'base64'], default: 'plain' },
          qos: { type: 'integer', minimum: 0, maximum: 2, default: 0 },
          retain: { type: 'boolean', default: false },
          clientId: { type: 'string', description: 'publish as this client: its No Local subscriptions skip the message' },
          properties: {
            type: 'object',
            description: 'MQTT 5 properties',
            properties: {
              userProperties: { type: 'object', additionalProperties: { type: 'string' } },
              contentType: { type: 'string' },
              responseTopic: { type: 'string' },
              correlationData: { type: 'string' },
              payloadFormatIndicator: { type: 'boolean' },
              messageExpiryInterval: { type: 'integer', minimum: 1 },
            },
          },
        },
      },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['topic', 'payload', 'payload_encoding', 'qos', 'retain', 'clientId', 'properties']);
        const topic = topicNameField(ctx, b);
        const text = str(b, 'payload');
        if (text === undefined) throw invalid('payload', 'is required');
        const encoding = oneOf(b, 'payload_encoding', ['plain', 'base64'] as const) ?? 'plain';
        if (encoding === 'base64' && !BASE64.test(text)) throw invalid('payload', 'is not valid base64');
        const payload = Buffer.from(text, encoding === 'base64' ? 'base64' : 'utf8');
        if (payload.length > ctx.config.limits.maxPacketSize) throw invalid('payload', `larger than limits.maxPacketSize (${ctx.config.limits.maxPacketSize} bytes)`);
        const qos = qosField(b);
        const retain = bool(b, 'retain') ?? false;
        const clientId = str(b, 'clientId') || undefined;
        const { props, expiresAt } = properties(ctx, b);
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
          qos,
          retain,
          props,
          expiresAt,
          publisher: owner ? owner[0] : NO_PUBLISHER,
          publisherHash: clientId !== undefined ? hashString(clientId) : 0,
        });
        return json({ code: 0 });
      },
    },
  ];
}
