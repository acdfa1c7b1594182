// Owns which command types this build implements: one file per type, each a CommandTypeSpec.
// NACOS is named by the spec but not implemented yet: /command/type leaves
// it out and /command/add refuses it with a 400 naming `type`. A new type is one file and one
// line here.
import { KAFKA_COMMAND } from './kafka.ts';
import { PULSAR_COMMAND } from './pulsar.ts';
import { RABBITMQ_COMMAND } from './rabbitmq.ts';
import { ROCKETMQ_COMMAND } from './rocketmq.ts';
import { SPEC_COMMAND_TYPES, type CommandType, type CommandTypeSpec } from './types.ts';

const BY_TYPE = new Map<string, CommandTypeSpec<unknown>>([KAFKA_COMMAND, ROCKETMQ_COMMAND, RABBITMQ_COMMAND, PULSAR_COMMAND].map((s: CommandTypeSpec<unknown>) => [s.type, s]));

/** The implemented types, in the spec's order. */
export function implementedTypes(): CommandType[] {
  return SPEC_COMMAND_TYPES.filter((t) => BY_TYPE.has(t));
}

export function commandType(type: string): CommandTypeSpec<unknown> | undefined {
  return BY_TYPE.get(type);
}
