// The schema registry as the rule SQL sees it (schema_decode, schema_encode): set once per thread
// by the registry's runtime (src/features/schema-registry), so the SQL stays free of it. Without
// one, both functions fail the row.

export interface SchemaCodecs {
  /** The payload decoded by schema `name` to a map; throws Error naming what failed. */
  decode(name: string, payload: Uint8Array, messageType: string | undefined): Record<string, unknown>;
  /** A map encoded by schema `name`; throws Error naming what failed. */
  encode(name: string, value: unknown, messageType: string | undefined): Buffer;
}

let codecs: SchemaCodecs | null = null;

export function setSchemaCodecs(c: SchemaCodecs | null): void {
  codecs = c;
}

export function schemaCodecs(): SchemaCodecs | null {
  return codecs;
}
