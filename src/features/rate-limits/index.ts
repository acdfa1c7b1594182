// What the rate-limits feature offers the rest of the broker: the limits in force per endpoint.
export { rateLimits } from './feature.ts';
export type { RateLimits, EndpointRateLimitStatus } from './rate-limits.ts';
