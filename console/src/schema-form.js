// @ts-check
// Forms generated from the admin API's route schemas: the body schema of an add route (in the
// OpenAPI document the broker serves at /public/openapi.json) is one shape per type (oneOf with a
// constant `type`, src/admin/schema.ts byType), and each shape's `config` schema gives the fields:
// a string is a text input (a secret a password input), a number or integer a number input with
// its minimum and maximum, a boolean a checkbox, an enum a select, an array of strings a text area
// of one item per line, an object of strings "name: value" lines, an object with properties a
// fieldset, an array of objects a fieldset per item. Defaults are shown filled in and required
// fields are marked. A field left at its default or empty is not sent (the server fills the
// default). A refusal of the API naming a field (`config.url`) is shown at that field. "Raw JSON"
// (closed by default) edits the config as JSON instead, for the fields a form does not show.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { openApiDocument } from './api.js';

const html = htm.bind(h);

/** @typedef {Record<string, any>} Schema */
/** @typedef {{ field?: string, message: string }} FieldProblem */

/** The shapes of the POST body of `path`, by type: {types, config(type) -> schema}. */
export function shapesOf(/** @type {any} */ doc, /** @type {string} */ path) {
  const body = doc?.paths?.[path]?.post?.requestBody?.content?.['application/json']?.schema;
  /** @type {Record<string, Schema>} */
  const configs = {};
  for (const shape of body?.oneOf ?? []) {
    const type = shape.properties?.type?.const;
    if (type !== undefined) configs[type] = shape.properties.config ?? { type: 'object', properties: {} };
  }
  return configs;
}

/** The config schemas of the add route `path`, by type; null until the document is read. */
export function useConfigSchemas(/** @type {string} */ path) {
  const [configs, setConfigs] = useState(/** @type {Record<string, Schema> | null} */ (null));
  const [error, setError] = useState(/** @type {string | null} */ (null));
  useEffect(() => {
    openApiDocument().then((doc) => setConfigs(shapesOf(doc, path)), (err) => setError(`the API's schemas could not be read: ${err.message}`));
  }, [path]);
  return { configs, error };
}

/** A field's default: what the server applies when it is absent (x-default, or default). */
function dflt(/** @type {Schema} */ s) {
  return s['x-default'] ?? s.default;
}

/** A schema of several branches (anyOf/oneOf) as the one the form shows: the first simple one. */
function shown(/** @type {Schema} */ s) {
  const branches = s.anyOf ?? s.oneOf;
  if (!branches) return s;
  const order = ['boolean', 'string', 'integer', 'number'];
  for (const t of order) {
    const b = branches.find((/** @type {Schema} */ x) => x.type === t);
    if (b) return { ...b, description: s.description ?? b.description, 'x-default': dflt(s) ?? dflt(b) };
  }
  return branches[0];
}

/** The map of strings ({name: value}) an object schema may be. */
function isStringMap(/** @type {Schema} */ s) {
  if (s.type !== 'object' || s.properties) return false;
  const values = s.additionalProperties ?? Object.values(s.patternProperties ?? {})[0];
  return values?.type === 'string';
}

function kindOf(/** @type {Schema} */ raw) {
  const s = shown(raw);
  if (s.enum) return 'enum';
  if (s.type === 'object' && s.properties) return 'object';
  if (isStringMap(s)) return 'map';
  if (s.type === 'object') return 'json';
  if (s.type === 'array') return s.items?.type === 'object' ? 'objects' : 'strings';
  if (s.type === 'boolean') return 'boolean';
  if (s.type === 'integer' || s.type === 'number') return 'number';
  return 'string';
}

/** What the form holds for a value of `schema` (`value` absent: its default). */
export function formValue(/** @type {Schema} */ raw, /** @type {any} */ value) {
  const s = shown(raw);
  const v = value === undefined ? dflt(s) : value;
  switch (kindOf(raw)) {
    case 'object': {
      /** @type {Record<string, any>} */
      const out = {};
      for (const [k, sub] of Object.entries(s.properties)) out[k] = formValue(sub, v?.[k]);
      return out;
    }
    case 'objects':
      return Array.isArray(v) ? v.map((x) => formValue(s.items, x)) : [];
    case 'strings':
      return Array.isArray(v) ? v.join('\n') : v === undefined || v === null ? '' : String(v);
    case 'map':
      return v && typeof v === 'object' ? Object.entries(v).map(([k, x]) => `${k}: ${x}`).join('\n') : '';
    case 'json':
      return v === undefined || v === null ? '' : JSON.stringify(v);
    case 'boolean':
      return typeof v === 'boolean' ? v : Boolean(v);
    default:
      return v === undefined || v === null ? '' : String(v);
  }
}

