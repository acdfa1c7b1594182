// Owns the save_redis action: one Redis command per output, built from templates
// (["HSET", "dev:${clientid}", "temp", "${payload.temp}"], or the same as one string split on
// spaces), a batch sent as one pipeline. The command name is a constant; commands that administer
// or read the server (FLUSHALL, CONFIG, KEYS, SUBSCRIBE, ...) are refused when the rule is added.
import type { Template } from '../template.ts';
import { batchSize, constant, expectSource, sourceId, template, type Config } from './action-config.ts';
import { ActionConfigError, type ActionSpec, type CompiledAction } from './types.ts';

const REFUSED = new Set([
  'FLUSHALL', 'FLUSHDB', 'CONFIG', 'SHUTDOWN', 'DEBUG', 'MONITOR', 'SYNC', 'PSYNC', 'REPLICAOF', 'SLAVEOF', 'MIGRATE',
  'MODULE', 'ACL', 'CLIENT', 'CLUSTER', 'SCRIPT', 'FUNCTION', 'EVAL', 'EVALSHA', 'KEYS', 'SCAN', 'SUBSCRIBE',
  'PSUBSCRIBE', 'SSUBSCRIBE', 'BLPOP', 'BRPOP', 'BLMOVE', 'BZPOPMIN', 'BZPOPMAX', 'WAIT', 'MULTI', 'EXEC', 'SAVE', 'BGSAVE',
]);

export const SAVE_REDIS: ActionSpec = {
  type: 'save_redis',
  sourceType: 'redis',
  description: 'Runs one Redis command per output (templates), a batch in one pipeline.',
  fields: [
    { name: 'source', type: 'string', required: true, description: 'id of the redis source' },
    { name: 'command', type: 'array', required: true, description: 'the command as an array of templates, or one string split on spaces, e.g. "HSET dev:${clientid} temp ${payload.temp}"' },
    { name: 'batchSize', type: 'integer', required: false, description: 'most commands in one pipeline', default: 500 },
  ],
  compile: compileSaveRedis,
};

export function compileSaveRedis(config: Config): CompiledAction {
  const source = sourceId(config);
  const args = commandTemplates(config.command);
  const maxBatch = batchSize(config, 500);
  return {
    kind: 'write',
    sourceId: source,
    maxBatch,
    async write(s, outputs) {
      await expectSource(s, 'redis').pipeline(outputs.map((o) => args.map((arg) => arg(o))));
    },
  };
}

function commandTemplates(v: unknown): Template[] {
  const parts = typeof v === 'string' ? v.split(' ').filter((p) => p !== '') : v;
  if (!Array.isArray(parts) || parts.length === 0) throw new ActionConfigError('command', 'is required: an array of templates or a string');
  parts.forEach((p, i) => {
    if (typeof p !== 'string') throw new ActionConfigError(`command[${i}]`, 'must be a template string');
  });
  const name = parts[0] as string;
  if (!constant(name, 'command[0]') || !/^[A-Za-z][A-Za-z.|_-]*$/.test(name)) throw new ActionConfigError('command[0]', 'must be a command name without placeholders');
  if (REFUSED.has(name.toUpperCase())) throw new ActionConfigError('command[0]', `${name} is not allowed in a rule action`);
  return (parts as string[]).map((p, i) => template(p, `command[${i}]`));
}
