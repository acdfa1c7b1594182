// What the Sparkplug B feature offers the rest of the broker: the feature, and (re-exported from
// the rule SQL, whose spb_decode() uses it on the workers) the payload decoder.
export { sparkplug } from './feature.ts';
export { decodeSparkplug, SparkplugDecodeError, DATATYPES } from '../../rules/sql/sparkplug.ts';
export type { SparkplugPayload, SparkplugMetric } from '../../rules/sql/sparkplug.ts';
export type { SparkplugState, EdgeNodeState, DeviceState, HostState } from './state.ts';
