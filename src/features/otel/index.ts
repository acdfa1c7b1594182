// What the OpenTelemetry metrics and logs export offers the rest of the broker: the feature.
export { otel, type OtelExport } from './feature.ts';
