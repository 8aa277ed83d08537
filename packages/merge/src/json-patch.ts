/**
 * JSON patch (RFC 6902) on top of fast-json-patch, and JSON merge patch
 * (RFC 7386). Both work on copies.
 *
 * Errors follow the upstream handler: a patch document that cannot be read is
 * BadRequest (400); a well-formed patch that cannot be applied (a failed
 * `test`, a missing path) is Invalid (422).
 */
import { applyOperation, JsonPatchError, Operation, validate } from 'fast-json-patch';
import { MergeError } from './errors';
import { cloneJson, getKey, isJsonObject, JsonObject, JsonValue, setKey, toJson, typeName } from './json';

/** Upstream refuses longer patches. */
export const MAX_JSON_PATCH_OPERATIONS = 10000;

export type JsonPatchOperation =
  | { op: 'add' | 'replace' | 'test'; path: string; value: JsonValue }
  | { op: 'remove'; path: string }
  | { op: 'move' | 'copy'; from: string; path: string };

const OPS = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test']);

/** Applies an RFC 6902 patch; `operations` is the parsed patch document. */
export function jsonPatch(original: unknown, operations: unknown): JsonValue {
  const doc = toJson(original, 'the original document');
  const ops = readOperations(operations);
  let current: JsonValue = doc;
  ops.forEach((op, index) => {
    checkArrayIndexes(current, op, index);
    try {
      // The document is already a private copy: let the library work in place.
      current = applyOperation(current, op as Operation, true, true, true, index).newDocument as JsonValue;
    } catch (err) {
      throw applyError(err, op, index);
    }
  });
  return current;
}

function readOperations(operations: unknown): JsonPatchOperation[] {
  const ops = toJson(operations, 'the patch');
  if (!Array.isArray(ops)) throw patchBad('', `the patch must be a JSON array of operations, got ${typeName(ops)}`);
  if (ops.length > MAX_JSON_PATCH_OPERATIONS) {
    throw patchBad('', `the allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${ops.length}`);
  }
  ops.forEach((op, i) => {
    if (!isJsonObject(op)) throw patchBad(`[${i}]`, 'an operation must be an object');
    if (typeof op.op !== 'string' || !OPS.has(op.op)) throw patchBad(`[${i}].op`, `unknown operation ${JSON.stringify(op.op ?? null)}`);
    if (typeof op.path !== 'string') throw patchBad(`[${i}].path`, `operation ${op.op} needs a path`);
    if ((op.op === 'move' || op.op === 'copy') && typeof op.from !== 'string') throw patchBad(`[${i}].from`, `operation ${op.op} needs from`);
  });
  // The library's own checks: pointer syntax, values present where required.
  const problem = validate(ops as unknown as Operation[]);
  if (problem) throw patchBad(`[${problem.index ?? 0}]`, problem.message.split('\n')[0] ?? problem.name);
  ops.forEach((op, i) => {
    const o = op as JsonObject;
    if (o.op === 'move' && typeof o.from === 'string' && typeof o.path === 'string' && o.path.startsWith(`${o.from}/`)) {
      throw patchBad(`[${i}]`, 'a value cannot be moved into one of its own children');
    }
  });
  return ops as unknown as JsonPatchOperation[];
}

/**
 * RFC 6901: an array index is `0` or digits without a leading zero, or `-`
 * where a new item is added. fast-json-patch is laxer, so check first.
 */
function checkArrayIndexes(doc: JsonValue, op: JsonPatchOperation, index: number): void {
  const pointers: Array<[string, boolean]> = [[op.path, op.op === 'add' || op.op === 'move' || op.op === 'copy']];
  if (op.op === 'move' || op.op === 'copy') pointers.push([op.from, false]);
  for (const [pointer, mayAppend] of pointers) {
    const tokens = pointer.split('/').slice(1);
    let node: JsonValue | undefined = doc;
    for (let t = 0; t < tokens.length && node !== undefined; t++) {
      const token = (tokens[t] as string).replace(/~1/g, '/').replace(/~0/g, '~');
      const last = t === tokens.length - 1;
      if (Array.isArray(node)) {
        const ok = /^(0|[1-9][0-9]*)$/.test(token) || (last && mayAppend && token === '-');
        if (!ok) throw applyFailed(op, index, `invalid array index ${JSON.stringify(token)} in ${JSON.stringify(pointer)}`);
        node = node[Number(token)];
      } else if (isJsonObject(node)) {
        node = Object.prototype.hasOwnProperty.call(node, token) ? node[token] : undefined;
      } else node = undefined;
    }
  }
  if (op.op === 'remove' && op.path === '') throw applyFailed(op, index, 'the whole document cannot be removed');
}

function applyError(err: unknown, op: JsonPatchOperation, index: number): MergeError {
  if (err instanceof MergeError) return err;
  if (err instanceof JsonPatchError) {
    const first = err.message.split('\n')[0] ?? err.name;
    return applyFailed(op, index, err.name === 'TEST_OPERATION_FAILED' ? `test failed: the value at ${JSON.stringify(op.path)} differs` : first);
  }
  const message = err instanceof Error ? err.message.split('\n')[0] ?? 'cannot apply the operation' : 'cannot apply the operation';
  return applyFailed(op, index, message);
}

function patchBad(field: string, message: string): MergeError {
  return MergeError.badRequest(`invalid JSON patch: ${field ? `${field}: ` : ''}${message}`, [
    { field: field || '.', message, reason: 'FieldValueInvalid' },
  ]);
}

function applyFailed(op: JsonPatchOperation, index: number, message: string): MergeError {
  return MergeError.invalidDocument(`the JSON patch could not be applied: operation ${index} (${op.op} ${op.path}): ${message}`, [
    { field: op.path || '.', message, reason: 'FieldValueInvalid' },
  ]);
}

/**
 * Applies an RFC 7386 merge patch: objects merge recursively, `null` deletes,
 * anything else (lists included) replaces.
 */
export function mergePatch(original: unknown, patch: unknown): JsonValue {
  const doc = toJson(original, 'the original document');
  const p = toJson(patch, 'the patch');
  return applyMergePatch(doc, p);
}

function applyMergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isJsonObject(patch)) return cloneJson(patch);
  const out: JsonObject = isJsonObject(target) ? { ...target } : {};
  for (const k in patch) {
    const v = patch[k] as JsonValue;
    if (v === null) delete out[k];
    else setKey(out, k, applyMergePatch(getKey(out, k), v));
  }
  return out;
}
