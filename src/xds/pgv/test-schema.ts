import {
  create,
  createFileRegistry,
  setExtension,
  type DescMessage,
  type FileRegistry,
  type Message,
  type MessageInitShape,
} from '@bufbuild/protobuf';
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FieldOptionsSchema,
  file_google_protobuf_any,
  file_google_protobuf_duration,
  file_google_protobuf_timestamp,
  file_google_protobuf_wrappers,
  FileDescriptorProtoSchema,
  MessageOptionsSchema,
  OneofOptionsSchema,
  type DescriptorProtoSchema,
  type FieldDescriptorProto,
} from '@bufbuild/protobuf/wkt';
import { disabled, FieldRulesSchema, file_validate_validate, ignored, required, rules } from '../../gen/validate/validate_pb.js';

/**
 * Test-only: message types with validate options built at runtime (there is no codegen for
 * tests), for the rules no Envoy message exercises. Package `pgvtest`, which also holds
 * `enum Color { COLOR_UNSPECIFIED = 0; RED = 1; GREEN = 2; }`.
 */
export type ScalarName =
  | 'double'
  | 'float'
  | 'int64'
  | 'uint64'
  | 'int32'
  | 'fixed64'
  | 'fixed32'
  | 'bool'
  | 'string'
  | 'bytes'
  | 'uint32'
  | 'sfixed32'
  | 'sfixed64'
  | 'sint32'
  | 'sint64';
/** A scalar, `.pgvtest.Color`, or a message such as `.google.protobuf.Duration` / `.pgvtest.Inner`. */
export type TypeRef = ScalarName | `.${string}`;

export interface FieldSpec {
  readonly name: string;
  readonly type: TypeRef;
  readonly repeated?: boolean;
  /** map<key, type>: `type` is the value type. */
  readonly mapKey?: ScalarName;
  readonly oneof?: string;
  /** proto3 `optional` (explicit presence). */
  readonly optional?: boolean;
  readonly rules?: MessageInitShape<typeof FieldRulesSchema>;
}

export interface MessageSpec {
  readonly name: string;
  readonly fields: readonly FieldSpec[];
  readonly requiredOneofs?: readonly string[];
  readonly disabled?: boolean;
  readonly ignored?: boolean;
}

const TYPE_CODES: Record<ScalarName, FieldDescriptorProto_Type> = {
  double: FieldDescriptorProto_Type.DOUBLE,
  float: FieldDescriptorProto_Type.FLOAT,
  int64: FieldDescriptorProto_Type.INT64,
  uint64: FieldDescriptorProto_Type.UINT64,
  int32: FieldDescriptorProto_Type.INT32,
  fixed64: FieldDescriptorProto_Type.FIXED64,
  fixed32: FieldDescriptorProto_Type.FIXED32,
  bool: FieldDescriptorProto_Type.BOOL,
  string: FieldDescriptorProto_Type.STRING,
  bytes: FieldDescriptorProto_Type.BYTES,
  uint32: FieldDescriptorProto_Type.UINT32,
  sfixed32: FieldDescriptorProto_Type.SFIXED32,
  sfixed64: FieldDescriptorProto_Type.SFIXED64,
  sint32: FieldDescriptorProto_Type.SINT32,
  sint64: FieldDescriptorProto_Type.SINT64,
};

function typeOf(ref: TypeRef): Pick<FieldDescriptorProto, 'type' | 'typeName'> {
  if (!ref.startsWith('.')) return { type: TYPE_CODES[ref as ScalarName], typeName: '' };
  return { type: ref === '.pgvtest.Color' ? FieldDescriptorProto_Type.ENUM : FieldDescriptorProto_Type.MESSAGE, typeName: ref };
}

const entryName = (field: string): string => `${field.replace(/(^|_)(\w)/g, (_, __, c: string) => c.toUpperCase())}Entry`;

