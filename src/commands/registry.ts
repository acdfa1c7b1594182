// Owns which command types this build implements: one file per type, each a CommandTypeSpec.
// KAFKA and RABBITMQ are inbound bridges; NACOS is a registration (this broker's endpoints as
// instances of a Nacos service while it runs). A type the spec names that is not here
// (ROCKETMQ, PULSAR unless added) is left out of /command/type and refused by /command/add with a
// 400 naming `type`. A new type is one file and one line here.
import { KAFKA_COMMAND } from './kafka.ts';
import { NACOS_COMMAND } from './nacos.ts';
import { RABBITMQ_COMMAND } from './rabbitmq.ts';
import { SPEC_COMMAND_TYPES, type CommandType, type CommandTypeSpec } from './types.ts';

const BY_TYPE = new Map<string, CommandTypeSpec<unknown>>([KAFKA_COMMAND, RABBITMQ_COMMAND, NACOS_COMMAND].map((s: CommandTypeSpec<unknown>) => [s.type, s]));

/** The implemented types, in the spec's order. */
export function implementedTypes(): CommandType[] {
  return SPEC_COMMAND_TYPES.filter((t) => BY_TYPE.has(t));
}

export function commandType(type: string): CommandTypeSpec<unknown> | undefined {
  return BY_TYPE.get(type);
}
