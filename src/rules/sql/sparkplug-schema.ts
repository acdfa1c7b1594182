// The Sparkplug B payload schema (the Payload message of Eclipse Tahu's sparkplug_b.proto,
// package org.eclipse.tahu.protobuf, as the Sparkplug 3.0 specification defines it), given to
// protobufjs as a JSON descriptor: the field names, numbers and types of the wire format, so a
// payload any Sparkplug B client encodes decodes here. The schema is Tahu's (EPL-2.0,
// https://github.com/eclipse/tahu/blob/master/sparkplug_b/sparkplug_b.proto); this descriptor is
// written for Spindle from it. Extensions ("extensions N to max") carry no fields and are left out:
// protobufjs skips unknown fields.
import { createRequire } from 'node:module';

import type protobuf from 'protobufjs';

const VALUE_ONEOF = (names: string[]) => ({ value: { oneof: names } });

const DESCRIPTOR = {
  nested: {
    org: { nested: { eclipse: { nested: { tahu: { nested: { protobuf: { nested: {
      Payload: {
        fields: {
          timestamp: { type: 'uint64', id: 1 },
          metrics: { rule: 'repeated', type: 'Metric', id: 2 },
          seq: { type: 'uint64', id: 3 },
          uuid: { type: 'string', id: 4 },
          body: { type: 'bytes', id: 5 },
        },
        nested: {
          Template: {
            oneofs: {},
            fields: {
              version: { type: 'string', id: 1 },
              metrics: { rule: 'repeated', type: 'Metric', id: 2 },
              parameters: { rule: 'repeated', type: 'Parameter', id: 3 },
              template_ref: { type: 'string', id: 4 },
              is_definition: { type: 'bool', id: 5 },
            },
            nested: {
              Parameter: {
                oneofs: VALUE_ONEOF(['int_value', 'long_value', 'float_value', 'double_value', 'boolean_value', 'string_value']),
                fields: {
                  name: { type: 'string', id: 1 },
                  type: { type: 'uint32', id: 2 },
                  int_value: { type: 'uint32', id: 3 },
                  long_value: { type: 'uint64', id: 4 },
                  float_value: { type: 'float', id: 5 },
                  double_value: { type: 'double', id: 6 },
                  boolean_value: { type: 'bool', id: 7 },
                  string_value: { type: 'string', id: 8 },
                },
              },
            },
          },
          DataSet: {
            fields: {
              num_of_columns: { type: 'uint64', id: 1 },
              columns: { rule: 'repeated', type: 'string', id: 2 },
              types: { rule: 'repeated', type: 'uint32', id: 3 },
              rows: { rule: 'repeated', type: 'Row', id: 4 },
            },
            nested: {
              DataSetValue: {
                oneofs: VALUE_ONEOF(['int_value', 'long_value', 'float_value', 'double_value', 'boolean_value', 'string_value']),
                fields: {
                  int_value: { type: 'uint32', id: 1 },
                  long_value: { type: 'uint64', id: 2 },
                  float_value: { type: 'float', id: 3 },
                  double_value: { type: 'double', id: 4 },
                  boolean_value: { type: 'bool', id: 5 },
                  string_value: { type: 'string', id: 6 },
                },
              },
              Row: { fields: { elements: { rule: 'repeated', type: 'DataSetValue', id: 1 } } },
            },
          },
          PropertyValue: {
            oneofs: VALUE_ONEOF(['int_value', 'long_value', 'float_value', 'double_value', 'boolean_value', 'string_value', 'propertyset_value', 'propertysets_value']),
            fields: {
              type: { type: 'uint32', id: 1 },
              is_null: { type: 'bool', id: 2 },
              int_value: { type: 'uint32', id: 3 },
              long_value: { type: 'uint64', id: 4 },
              float_value: { type: 'float', id: 5 },
              double_value: { type: 'double', id: 6 },
              boolean_value: { type: 'bool', id: 7 },
              string_value: { type: 'string', id: 8 },
              propertyset_value: { type: 'PropertySet', id: 9 },
              propertysets_value: { type: 'PropertySetList', id: 10 },
            },
          },
          PropertySet: {
            fields: {
              keys: { rule: 'repeated', type: 'string', id: 1 },
              values: { rule: 'repeated', type: 'PropertyValue', id: 2 },
            },
          },
          PropertySetList: { fields: { propertyset: { rule: 'repeated', type: 'PropertySet', id: 1 } } },
          MetaData: {
            fields: {
              is_multi_part: { type: 'bool', id: 1 },
              content_type: { type: 'string', id: 2 },
              size: { type: 'uint64', id: 3 },
              seq: { type: 'uint64', id: 4 },
              file_name: { type: 'string', id: 5 },
              file_type: { type: 'string', id: 6 },
              md5: { type: 'string', id: 7 },
              description: { type: 'string', id: 8 },
            },
          },
          Metric: {
            oneofs: VALUE_ONEOF(['int_value', 'long_value', 'float_value', 'double_value', 'boolean_value', 'string_value', 'bytes_value', 'dataset_value', 'template_value']),
            fields: {
              name: { type: 'string', id: 1 },
              alias: { type: 'uint64', id: 2 },
              timestamp: { type: 'uint64', id: 3 },
              datatype: { type: 'uint32', id: 4 },
              is_historical: { type: 'bool', id: 5 },
              is_transient: { type: 'bool', id: 6 },
              is_null: { type: 'bool', id: 7 },
              metadata: { type: 'MetaData', id: 8 },
              properties: { type: 'PropertySet', id: 9 },
              int_value: { type: 'uint32', id: 10 },
              long_value: { type: 'uint64', id: 11 },
              float_value: { type: 'float', id: 12 },
              double_value: { type: 'double', id: 13 },
              boolean_value: { type: 'bool', id: 14 },
              string_value: { type: 'string', id: 15 },
              bytes_value: { type: 'bytes', id: 16 },
              dataset_value: { type: 'DataSet', id: 17 },
              template_value: { type: 'Template', id: 18 },
            },
          },
        },
      },
    } } } } } } } },
  },
};

const require = createRequire(import.meta.url);
let payloadType: protobuf.Type | undefined;

/** The protobufjs type of a Sparkplug B payload, made (and protobufjs loaded) on the first
 * spb_decode: a worker that decodes none loads no protobufjs (loading libraries a worker does
 * not use cost it a quarter to a third of its fan-in rate; see test/node/light-start.test.ts). */
export function sparkplugPayloadType(): protobuf.Type {
  return (payloadType ??= (require('protobufjs') as typeof protobuf).Root.fromJSON(DESCRIPTOR).lookupType('org.eclipse.tahu.protobuf.Payload'));
}
