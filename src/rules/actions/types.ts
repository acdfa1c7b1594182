// The contract of rule actions (main thread, except republish): what an action type declares for
// /rule/actions (ActionSpec: its fields and the source type it writes to), what compiling one
// action's config gives (CompiledAction: templates parsed once, then `write` of a batch of rule
// outputs to a source), and the errors of both. An ActionPipeline (pipeline.ts) drives `write`.
import type { Template } from '../template.ts';
import type { AnySource, SourceType } from '../../sources/types.ts';

export type Output = Record<string, unknown>;

export interface ActionField {
  name: string;
  type: 'string' | 'integer' | 'boolean' | 'object' | 'array';
  required: boolean;
  description: string;
  default?: unknown;
}

export interface ActionSpec {
  /** The action type of a rule (`save_mysql`). */
  type: string;
  /** The type of source `config.source` must name; null: the action writes to no source. The
   * caller checks the source exists and has this type when the rule is added. */
  sourceType: SourceType | null;
  description: string;
  fields: ActionField[];
  /** Validates and compiles a config; throws ActionConfigError naming the field relative to the
   * config (`table`), which the caller prefixes (`actions[0].config.table`). */
  compile(config: Record<string, unknown>): CompiledAction | CompiledRepublish;
}

export interface CompiledAction {
  readonly kind: 'write';
  readonly sourceId: string;
  /** Most outputs one `write` takes. */
  readonly maxBatch: number;
  /**
   * Writes a batch to the source. Rejects with a SourceError (transient: the pipeline retries the
   * batch) or a PartialWriteError (some outputs written, some refused, some to retry).
   */
  write(source: AnySource, outputs: readonly Output[]): Promise<void>;
}

/** Republish runs inside the worker threads, which compile the config themselves (compileRepublish):
 * the main thread only validates it, and this is what validation produces. */
export interface CompiledRepublish {
  readonly kind: 'republish';
  readonly topic: Template;
  /** null: the payload is the JSON of the output. */
  readonly payload: Template | null;
  readonly qos: 0 | 1 | 2;
  readonly retain: boolean;
}

/** An action's config is wrong; `field` is relative to the config (`table`, `columns.temp`). */
export class ActionConfigError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'ActionConfigError';
  }
}

/** A batch was partly written (requests sent one per output): `refused` outputs were refused for
 * good (with `refusedError`), `retry` are the outputs whose write failed transiently (with
 * `retryError`); the others were written. */
export class PartialWriteError extends Error {
  constructor(
    readonly refused: number,
    readonly refusedError: Error | null,
    readonly retry: readonly Output[],
    readonly retryError: Error | null,
  ) {
    super(`${refused} refused, ${retry.length} to retry: ${(refusedError ?? retryError)?.message ?? 'no error'}`, { cause: refusedError ?? retryError });
    this.name = 'PartialWriteError';
  }
}
