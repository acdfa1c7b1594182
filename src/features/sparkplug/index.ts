// What the Sparkplug B feature offers the rest of the broker: the feature, and the payload decoder
// (spb_decode() in rule SQL).
export { sparkplug } from './feature.ts';
export { decodeSparkplug, SparkplugDecodeError, DATATYPES } from './decode.ts';
export type { SparkplugPayload, SparkplugMetric } from './decode.ts';
export type { SparkplugState, EdgeNodeState, DeviceState, HostState } from './state.ts';
