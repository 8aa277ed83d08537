import type { StatusCause } from '@svc/apimachinery';
import { validateCustomResourceDefinition } from './crd-validation';
import { customResourceDefinitions } from './custom-resources';
import type { Fields } from './object-access';
import { normalizeExtensions } from './structural-schema';
import { compileValidationRules, declaredType, resolveFieldPath, type RuleValidator } from './validation-rules';

const PATH = 'spec.versions[0].schema.openAPIV3Schema';

function root(spec: Fields, extra: Fields = {}): Fields {
  return normalizeExtensions({ type: 'object', ...extra, properties: { spec } }) as Fields;
}

function validator(schema: Fields): RuleValidator {
  const compiled = compileValidationRules(schema, PATH);
  expect(compiled.causes).toEqual([]);
  if (!compiled.validator) throw new Error('no validator');
  return compiled.validator;
}

/** An Established definition of one version whose `spec` has the given schema. */
function definitionWithSpec(spec: Fields): Fields & { metadata: { name: string } } {
  const version = { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec } } } };
  const names = { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' };
  return {
    metadata: { name: 'widgets.example.com' },
    spec: { group: 'example.com', scope: 'Namespaced', names, versions: [version] },
    status: { conditions: [{ type: 'Established', status: 'True' }] },
  };
}

function causesOf(schema: Fields): StatusCause[] {
  return compileValidationRules(schema, PATH).causes;
}