/** The name of field `k` of the value at `path` ("" for a body: the field is its own name). */
export function join(/** @type {string} */ path, /** @type {string} */ k) {
  return path ? `${path}.${k}` : k;
}

/** An error naming the field the form shows it at. */
function fieldError(/** @type {string} */ field, /** @type {string} */ message) {
  return Object.assign(new Error(message), { field });
}

/**
 * The value to send for what the form holds: undefined to leave it out (empty, or at its
 * default when not required). Throws an error naming the field for a text it cannot read.
 */
export function sendValue(/** @type {Schema} */ raw, /** @type {any} */ v, /** @type {boolean} */ required, /** @type {string} */ path) {
  const s = shown(raw);
  const atDefault = (/** @type {any} */ x) => !required && dflt(s) !== undefined && JSON.stringify(x) === JSON.stringify(dflt(s));
  switch (kindOf(raw)) {
    case 'object': {
      /** @type {Record<string, any>} */
      const out = {};
      const req = new Set(s.required ?? []);
      for (const [k, sub] of Object.entries(s.properties)) {
        const x = sendValue(sub, v?.[k], req.has(k), join(path, k));
        if (x !== undefined) out[k] = x;
      }
      return Object.keys(out).length === 0 && !required ? undefined : out;
    }
    case 'objects': {
      const list = (v ?? []).map((/** @type {any} */ x, /** @type {number} */ i) => sendValue(s.items, x, true, `${path}[${i}]`));
      return list.length === 0 && !required ? undefined : list;
    }
    case 'strings': {
      const list = String(v ?? '').split('\n').map((x) => x.trim()).filter(Boolean);
      if (list.length === 0) return required ? [] : undefined;
      // A field that may be one string (or a list) sends one string when one is given.
      if (raw.anyOf && list.length === 1 && raw.anyOf.some((/** @type {Schema} */ b) => b.type === 'string')) return list[0];
      return list;
    }
    case 'map': {
      /** @type {Record<string, string>} */
      const out = {};
      for (const [i, line] of String(v ?? '').split('\n').entries()) {
        if (line.trim() === '') continue;
        const at = line.indexOf(':');
        if (at <= 0) throw fieldError(path, `line ${i + 1}: expected "name: value"`);
        out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
      }
      return Object.keys(out).length === 0 && !required ? undefined : out;
    }
    case 'json': {
      if (String(v ?? '').trim() === '') return undefined;
      try {
        return JSON.parse(v);
      } catch (err) {
        throw fieldError(path, `not valid JSON: ${/** @type {Error} */ (err).message}`);
      }
    }
    case 'boolean':
      if (atDefault(v) || (!required && dflt(s) === undefined && v === false)) return undefined;
      return v;
    case 'number': {
      if (String(v).trim() === '') return undefined;
      const n = Number(v);
      // Not a number: sent as typed, so the server's refusal names the field.
      const x = Number.isFinite(n) ? n : v;
      return atDefault(x) ? undefined : x;
    }
    case 'enum': {
      if (v === '') return undefined;
      const x = s.enum.find((/** @type {any} */ e) => String(e) === v) ?? v;
      return atDefault(x) ? undefined : x;
    }
    default: {
      if (v === '' || v === undefined) return undefined;
      return atDefault(v) ? undefined : v;
    }
  }
}

/** A field's label: its name, and a mark when required. */
function Label({ name, required }) {
  return html`<span class="name">${name}${required && html`<span class="req" title="required"> *</span>`}</span>`;
}

/** The error shown at `path`, if the last refusal named it. */
function ErrorAt({ problem, path }) {
  return problem?.field === path ? html`<span class="error" role="alert">${problem.message}</span>` : null;
}

/**
 * The fields of `schema` (an object schema) for `value`, at `path` ("config"); `onChange` gets
 * the whole new value. `problem`: the last refusal ({field, message}), shown at its field.
 */
