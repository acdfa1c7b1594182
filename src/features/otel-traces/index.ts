// OpenTelemetry traces: what the other features and the root may use.
export { otelTraces, type OtelTraces } from './feature.ts';
