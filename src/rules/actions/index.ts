// Owns the table of rule action types (/rule/actions lists it; a rule's action is compiled by the
// spec of its type).
import { REPUBLISH } from './republish.ts';
import { SAVE_KAFKA } from './save-kafka.ts';
import { SAVE_MONGODB } from './save-mongodb.ts';
import { SAVE_MYSQL } from './save-mysql.ts';
import { SAVE_POSTGRESQL } from './save-postgresql.ts';
import { SAVE_REDIS } from './save-redis.ts';
import type { ActionSpec } from './types.ts';
import { WEBHOOK } from './webhook.ts';

export const ACTION_SPECS: readonly ActionSpec[] = [REPUBLISH, SAVE_MYSQL, SAVE_POSTGRESQL, SAVE_REDIS, SAVE_KAFKA, SAVE_MONGODB, WEBHOOK];

const BY_TYPE = new Map(ACTION_SPECS.map((s) => [s.type, s]));

export function actionSpec(type: string): ActionSpec | undefined {
  return BY_TYPE.get(type);
}

export { compileRepublish } from './republish.ts';
export { ActionPipeline, type ActionStats, type PipelineOptions } from './pipeline.ts';
export { ActionConfigError, PartialWriteError, type ActionField, type ActionSpec, type CompiledAction, type CompiledRepublish, type Output } from './types.ts';