export function SchemaFields({ schema, value, onChange, path, problem, legend = undefined }) {
  const s = shown(schema);
  const required = new Set(s.required ?? []);
  const set = (/** @type {string} */ k, /** @type {any} */ x) => onChange({ ...value, [k]: x });
  return html`<fieldset class="schema" data-field=${path}>
    ${legend && html`<legend>${legend}</legend>`}
    ${s.description && html`<p class="muted" style="flex-basis: 100%; margin: 0">${s.description}</p>`}
    ${Object.entries(s.properties ?? {}).map(([k, sub]) => html`<${Field} key=${k} name=${k} schema=${sub} required=${required.has(k)}
      value=${value?.[k]} onChange=${(/** @type {any} */ x) => set(k, x)} path=${join(path, k)} problem=${problem} />`)}
    <${ErrorAt} problem=${problem} path=${path} />
  </fieldset>`;
}

function Field({ name, schema, required, value, onChange, path, problem }) {
  const s = shown(schema);
  const kind = kindOf(schema);
  const invalid = problem?.field === path;
  const hint = s.description ? html`<small>${s.description}</small>` : null;
  const common = { name: path, 'aria-invalid': invalid ? 'true' : undefined, required };
  if (kind === 'object') {
    return html`<${SchemaFields} schema=${s} value=${value} onChange=${onChange} path=${path} problem=${problem} legend=${html`<${Label} name=${name} required=${required} />`} />`;
  }
  if (kind === 'objects') {
    const list = value ?? [];
    return html`<fieldset class="schema" data-field=${path}>
      <legend><${Label} name=${name} required=${required} /></legend>
      ${hint}
      <div class="list">${list.map((item, i) => html`<div class="row" key=${i}>
        <${SchemaFields} schema=${s.items} value=${item} path=${`${path}[${i}]`} problem=${problem} legend=${`${name} ${i + 1}`}
          onChange=${(/** @type {any} */ x) => onChange(list.map((y, j) => (j === i ? x : y)))} />
        <button type="button" aria-label=${`remove ${name} ${i + 1}`} onClick=${() => onChange(list.filter((_, j) => j !== i))}>Remove</button>
      </div>`)}</div>
      <div><button type="button" onClick=${() => onChange([...list, formValue(s.items, undefined)])}>Add ${name}</button></div>
      <${ErrorAt} problem=${problem} path=${path} />
    </fieldset>`;
  }
  let input;
  if (kind === 'boolean') {
    return html`<div class=${`field check${invalid ? ' invalid' : ''}`} data-field=${path}>
      <label class="check"><input type="checkbox" ...${common} required=${false} checked=${Boolean(value)} onChange=${(e) => onChange(e.currentTarget.checked)} /> <${Label} name=${name} required=${required} /></label>
      ${hint}<${ErrorAt} problem=${problem} path=${path} />
    </div>`;
  } else if (kind === 'enum') {
    input = html`<select ...${common} value=${value ?? ''} onChange=${(e) => onChange(e.currentTarget.value)}>
      ${(!required || dflt(s) === undefined) && html`<option value="">${dflt(s) === undefined ? '' : `(default ${dflt(s)})`}</option>`}
      ${s.enum.map((/** @type {any} */ x) => html`<option value=${String(x)}>${String(x)}</option>`)}
    </select>`;
  } else if (kind === 'number') {
    input = html`<input type="number" ...${common} min=${s.minimum} max=${s.maximum} step=${s.type === 'integer' ? 1 : 'any'} value=${value ?? ''} onInput=${(e) => onChange(e.currentTarget.value)} />`;
  } else if (kind === 'strings' || kind === 'map' || kind === 'json' || s['x-multiline']) {
    const placeholder = kind === 'strings' ? 'one per line' : kind === 'map' ? 'name: value (one per line)' : kind === 'json' ? '{ ... } (JSON)' : '';
    input = html`<textarea ...${common} rows="3" spellcheck=${false} placeholder=${placeholder} value=${value ?? ''} onInput=${(e) => onChange(e.currentTarget.value)} />`;
  } else {
    const secret = s.format === 'password';
    input = html`<input type=${secret ? 'password' : 'text'} autocomplete=${secret ? 'new-password' : 'off'} ...${common} minlength=${s.minLength} maxlength=${s.maxLength} value=${value ?? ''} onInput=${(e) => onChange(e.currentTarget.value)} />`;
  }
  return html`<div class=${`field${invalid ? ' invalid' : ''}`} data-field=${path}>
    <label><${Label} name=${name} required=${required} />${input}</label>
    ${hint}<${ErrorAt} problem=${problem} path=${path} />
  </div>`;
}

