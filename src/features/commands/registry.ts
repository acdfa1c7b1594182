// Owns which command types this build implements: one file per type, each a CommandTypeSpec
// (its consumer, with the library it needs, is in a file of its own that create() loads on first
// use: importing this table loads no library).
// KAFKA, ROCKETMQ, RABBITMQ and PULSAR are inbound bridges; NACOS is a registration (this broker's
// endpoints as instances of a Nacos service while it runs). Every type the spec names is here; an
// unknown type is refused by /command/add with a 400 naming `type`. A new type is its spec's file
// (and its consumer's) and one line here.
import { KAFKA_COMMAND } from './kafka.ts';
import { NACOS_COMMAND } from './nacos.ts';
import { PULSAR_COMMAND } from './pulsar.ts';
import { RABBITMQ_COMMAND } from './rabbitmq.ts';
import { ROCKETMQ_COMMAND } from './rocketmq.ts';
import { SPEC_COMMAND_TYPES, type CommandType, type CommandTypeSpec } from './types.ts';

const BY_TYPE = new Map<string, CommandTypeSpec<unknown>>([KAFKA_COMMAND, ROCKETMQ_COMMAND, RABBITMQ_COMMAND, PULSAR_COMMAND, NACOS_COMMAND].map((s: CommandTypeSpec<unknown>) => [s.type, s]));

/** The implemented types, in the spec's order. */
export function implementedTypes(): CommandType[] {
  return SPEC_COMMAND_TYPES.filter((t) => BY_TYPE.has(t));
}

export function commandType(type: string): CommandTypeSpec<unknown> | undefined {
  return BY_TYPE.get(type);
}
