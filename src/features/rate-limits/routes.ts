// The rate-limit routes: the limits in force per endpoint and what they did. Setting them is
// a change of the endpoint (POST /api/endpoints/update with rateLimit / totalRateLimit; null
// clears), which is stored, replicated, audited and applied on every worker at once.
import { ok, type Route } from '../../admin/http.ts';
import type { RateLimits } from './rate-limits.ts';

export function rateLimitRoutes(limits: RateLimits): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/rate-limits',
      access: 'read',
      tag: 'endpoints',
      summary: 'Inbound rate limits per endpoint on this node: {endpoints: [{id, port, rateLimit, totalRateLimit (each {messagesPerSecond, messagesBurst, bytesPerSecond, bytesBurst} or null), throttled {messages, bytes, total_messages, total_bytes, tenant} (reading paused, since start), limitedClients, ownLimitClients (an authenticator gave them their own), pausedNow}]}. Set them with POST /api/endpoints/update',
      handler: async () => ok({ endpoints: await limits.endpoints() }),
    },
  ];
}
