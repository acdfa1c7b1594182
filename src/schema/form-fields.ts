// Schema pieces the per-type config schemas share (data sources, policies, commands): they are
// in the admin routes' body schemas, so the OpenAPI document lists each type's fields and the
// console builds its forms from them. A config's own module still checks what a schema cannot
// say (one field against another, a URL's scheme); fields the schemas do not list are left to it.
import { Type, type TProperties, type TSchema } from '@sinclair/typebox';

/** Marks a field the console shows as a password input (its value is never answered). */
export const SECRET = { format: 'password' } as const;

/** An integer field with its range and default (the default is documentation: the module fills it). */
export function int(min: number, max: number, fallback: number | undefined, description?: string) {
  return Type.Optional(Type.Integer({ minimum: min, maximum: max, ...(fallback === undefined ? {} : { 'x-default': fallback }), ...(description ? { description } : {}) }));
}

export const optionalText = (description?: string, extra: Record<string, unknown> = {}) => Type.Optional(Type.String({ ...(description ? { description } : {}), ...extra }));
export const secret = (description?: string) => optionalText(description, SECRET);

/** An object of string values (headers, claims, metadata). */
export const stringMap = (description: string) => Type.Optional(Type.Record(Type.String(), Type.String(), { description }));

/** `tls`: off, on (verified), or {rejectUnauthorized, ca}. */
export const TLS = Type.Optional(Type.Union([
  Type.Boolean(),
  Type.Object({ rejectUnauthorized: Type.Optional(Type.Boolean({ 'x-default': true })), ca: Type.Optional(Type.String({ description: 'PEM of the CA to trust' })) }),
], { description: 'true: TLS, verified; or {rejectUnauthorized, ca}' }));

/** A config's fields; other fields are left to the module that reads the config. */
export function configOf(properties: TProperties, description: string): TSchema {
  return Type.Object(properties, { description });
}
