// Owns the save_mongodb action: one document per output into a fixed collection, a batch as one
// insertMany. The document is `document` ({field: value template}; other JSON values are kept as
// constants) or, by default, the output itself.
import type { ValueTemplate } from '../template.ts';
import { batchSize, expectSource, requiredString, sourceId, valueTemplate, type Config } from './action-config.ts';
import { ActionConfigError, type ActionSpec, type CompiledAction, type Output } from './types.ts';

export const SAVE_MONGODB: ActionSpec = {
  type: 'save_mongodb',
  sourceType: 'mongodb',
  description: 'Inserts one document per output into a collection (insertMany per batch).',
  fields: [
    { name: 'source', type: 'string', required: true, description: 'id of the mongodb source' },
    { name: 'collection', type: 'string', required: true, description: 'collection name (no templates)' },
    { name: 'document', type: 'object', required: false, description: '{field: value template}; absent: the output itself' },
    { name: 'batchSize', type: 'integer', required: false, description: 'most documents in one insertMany', default: 500 },
  ],
  compile: compileSaveMongodb,
};

export function compileSaveMongodb(config: Config): CompiledAction {
  const source = sourceId(config);
  const collection = requiredString(config, 'collection');
  if (collection.includes('$') || collection.includes('\u0000') || collection.includes('${') || collection.startsWith('system.') || collection.length > 120) {
    throw new ActionConfigError('collection', 'must be a plain collection name (no $, no templates, not system.*)');
  }
  const document = documentTemplate(config.document);
  const maxBatch = batchSize(config, 500);
  return {
    kind: 'write',
    sourceId: source,
    maxBatch,
    async write(s, outputs) {
      // Copies: the driver adds `_id` to what it inserts, and outputs are shared with other actions.
      await expectSource(s, 'mongodb').insertMany(collection, outputs.map(document ?? ((o: Output) => ({ ...o }))));
    },
  };
}

function documentTemplate(v: unknown): ((o: Output) => Record<string, unknown>) | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'object' || Array.isArray(v)) throw new ActionConfigError('document', 'must be an object of {field: template}');
  const fields: [string, ValueTemplate | null, unknown][] = [];
  for (const [name, value] of Object.entries(v)) {
    if (name === '' || name.startsWith('$')) throw new ActionConfigError(`document.${name}`, 'is not a valid field name');
    fields.push(typeof value === 'string' ? [name, valueTemplate(value, `document.${name}`), null] : [name, null, value]);
  }
  return (o) => {
    const doc: Record<string, unknown> = {};
    for (const [name, t, fixed] of fields) doc[name] = t ? t(o) : fixed;
    return doc;
  };
}