describe('CEL validation rules: compiling a definition', () => {
  test('a rule that does not compile is refused naming the rule', () => {
    const causes = causesOf(root({ type: 'object', properties: { replicas: { type: 'integer' } }, 'x-kubernetes-validations': [{ rule: 'self.replicas >' }] }));
    expect(causes).toHaveLength(1);
    expect(causes[0]?.field).toBe(`${PATH}.properties[spec].x-svc-validations[0].rule`);
    expect(causes[0]?.message).toMatch(/^Invalid value: "self.replicas >": compilation failed: /);
  });

  test('undeclared fields, wrong result types, undeclared variables are compile errors', () => {
    const spec = { type: 'object', properties: { replicas: { type: 'integer' } } };
    expect(causesOf(root({ ...spec, 'x-svc-validations': [{ rule: 'self.replics > 0' }] }))[0]?.message).toMatch(/undefined field 'replics'/);
    expect(causesOf(root({ ...spec, 'x-svc-validations': [{ rule: 'self.replicas' }] }))[0]?.message).toMatch(/must evaluate to bool/);
    expect(causesOf(root({ ...spec, 'x-svc-validations': [{ rule: 'other > 1' }] }))[0]?.message).toMatch(/undeclared reference to 'other'/);
    // Root metadata offers only name and generateName.
    const meta = causesOf(normalizeExtensions({ type: 'object', 'x-svc-validations': [{ rule: 'self.metadata.labels.size() > 0' }] }) as Fields);
    expect(meta[0]?.field).toBe(`${PATH}.x-svc-validations[0].rule`);
    expect(meta[0]?.message).toMatch(/undefined field 'labels'/);
    expect(causesOf(normalizeExtensions({ type: 'object', 'x-svc-validations': [{ rule: 'self.metadata.name.startsWith("a") && self.kind == "W"' }] }) as Fields)).toEqual([]);
  });

  test('messageExpression must compile to a string; message must be one line; reason one of four; rule required', () => {
    const spec = { type: 'object', properties: { n: { type: 'integer' } } };
    const bad = causesOf(
      root({
        ...spec,
        'x-svc-validations': [
          { rule: 'self.n > 0', messageExpression: 'self.n' },
          { rule: 'self.n > 0', message: 'two\nlines' },
          { rule: 'self.n > 0', reason: 'FieldValueTooLong' },
          { message: 'no rule' },
          { rule: 'self.n > 0', messageExpression: 'self.nn + "x"' },
        ],
      }),
    );
    const x = `${PATH}.properties[spec].x-svc-validations`;
    expect(bad).toEqual([
      expect.objectContaining({ field: `${x}[0].messageExpression`, message: expect.stringMatching(/must evaluate to string/) }),
      expect.objectContaining({ field: `${x}[1].message`, message: expect.stringMatching(/must not contain line breaks/) }),
      expect.objectContaining({ field: `${x}[2].reason`, reason: 'FieldValueNotSupported' }),
      expect.objectContaining({ field: `${x}[3].rule`, reason: 'FieldValueRequired' }),
      expect.objectContaining({ field: `${x}[4].messageExpression`, message: expect.stringMatching(/^Invalid value: "self.nn \+ \\"x\\"": messageExpression compilation failed: undefined field 'nn'/) }),
    ]);
  });

  test('fieldPath must resolve against the schema', () => {
    const node = normalizeExtensions({ type: 'object', properties: { a: { type: 'object', properties: { 'b.c': { type: 'string' } } }, m: { type: 'object', additionalProperties: { type: 'string' } } } }) as Fields;
    expect(resolveFieldPath(".a['b.c']", node)).toEqual({ path: '.a.b.c' });
    expect(resolveFieldPath(".m['k']", node)).toEqual({ path: '.m[k]' });
    expect(resolveFieldPath('.m.k', node)).toEqual({ path: '.m[k]' });
    expect(resolveFieldPath('.x', node)).toEqual({ error: 'does not refer to a valid field' });
    expect(resolveFieldPath('a', node)).toEqual({ error: 'expected [ or . but got: a' });
    const causes = causesOf(root({ ...node, 'x-svc-validations': [{ rule: 'true', fieldPath: '.nope' }] }));
    expect(causes[0]).toMatchObject({ field: `${PATH}.properties[spec].x-svc-validations[0].fieldPath`, message: 'Invalid value: ".nope": fieldPath must be a valid path: does not refer to a valid field' });
  });

  test('an estimated cost above the per-rule limit is refused, asking for maxItems/maxLength; bounds make it fit', () => {
    const rule = { rule: 'self.all(x, self.all(y, x != y || x == y))' };
    const unbounded = causesOf(root({ type: 'array', items: { type: 'string' }, 'x-svc-validations': [rule] }));
    expect(unbounded).toContainEqual(
      expect.objectContaining({
        reason: 'FieldValueForbidden',
        field: `${PATH}.properties[spec].x-svc-validations[0].rule`,
        message: expect.stringMatching(/^Forbidden: estimated rule cost exceeds budget by factor of more than 100x \(try simplifying the rule, or adding maxItems, maxProperties, and maxLength/),
      }),
    );
    expect(causesOf(root({ type: 'array', maxItems: 20, items: { type: 'string', maxLength: 10 }, 'x-svc-validations': [rule] }))).toEqual([]);
  });

  test('a rule is charged once per place it runs, and the schema total has its own limit', () => {
    // Each item's rule is cheap; an unbounded list makes it run too many times.
    const perItem = { type: 'string', 'x-svc-validations': [{ rule: 'self.matches("^[a-z]+$")' }] };
    expect(causesOf(root({ type: 'array', items: { ...perItem, maxLength: 100 } }))[0]?.message).toMatch(/estimated rule cost exceeds budget/);
    expect(causesOf(root({ type: 'array', maxItems: 100, items: { ...perItem, maxLength: 100 } }))).toEqual([]);
    // Twelve rules of about 9M each: each fits, the total (over 100M) does not.
    const big = { rule: 'self.all(x, self.all(y, x == y))' };
    const spec = { type: 'array', maxItems: 950, items: { type: 'integer' }, 'x-svc-validations': Array.from({ length: 12 }, () => big) };
    const causes = causesOf(root(spec));
    expect(causes).toEqual([expect.objectContaining({ field: PATH, message: expect.stringMatching(/^Forbidden: x-svc-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget/) })]);
  });

  test('oldSelf inside items of a list that is not a map list is refused; optionalOldSelf is refused', () => {
    const items = { type: 'object', required: ['k'], properties: { k: { type: 'string' } }, 'x-svc-validations': [{ rule: 'self == oldSelf' }] };
    expect(causesOf(root({ type: 'array', maxItems: 5, items }))[0]?.message).toMatch(/oldSelf cannot be used on the uncorrelatable portion/);
    expect(causesOf(root({ type: 'array', maxItems: 5, 'x-svc-list-type': 'map', 'x-svc-list-map-keys': ['k'], items }))).toEqual([]);
    const optional = causesOf(root({ type: 'object', 'x-svc-validations': [{ rule: 'true', optionalOldSelf: true }] }));
    expect(optional[0]).toMatchObject({ reason: 'FieldValueForbidden', message: 'Forbidden: may not be set if oldSelf is not used in rule' });
  });

  test('a definition with a bad rule is refused by the definition validation, naming the field', () => {
    const crd = definitionWithSpec({ type: 'object', 'x-kubernetes-validations': [{ rule: 'self.x ==' }] });
    const causes = validateCustomResourceDefinition(crd);
    expect(causes).toHaveLength(1);
    expect(causes[0]?.field).toBe('spec.versions[0].schema.openAPIV3Schema.properties[spec].x-svc-validations[0].rule');
  });
});

describe('CEL validation rules: types from the schema', () => {
  test('objects, maps, lists, int-or-string, preserve-unknown', () => {
    const schema = normalizeExtensions({
      type: 'object',
      properties: {
        spec: {
          type: 'object',
          properties: {
            labels: { type: 'object', additionalProperties: { type: 'string' } },
            ports: { type: 'array', items: { type: 'integer' } },
            port: { 'x-kubernetes-int-or-string': true },
            free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            ratio: { type: 'number' },
          },
        },
      },
    }) as Fields;
    expect(declaredType(schema, true)).toEqual({
      object: {
        apiVersion: 'string',
        kind: 'string',
        metadata: { object: { name: 'string', generateName: 'string' } },
        spec: { object: { labels: { map: 'string' }, ports: { list: 'int' }, port: 'dyn', free: 'dyn', ratio: 'double' } },
      },
    });
  });

  test('rules see typed values: a missing optional field is has() false, maps, lists and int-or-string', () => {
    const v = validator(
      root({
        type: 'object',
        properties: {
          replicas: { type: 'integer' },
          labels: { type: 'object', maxProperties: 10, additionalProperties: { type: 'string', maxLength: 20 } },
          ports: { type: 'array', maxItems: 10, items: { type: 'integer' } },
          port: { 'x-kubernetes-int-or-string': true },
          ratio: { type: 'number' },
        },
        'x-svc-validations': [
          { rule: '!has(self.replicas) || self.replicas >= 0', message: 'replicas must not be negative' },
          { rule: '!has(self.labels) || self.labels.all(k, k.startsWith("a") && self.labels[k] != "")', message: 'bad labels' },
          { rule: '!has(self.ports) || self.ports.isSorted()', message: 'ports must be sorted' },
          { rule: '!has(self.port) || (type(self.port) == int ? self.port > 0 : self.port.endsWith("%"))', message: 'bad port' },
          { rule: '!has(self.ratio) || self.ratio + 0.5 < 2.0', message: 'ratio too large' },
        ],
      }),
    );
    expect(v.validate({ spec: {} })).toEqual([]);
    expect(v.validate({ spec: { replicas: 1, labels: { ab: 'x' }, ports: [1, 2], port: 'a%', ratio: 1 } })).toEqual([]);
    expect(v.validate({ spec: { replicas: -1, labels: { b: 'x' }, ports: [2, 1], port: 0, ratio: 2 } }).map((c) => c.message)).toEqual([
      'Invalid value: replicas must not be negative',
      'Invalid value: bad labels',
      'Invalid value: ports must be sorted',
      'Invalid value: bad port',
      'Invalid value: ratio too large',
    ]);
    expect(v.validate({ spec: { port: 'a' } })[0]?.field).toBe('spec');
  });
});

describe('CEL validation rules: objects', () => {
  const spec = {
    type: 'object',
    properties: {
      name: { type: 'string', maxLength: 20, 'x-svc-validations': [{ rule: 'self.lowerAscii() == self' }] },
      min: { type: 'integer' },
      max: { type: 'integer' },
      tags: { type: 'array', maxItems: 10, items: { type: 'string', maxLength: 10 } },
      env: { type: 'object', maxProperties: 5, additionalProperties: { type: 'string', maxLength: 10, 'x-svc-validations': [{ rule: 'self != ""', message: 'must not be empty' }] } },
    },
    'x-svc-validations': [
      { rule: '!has(self.min) || !has(self.max) || self.min <= self.max', message: 'min must not exceed max', fieldPath: '.min' },
      { rule: '!has(self.tags) || self.tags.all(t, self.tags.indexOf(t) == self.tags.lastIndexOf(t))', messageExpression: '"tags repeat: " + self.tags.join(",")', reason: 'FieldValueDuplicate' },
      { rule: 'has(self.name)', reason: 'FieldValueRequired', message: 'name is required', fieldPath: '.name' },
      { rule: '!has(self.env) || !("FORBIDDEN" in self.env)', reason: 'FieldValueForbidden', message: 'FORBIDDEN may not be set' },
    ],
  };
  const v = validator(root(spec));

  test('the default reason and message: failed rule', () => {
    expect(v.validate({ spec: { name: 'Abc' } })).toEqual([{ reason: 'FieldValueInvalid', field: 'spec.name', message: 'Invalid value: "Abc": failed rule: self.lowerAscii() == self' }]);
  });

  test('fieldPath moves the cause; each reason has its form', () => {
    expect(v.validate({ spec: { name: 'a', min: 3, max: 1 } })).toEqual([{ reason: 'FieldValueInvalid', field: 'spec.min', message: 'Invalid value: min must not exceed max' }]);
    expect(v.validate({ spec: {} })).toEqual([{ reason: 'FieldValueRequired', field: 'spec.name', message: 'Required value: name is required' }]);
    expect(v.validate({ spec: { name: 'a', env: { FORBIDDEN: 'x' } } })).toEqual([{ reason: 'FieldValueForbidden', field: 'spec', message: 'Forbidden: FORBIDDEN may not be set' }]);
    expect(v.validate({ spec: { name: 'a', tags: ['x', 'x'] } })).toEqual([{ reason: 'FieldValueDuplicate', field: 'spec', message: 'Duplicate value' }]);
  });

  test('messageExpression gives the message; one that fails falls back to the message or the rule', () => {
    const m = validator(root({ type: 'object', properties: { n: { type: 'integer' } }, 'x-svc-validations': [{ rule: 'self.n < 10', messageExpression: '"n is " + string(self.n) + ", above 9"' }, { rule: 'self.n < 5', message: 'small', messageExpression: '"" + string(1/0)' }] }));
    expect(m.validate({ spec: { n: 12 } }).map((c) => c.message)).toEqual(['Invalid value: n is 12, above 9', 'Invalid value: small']);
  });

  test('rules on map values name the key', () => {
    expect(v.validate({ spec: { name: 'a', env: { A: '' } } })).toEqual([{ reason: 'FieldValueInvalid', field: 'spec.env[A]', message: 'Invalid value: "": must not be empty' }]);
  });

  test('a runtime error names the field and the rule', () => {
    const e = validator(root({ type: 'object', properties: { n: { type: 'integer' } }, 'x-svc-validations': [{ rule: '10 / self.n > 1' }] }));
    expect(e.validate({ spec: { n: 0 } })[0]).toMatchObject({ field: 'spec', message: expect.stringMatching(/^Invalid value: "object": .*divide by zero evaluating rule: 10 \/ self.n > 1$/) });
  });
});

describe('CEL validation rules: quantities', () => {
  const v = validator(
    root({
      type: 'object',
      properties: { request: { type: 'string', maxLength: 32 }, limit: { type: 'string', maxLength: 32 } },
      'x-svc-validations': [
        { rule: 'isQuantity(self.request) && isQuantity(self.limit)', message: 'request and limit must be quantities' },
        { rule: '!isQuantity(self.request) || !isQuantity(self.limit) || quantity(self.limit).compareTo(quantity(self.request)) >= 0', message: 'limit must not be below request', fieldPath: '.limit' },
      ],
    }),
  );

  test('limit >= request compares the values across suffixes', () => {
    expect(v.validate({ spec: { request: '1G', limit: '1Gi' } })).toEqual([]);
    expect(v.validate({ spec: { request: '1024Mi', limit: '1Gi' } })).toEqual([]);
    expect(v.validate({ spec: { request: '1.5', limit: '1500m' } })).toEqual([]);
    expect(v.validate({ spec: { request: '1Gi', limit: '1G' } })).toEqual([{ reason: 'FieldValueInvalid', field: 'spec.limit', message: 'Invalid value: limit must not be below request' }]);
    expect(v.validate({ spec: { request: '1Gi', limit: '1GB' } })).toEqual([{ reason: 'FieldValueInvalid', field: 'spec', message: 'Invalid value: request and limit must be quantities' }]);
  });

  test('a rule whose result is a quantity is refused', () => {
    const causes = causesOf(root({ type: 'object', properties: { limit: { type: 'string' } }, 'x-svc-validations': [{ rule: 'quantity(self.limit)' }] }));
    expect(causes[0]?.message).toMatch(/must evaluate to bool \(the expression's type is quantity\)/);
  });
});

describe('CEL validation rules: transition rules', () => {
  const v = validator(
    root({
      type: 'object',
      properties: {
        id: { type: 'string', maxLength: 10, 'x-svc-validations': [{ rule: 'self == oldSelf', message: 'id is immutable' }] },
        items: {
          type: 'array',
          maxItems: 10,
          'x-svc-list-type': 'map',
          'x-svc-list-map-keys': ['name'],
          items: { type: 'object', required: ['name'], properties: { name: { type: 'string', maxLength: 10 }, size: { type: 'integer', 'x-svc-validations': [{ rule: 'self >= oldSelf', message: 'size may only grow' }] } } },
        },
      },
    }),
  );

  test('a rule with oldSelf does not run on create', () => {
    expect(v.validate({ spec: { id: 'a', items: [{ name: 'x', size: 1 }] } })).toEqual([]);
  });

  test('on update it runs where an old value exists, correlating map lists by key', () => {
    const old = { spec: { id: 'a', items: [{ name: 'x', size: 5 }] } };
    expect(v.validate({ spec: { id: 'b', items: [{ name: 'y', size: 1 }, { name: 'x', size: 4 }] } }, old)).toEqual([
      { reason: 'FieldValueInvalid', field: 'spec.id', message: 'Invalid value: "b": id is immutable' },
      { reason: 'FieldValueInvalid', field: 'spec.items[1].size', message: 'Invalid value: 4: size may only grow' },
    ]);
    // A field absent before has no old value: the rule does not run.
    expect(v.validate({ spec: { id: 'b' } }, { spec: {} })).toEqual([]);
    expect(v.validate({ spec: { id: 'b' } }, old, 'stateless')).toEqual([]);
    expect(v.validate({ spec: { id: 'b' } }, old, 'transition')).toHaveLength(1);
  });
});

describe('CEL validation rules: runtime cost', () => {
  test('a request whose rules cost more than the runtime budget stops with an error naming the field', () => {
    // Each rule fits the per-call limit (1M) and the estimates fit theirs; twelve of them on large input exceed the request's 10M.
    const rule = { rule: 'self.all(w, w.matches("^[a-z]+[0-9]*$"))' };
    const words = { type: 'array', maxItems: 30, items: { type: 'string', maxLength: 2000 }, 'x-svc-validations': Array.from({ length: 12 }, () => rule) };
    const v = validator(root({ type: 'object', properties: { words } }));
    const word = 'a'.repeat(2000);
    expect(v.validate({ spec: { words: [word] } })).toEqual([]);
    const causes = v.validate({ spec: { words: Array.from({ length: 30 }, () => word) } });
    expect(causes).toEqual([expect.objectContaining({ field: 'spec.words', message: expect.stringMatching(/running out of cost budget, no further validation rules will be run/) })]);
  });
});

describe('CEL validation rules: registry entries', () => {
  test('rules are compiled into the strategy; a failing object is refused on create, a transition rule on update', () => {
    const crd = definitionWithSpec({ type: 'object', properties: { size: { type: 'integer', 'x-kubernetes-validations': [{ rule: 'self <= 10', message: 'at most 10' }, { rule: 'self >= oldSelf', message: 'may not shrink' }] } } });
    const [def] = customResourceDefinitions(crd);
    const strategy = def?.strategy;
    const obj = (size: number): Fields & { metadata: { name: string } } => ({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' }, spec: { size } });
    expect(strategy?.validate?.(obj(11))).toEqual([{ reason: 'FieldValueInvalid', field: 'spec.size', message: 'Invalid value: 11: at most 10' }]);
    expect(strategy?.validate?.(obj(5))).toEqual([]);
    const updated = obj(4);
    expect(strategy?.validate?.(updated)).toEqual([]);
    expect(strategy?.validateUpdate?.(updated, obj(5))).toEqual([{ reason: 'FieldValueInvalid', field: 'spec.size', message: 'Invalid value: 4: may not shrink' }]);
  });
});
