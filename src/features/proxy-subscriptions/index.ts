// What the proxy subscriptions feature offers the rest of the broker.
export { proxySubscriptions } from './feature.ts';
export { topicId, type ProxySubscriptions, type ProxyDoc, type ProxyStatus } from './proxy-subscriptions.ts';
