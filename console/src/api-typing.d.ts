// The types that tie the console's calls (api.js) to the admin API's OpenAPI document
// (api-types.d.ts, generated): a call names a path of the document and one of its methods; its
// body, path parameters and query are those of that route. Hand-written; api-types.d.ts is not.
import type { paths } from './api-types';

export type Paths = paths;
export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
type Op<P extends keyof Paths, M extends Method> = Lowercase<M> extends keyof Paths[P] ? NonNullable<Paths[P][Lowercase<M>]> : never;

/** The paths that have method M. */
export type PathOf<M extends Method> = { [P in keyof Paths]: Op<P, M> extends never ? never : Op<P, M> extends { parameters: unknown } ? P : never }[keyof Paths];

/** The JSON body of M on P (undefined when the route takes none). */
export type BodyOf<P extends keyof Paths, M extends Method> = Op<P, M> extends { requestBody?: { content: { 'application/json': infer B } } } ? B : undefined;

/** The path parameters of M on P ({id}, {clientId}, ...). */
export type ParamsOf<P extends keyof Paths, M extends Method> = Op<P, M> extends { parameters: { path?: infer X } } ? (X extends Record<string, unknown> ? X : never) : never;

/** The query parameters of M on P. */
export type QueryOf<P extends keyof Paths, M extends Method> = Op<P, M> extends { parameters: { query?: infer X } } ? (X extends Record<string, unknown> ? X : never) : never;

/** What a call takes besides its body: the path's parameters and the query string. */
export interface CallOptions<P extends keyof Paths, M extends Method> {
  params?: ParamsOf<P, M>;
  query?: QueryOf<P, M>;
}

/** The paths of the control platform (/api/v1) without their prefix. */
export type V1Path<M extends Method> = PathOf<M> extends infer P ? (P extends `/api/v1${infer R}` ? R : never) : never;