/** Whether a refusal names a field of `path` (the config), so it is shown there and not above. */
export function atField(/** @type {FieldProblem | null} */ problem, /** @type {string} */ root = 'config') {
  return Boolean(problem?.field && (problem.field === root || problem.field.startsWith(`${root}.`) || problem.field.startsWith(`${root}[`)));
}

/**
 * A config edited with the fields of its type's schema, or as raw JSON (closed by default).
 * `state`: from useConfigForm. The config to send is state.collect().
 */
export function ConfigEditor({ state, problem }) {
  const { schema, value, setValue, raw, setRaw, rawOpen, setRawOpen } = state;
  if (!schema) return html`<p class="muted">Reading the fields of this type…</p>`;
  function toggle(/** @type {any} */ e) {
    const open = e.currentTarget.open;
    if (open && !rawOpen) {
      let current = {};
      try {
        current = sendValue(schema, value, true, 'config') ?? {};
      } catch {
        // a text the fields cannot read yet: start from the fields that can
      }
      setRaw(JSON.stringify(current, null, 2));
    }
    setRawOpen(open);
  }
  const showAtRaw = problem && atField(problem) && rawOpen;
  return html`<div class="config-editor">
    ${!rawOpen && html`<${SchemaFields} schema=${schema} value=${value} onChange=${setValue} path="config" problem=${problem} legend="Config" />`}
    <details class="raw" open=${rawOpen} onToggle=${toggle}>
      <summary>Raw JSON</summary>
      <label>Config (JSON) <textarea name="config" rows="8" spellcheck=${false} value=${raw} onInput=${(e) => setRaw(e.currentTarget.value)} /></label>
      ${showAtRaw && html`<span class="error" role="alert">${problem.field}: ${problem.message}</span>`}
    </details>
  </div>`;
}

/** The state of a ConfigEditor for `schema`, starting from `initial` (a stored config, or the defaults). */
export function useConfigForm(/** @type {Schema | undefined} */ schema, /** @type {any} */ initial = undefined) {
  const [value, setValue] = useState(() => (schema ? formValue(schema, initial ?? {}) : {}));
  const [raw, setRaw] = useState('');
  const [rawOpen, setRawOpen] = useState(false);
  const [forSchema, setForSchema] = useState(schema);
  if (schema !== forSchema) {
    // A new type (or the schemas just read): its fields, from the stored config or defaults.
    setForSchema(schema);
    setValue(schema ? formValue(schema, initial ?? {}) : {});
  }
  return {
    schema,
    value,
    setValue,
    raw,
    setRaw,
    rawOpen,
    setRawOpen,
    /** The config to send; throws an error naming the field for a text it cannot read. */
    collect() {
      if (rawOpen) {
        let v;
        try {
          v = JSON.parse(raw);
        } catch (err) {
          throw fieldError('config', `not valid JSON: ${/** @type {Error} */ (err).message}`);
        }
        if (v === null || typeof v !== 'object' || Array.isArray(v)) throw fieldError('config', 'must be a JSON object ({...})');
        return v;
      }
      return schema ? sendValue(schema, value, true, 'config') : {};
    },
    /** What collect() answers for the config the form started from. */
    unchanged() {
      try {
        return schema ? sendValue(schema, formValue(schema, initial ?? {}), true, 'config') : {};
      } catch {
        return null;
      }
    },
    /** Back to the defaults (after an add). */
    reset() {
      setValue(schema ? formValue(schema, {}) : {});
      setRaw('');
    },
  };
}

/** A refusal as {field, message} (the field the API or the form named, if any). */
export function problemOf(/** @type {any} */ err) {
  const message = err?.message ?? String(err);
  const field = err?.field;
  // The server's message may start with the field it names ("config.url: ..."): said once.
  const text = field && message.startsWith(`${field}: `) ? message.slice(field.length + 2) : message;
  return { field, message: text };
}
