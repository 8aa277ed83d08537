import { checkAgainstSchema, type ApiObject, type StatusCause } from '@svc/apimachinery';
import { configMapDefinition } from '@svc/kinds';
import { goFormat, jsonUnmarshalMessage, undecodablePatch } from './decode-messages';

const configMaps = configMapDefinition();

/** The first type error of an object, as the store finds it. */
function firstTypeError(obj: ApiObject): StatusCause {
  const [first] = checkAgainstSchema(obj, configMaps.schema, { formats: true }).typeErrors;
  if (!first) throw new Error('no type error');
  return first;
}

const cm = (metadata: Record<string, unknown>): ApiObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', ...metadata } as ApiObject['metadata'] });

describe('decoding errors in the original words', () => {
  it('are encoding/json\'s for ObjectMeta fields: the Go struct field and type', () => {
    const labels = cm({ labels: 'x' });
    expect(jsonUnmarshalMessage(firstTypeError(labels), labels)).toBe('json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels of type map[string]string');
    const value = cm({ annotations: { a: 5 } });
    expect(jsonUnmarshalMessage(firstTypeError(value), value)).toBe('json: cannot unmarshal number into Go struct field ObjectMeta.metadata.annotations of type string');
    const finalizers = cm({ finalizers: { a: true } });
    expect(jsonUnmarshalMessage(firstTypeError(finalizers), finalizers)).toBe('json: cannot unmarshal object into Go struct field ObjectMeta.metadata.finalizers of type []string');
    const generation = cm({ generation: false });
    expect(jsonUnmarshalMessage(firstTypeError(generation), generation)).toBe('json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.generation of type int64');
  });

  it('leave other fields to the schema\'s message', () => {
    const data = { ...cm({}), data: { a: 1 } };
    expect(jsonUnmarshalMessage(firstTypeError(data), data)).toBeUndefined();
  });

  it('print a strategic patch as Go prints a map', () => {
    expect(goFormat({ metadata: { labels: 'x', annotations: { b: '1', a: '2' } }, list: [1, 1.5, true, null] })).toBe('map[list:[1 1.5 true <nil>] metadata:map[annotations:map[a:2 b:1] labels:x]]');
  });

  it('refuse a patch as the original patcher: 422 for the patch field, with the patched object or the patch', () => {
    const patched = cm({ labels: 'x' });
    const merge = undecodablePatch(false, { metadata: { labels: 'x' } }, patched, firstTypeError(patched));
    expect([merge.code, merge.reason]).toEqual([422, 'Invalid']);
    expect(merge.message).toBe(
      ` "" is invalid: patch: Invalid value: ${JSON.stringify(JSON.stringify(patched))}: json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels of type map[string]string`,
    );
    const strategic = undecodablePatch(true, { metadata: { labels: 'x' } }, patched, firstTypeError(patched));
    expect(strategic.message).toBe(' "" is invalid: patch: Invalid value: "map[metadata:map[labels:x]]": cannot restore map from string');
    const other = { ...cm({}), data: { a: 1 } };
    expect(undecodablePatch(false, {}, other, firstTypeError(other)).message).toMatch(/^ "" is invalid: patch: Invalid value: ".*": Invalid value: "number": data\[a\] in body must be of type string: "number"$/);
  });
});