function messageProto(spec: MessageSpec): MessageInitShape<typeof DescriptorProtoSchema> {
  const realOneofs = [...new Set(spec.fields.flatMap((f) => (f.oneof ? [f.oneof] : [])))];
  const syntheticOneofs = spec.fields.filter((f) => f.optional).map((f) => `_${f.name}`);
  const nested: MessageInitShape<typeof DescriptorProtoSchema>[] = [];
  const fields = spec.fields.map((f, i) => {
    const options = create(FieldOptionsSchema);
    if (f.rules) setExtension(options, rules, create(FieldRulesSchema, f.rules));
    let type = typeOf(f.type);
    if (f.mapKey) {
      nested.push({
        name: entryName(f.name),
        options: { mapEntry: true },
        field: [
          { name: 'key', number: 1, label: FieldDescriptorProto_Label.OPTIONAL, jsonName: 'key', ...typeOf(f.mapKey) },
          { name: 'value', number: 2, label: FieldDescriptorProto_Label.OPTIONAL, jsonName: 'value', ...typeOf(f.type) },
        ],
      });
      type = { type: FieldDescriptorProto_Type.MESSAGE, typeName: `.pgvtest.${spec.name}.${entryName(f.name)}` };
    }
    return {
      name: f.name,
      number: i + 1,
      jsonName: f.name.replace(/_(\w)/g, (_, c: string) => c.toUpperCase()),
      label: f.repeated || f.mapKey ? FieldDescriptorProto_Label.REPEATED : FieldDescriptorProto_Label.OPTIONAL,
      ...type,
      options,
      ...(f.oneof ? { oneofIndex: realOneofs.indexOf(f.oneof) } : {}),
      ...(f.optional ? { oneofIndex: realOneofs.length + syntheticOneofs.indexOf(`_${f.name}`), proto3Optional: true } : {}),
    };
  });
  const messageOptions = create(MessageOptionsSchema);
  if (spec.disabled) setExtension(messageOptions, disabled, true);
  if (spec.ignored) setExtension(messageOptions, ignored, true);
  return {
    name: spec.name,
    field: fields,
    nestedType: nested,
    options: messageOptions,
    oneofDecl: [
      ...realOneofs.map((name) => {
        const options = create(OneofOptionsSchema);
        if (spec.requiredOneofs?.includes(name)) setExtension(options, required, true);
        return { name, options };
      }),
      ...syntheticOneofs.map((name) => ({ name })),
    ],
  };
}

const DEPENDENCIES = [
  file_validate_validate,
  file_google_protobuf_any,
  file_google_protobuf_duration,
  file_google_protobuf_timestamp,
  file_google_protobuf_wrappers,
];

export function syntheticRegistry(messages: readonly MessageSpec[]): FileRegistry {
  const file = create(FileDescriptorProtoSchema, {
    name: 'pgvtest/test.proto',
    package: 'pgvtest',
    syntax: 'proto3',
    dependency: DEPENDENCIES.map((d) => d.name + '.proto'),
    enumType: [
      {
        name: 'Color',
        value: [
          { name: 'COLOR_UNSPECIFIED', number: 0 },
          { name: 'RED', number: 1 },
          { name: 'GREEN', number: 2 },
        ],
      },
    ],
    messageType: messages.map(messageProto),
  });
  return createFileRegistry(file, (name) => DEPENDENCIES.find((d) => `${d.name}.proto` === name));
}

/** One synthetic message type `pgvtest.M` with these fields. */
export function syntheticMessage(
  fields: readonly FieldSpec[],
  extra: Partial<MessageSpec> = {},
  others: readonly MessageSpec[] = [],
): DescMessage {
  const registry = syntheticRegistry([{ name: 'M', fields, ...extra }, ...others]);
  return registry.getMessage('pgvtest.M')!;
}

/** `create` for a runtime-built type (its init shape is not known to TypeScript). */
export function make(desc: DescMessage, init: Record<string, unknown>): Message {
  return create(desc, init as never) as Message;
}
