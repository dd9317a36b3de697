import { fromBinary, type DescMessage, type Message } from '@bufbuild/protobuf';
import type { Any } from '@bufbuild/protobuf/wkt';
import { messagePlan } from './plan.js';
import { fieldPath, showValue, suffixPath, type Path, type ValidationRun } from './report.js';

const ANY = 'google.protobuf.Any';

/** Every rule of `desc` and of everything nested in `message`, reported into `run`. */
export function visitMessage(desc: DescMessage, message: Message, path: Path, run: ValidationRun): void {
  if (desc.typeName === ANY) {
    visitAny(message as Any, path, run);
    return;
  }
  const plan = messagePlan(desc);
  if (plan.skip) return;
  const fields = message as unknown as Record<string, unknown>;
  for (const check of plan.fields) check(fields, path, run);
  for (const oneof of plan.requiredOneofs) {
    if ((fields[oneof.localName] as { case: unknown }).case === undefined) {
      run.report(fieldPath(path, oneof.name), 'oneof.required', `exactly one of ${oneof.fields.map((f) => f.name).join(', ')} must be set`);
    }
  }
}

/**
 * Unpacks an Any through the run's registry and validates what it holds, under `path(type.Name)`.
 * A type the registry does not know is itself a violation, so gaps in the registry show.
 */
export function visitAny(any: Any, path: Path, run: ValidationRun): void {
  const url = any.typeUrl;
  if (url === '') {
    run.report(path, 'any.unknown_type', 'Any has an empty type URL');
    return;
  }
  const typeName = url.slice(url.lastIndexOf('/') + 1);
  const desc = run.registry.getMessage(typeName);
  if (!desc) {
    run.report(path, 'any.unknown_type', `type ${showValue(url)} is not in the validation registry`);
    return;
  }
  let inner: Message;
  try {
    inner = fromBinary(desc, any.value);
  } catch (err) {
    run.report(path, 'any.decode', `cannot decode ${typeName} from the Any: ${(err as Error).message}`);
    return;
  }
  visitMessage(desc, inner, suffixPath(path, `(${typeName})`), run);
}
