import type { Schema } from './schema';
import { checkAgainstSchema } from './schema-check';
import { base64ErrorOffset, decodeBytesField, decodeTimeField, integerRangeProblem, quantityProblem, QUANTITY_FORMAT_MESSAGE, QUANTITY_SUFFIX_MESSAGE } from './scalar-formats';

const offsetOf = (text: string): number | undefined => base64ErrorOffset(Buffer.from(text, 'utf8'));

describe('bytes (format: byte), as Go decodes a []byte', () => {
  it('accepts standard base64 with padding, and the empty string', () => {
    for (const text of ['', 'AAAA', 'aGk=', 'aGVsbG8gd29ybGQ=', 'AA==', '+/+/', Buffer.from([0, 255, 254, 1, 2]).toString('base64')]) {
      expect(decodeBytesField(text)).toEqual({ outcome: 'accepted' });
    }
  });

  it('refuses another alphabet, naming the byte Go stops at', () => {
    expect(decodeBytesField('abcd$efg')).toEqual({ outcome: 'refused', message: 'illegal base64 data at input byte 4' });
    expect(decodeBytesField('ab-_')).toEqual({ outcome: 'refused', message: 'illegal base64 data at input byte 2' });
    expect(decodeBytesField('not base64!')).toEqual({ outcome: 'refused', message: 'illegal base64 data at input byte 3' });
    // Offsets count UTF-8 bytes, as Go's do.
    expect(decodeBytesField('é...')).toEqual({ outcome: 'refused', message: 'illegal base64 data at input byte 0' });
    expect(offsetOf('AAAAé')).toBe(4);
  });

  it('refuses missing, misplaced or excess padding', () => {
    expect(offsetOf('aGk')).toBe(0); // a short final quantum: padding is required
    expect(offsetOf('aGVsbG8')).toBe(4);
    expect(offsetOf('a')).toBe(0);
    expect(offsetOf('aGVsb')).toBe(4);
    expect(offsetOf('a===')).toBe(1);
    expect(offsetOf('====')).toBe(0);
    expect(offsetOf('aG=k')).toBe(2); // "==" expected; Go names the byte before
    expect(offsetOf('aG=')).toBe(3);
    expect(offsetOf('aGk=aGk=')).toBe(4); // nothing may follow padding
    expect(offsetOf('aGk==')).toBe(4);
    for (const text of ['aGk', 'a===', 'aGk=aGk=', 'aG=k']) expect(decodeBytesField(text).outcome).toBe('refused');
  });

  it('ignores line breaks as Go does, storing the bytes re-encoded', () => {
    expect(offsetOf('aGVs\nbG8=\r\n')).toBeUndefined();
    expect(decodeBytesField('aGVs\nbG8=\r\n')).toEqual({ outcome: 'normalized', value: 'aGVsbG8=' });
    expect(decodeBytesField('aG\n=\n=')).toEqual({ outcome: 'normalized', value: 'aA==' });
    expect(offsetOf('aG=\n')).toBe(4);
  });

  it('tolerates unused bits in the last character (not strict), storing the canonical form', () => {
    expect(decodeBytesField('aGl=')).toEqual({ outcome: 'normalized', value: 'aGk=' });
    expect(decodeBytesField('ab==')).toEqual({ outcome: 'normalized', value: 'aQ==' });
  });

  it('agrees with the fast test on every short input over a small alphabet', () => {
    const alphabet = ['A', 'b', '=', '$', '\n'];
    const all = (n: number): string[] => (n === 0 ? [''] : all(n - 1).flatMap((p) => alphabet.map((c) => p + c)));
    for (let n = 0; n <= 6; n++) {
      for (const text of all(n)) {
        const decodes = offsetOf(text) === undefined;
        expect([text, decodeBytesField(text).outcome !== 'refused']).toEqual([text, decodes]);
      }
    }
  });
});

describe('times (format: date-time), as metav1.Time decodes them', () => {
  it('accepts RFC 3339 in UTC in whole seconds as sent', () => {
    for (const text of ['2024-01-02T03:04:05Z', '2024-02-29T23:59:59Z', '0000-01-01T00:00:00Z']) {
      expect([text, decodeTimeField(text, 'second')]).toEqual([text, { outcome: 'accepted' }]);
    }
  });

  it('without a precision, keeps a valid time as sent', () => {
    for (const text of ['2024-01-02T03:04:05.123Z', '2024-01-02T03:04:05+01:00', '2024-01-02T03:04:05.5-07:30']) {
      expect([text, decodeTimeField(text)]).toEqual([text, { outcome: 'accepted' }]);
    }
    expect(decodeTimeField('2024-01-02T03:04:05,5Z')).toEqual({ outcome: 'normalized', value: '2024-01-02T03:04:05.5Z' });
  });

  it('stores a Time as the original writes it back: UTC, whole seconds, the fraction dropped', () => {
    const written = (text: string): string => {
      const decoded = decodeTimeField(text, 'second');
      return decoded.outcome === 'normalized' ? decoded.value : decoded.outcome;
    };
    expect(written('2024-01-02T03:04:05.123Z')).toBe('2024-01-02T03:04:05Z');
    expect(written('2024-01-02T03:04:05.123456789Z')).toBe('2024-01-02T03:04:05Z');
    expect(written('2024-01-02T03:04:05+01:00')).toBe('2024-01-02T02:04:05Z');
    expect(written('2024-01-02T03:04:05.5-07:30')).toBe('2024-01-02T10:34:05Z');
    expect(written('2024-01-02T03:04:05.858899+00:00')).toBe('2024-01-02T03:04:05Z');
    expect(written('2024-01-02T03:04:05+24:00')).toBe('2024-01-01T03:04:05Z');
    expect(written('2024-03-01T00:30:00+01:00')).toBe('2024-02-29T23:30:00Z');
    // A UTC year the original cannot write (before 0000) is kept in its strict form.
    expect(written('0000-01-01T00:00:00+01:00')).toBe('accepted');
  });

  it('stores a MicroTime with exactly six fraction digits in UTC', () => {
    const micro = (text: string) => decodeTimeField(text, 'micro');
    expect(micro('2024-01-02T03:04:05.123456Z')).toEqual({ outcome: 'accepted' });
    // What JavaScript's Date#toISOString and Python's isoformat() send.
    expect(micro('2024-01-02T03:04:05.560Z')).toEqual({ outcome: 'normalized', value: '2024-01-02T03:04:05.560000Z' });
    expect(micro('2024-01-02T03:04:05.632849+00:00')).toEqual({ outcome: 'normalized', value: '2024-01-02T03:04:05.632849Z' });
    expect(micro('2024-01-02T03:04:05+00:00')).toEqual({ outcome: 'normalized', value: '2024-01-02T03:04:05.000000Z' });
    expect(micro('2024-01-02T03:04:05Z')).toEqual({ outcome: 'normalized', value: '2024-01-02T03:04:05.000000Z' });
    expect(micro('2024-01-02T03:04:05.123456789-02:00')).toEqual({ outcome: 'normalized', value: '2024-01-02T05:04:05.123456Z' });
    expect(micro('2024-01-02T03:04:05,5Z')).toEqual({ outcome: 'normalized', value: '2024-01-02T03:04:05.500000Z' });
    expect(micro('garbage')).toMatchObject({ outcome: 'refused' });
  });

  it('refuses garbage with Go time.Parse messages', () => {
    expect(decodeTimeField('garbage')).toEqual({ outcome: 'refused', message: 'parsing time "garbage" as "2006-01-02T15:04:05Z07:00": cannot parse "garbage" as "2006"' });
    expect(decodeTimeField('')).toEqual({ outcome: 'refused', message: 'parsing time "" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "2006"' });
    expect(decodeTimeField('2024-01-02')).toEqual({ outcome: 'refused', message: 'parsing time "2024-01-02" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T"' });
    expect(decodeTimeField('2024/01/02T03:04:05Z')).toEqual({ outcome: 'refused', message: 'parsing time "2024/01/02T03:04:05Z" as "2006-01-02T15:04:05Z07:00": cannot parse "/01/02T03:04:05Z" as "-"' });
    expect(decodeTimeField('2024-01-02 03:04:05Z')).toMatchObject({ message: expect.stringContaining('cannot parse " 03:04:05Z" as "T"') });
    expect(decodeTimeField('2024-01-02T03:04:05')).toMatchObject({ message: expect.stringContaining('cannot parse "" as "Z07:00"') });
    expect(decodeTimeField('2024-01-02t03:04:05z')).toMatchObject({ outcome: 'refused' });
    expect(decodeTimeField('2024-01-02T03:04:05z')).toMatchObject({ message: expect.stringContaining('cannot parse "z" as "Z07:00"') });
    expect(decodeTimeField('2024-01-02T03:04:05+0100')).toMatchObject({ message: expect.stringContaining('cannot parse "+0100" as "Z07:00"') });
    expect(decodeTimeField('2024-01-02T03:04:05.Z')).toMatchObject({ message: expect.stringContaining('cannot parse ".Z" as "Z07:00"') });
    expect(decodeTimeField('2024-1-02T03:04:05Z')).toMatchObject({ message: expect.stringContaining('cannot parse "1-02T03:04:05Z" as "01"') });
    expect(decodeTimeField('2024-01-02T03:04:05Zjunk')).toEqual({ outcome: 'refused', message: 'parsing time "2024-01-02T03:04:05Zjunk": extra text: "junk"' });
    expect(decodeTimeField('"\n')).toMatchObject({ message: 'parsing time "\\"\\x0a" as "2006-01-02T15:04:05Z07:00": cannot parse "\\"\\x0a" as "2006"' });
  });

  it('refuses fields out of range in the order Go checks them', () => {
    const problem = (text: string): string | undefined => {
      const decoded = decodeTimeField(text);
      return decoded.outcome === 'refused' ? decoded.message : undefined;
    };
    expect(problem('2024-13-02T03:04:05Z')).toBe('parsing time "2024-13-02T03:04:05Z": month out of range');
    expect(problem('2024-00-02T03:04:05Z')).toBe('parsing time "2024-00-02T03:04:05Z": month out of range');
    expect(problem('2024-01-02T24:00:00Z')).toBe('parsing time "2024-01-02T24:00:00Z": hour out of range');
    expect(problem('2024-01-02T03:60:00Z')).toBe('parsing time "2024-01-02T03:60:00Z": minute out of range');
    expect(problem('2024-01-02T03:04:60Z')).toBe('parsing time "2024-01-02T03:04:60Z": second out of range');
    expect(problem('2023-02-29T03:04:05Z')).toBe('parsing time "2023-02-29T03:04:05Z": day out of range');
    expect(problem('2024-04-31T03:04:05Z')).toBe('parsing time "2024-04-31T03:04:05Z": day out of range');
    expect(problem('2024-01-00T03:04:05Z')).toBe('parsing time "2024-01-00T03:04:05Z": day out of range');
    expect(problem('2024-01-02T03:04:05+25:00')).toBe('parsing time "2024-01-02T03:04:05+25:00": time zone offset hour out of range');
    expect(problem('2024-01-02T03:04:05+01:61')).toBe('parsing time "2024-01-02T03:04:05+01:61": time zone offset minute out of range');
    // The day is checked last, after the offset.
    expect(problem('2024-02-31T03:04:05+25:00')).toBe('parsing time "2024-02-31T03:04:05+25:00": time zone offset hour out of range');
  });

  it('spells out what Go accepts beyond strict RFC 3339', () => {
    expect(decodeTimeField('2024-01-02T03:04:05,5Z', 'second')).toEqual({ outcome: 'normalized', value: '2024-01-02T03:04:05Z' });
    expect(decodeTimeField('2024-01-02T3:04:05Z', 'second')).toEqual({ outcome: 'normalized', value: '2024-01-02T03:04:05Z' });
    expect(decodeTimeField('2024-01-02T03:04:05.1234567891234+02:00', 'second')).toEqual({ outcome: 'normalized', value: '2024-01-02T01:04:05Z' });
    expect(decodeTimeField('2024-01-02T03:04:05.1234567891234+02:00')).toEqual({ outcome: 'normalized', value: '2024-01-02T03:04:05.123456789+02:00' });
  });
});

describe('sized integers', () => {
  it('bounds int32 and int64 as Go does', () => {
    expect(integerRangeProblem('int32', 2147483647)).toBeUndefined();
    expect(integerRangeProblem('int32', -2147483648)).toBeUndefined();
    expect(integerRangeProblem('int32', 2147483648)).toBe('cannot unmarshal number 2147483648 into a field of type int32');
    expect(integerRangeProblem('int32', -2147483649)).toBe('cannot unmarshal number -2147483649 into a field of type int32');
    expect(integerRangeProblem('int64', 99999999999)).toBeUndefined();
    expect(integerRangeProblem('int64', Number.MAX_SAFE_INTEGER)).toBeUndefined();
    expect(integerRangeProblem('int64', Number.MIN_SAFE_INTEGER)).toBeUndefined();
    // Within int64 but not held exactly by a double: stored, it would change, and 2^63 - 1 would read back beyond int64.
    expect(integerRangeProblem('int64', JSON.parse('9223372036854775807') as number)).toBe('int64 value too large to be stored exactly: integers from -9007199254740991 to 9007199254740991 are accepted');
    expect(integerRangeProblem('int64', 2 ** 53)).toBeDefined();
    expect(integerRangeProblem('int64', -(2 ** 63))).toBeDefined();
    expect(integerRangeProblem('int64', 1e19)).toBe('cannot unmarshal number 10000000000000000000 into a field of type int64');
    expect(integerRangeProblem('int64', -1e19)).toBeDefined();
    expect(integerRangeProblem(undefined, 1e30)).toBeUndefined();
  });
});

describe('quantities', () => {
  it('accepts what resource.ParseQuantity parses, strings and numbers', () => {
    for (const value of ['1', '500m', '1.5Gi', '2e3', '1E+3', '1e-3', '.5', '5.', '+1k', '-1', '0', ' 1Gi ', '100Ki', '1E', '1u', '1n', 0.5, 3, 1e21]) {
      expect([value, quantityProblem(value)]).toEqual([value, undefined]);
    }
  });

  it("refuses what it does not, with the original's messages", () => {
    expect(quantityProblem('lots')).toBe(QUANTITY_FORMAT_MESSAGE);
    expect(quantityProblem('')).toBe(QUANTITY_FORMAT_MESSAGE);
    expect(quantityProblem('1.5.3')).toBe(QUANTITY_FORMAT_MESSAGE);
    expect(quantityProblem('1 Gi')).toBe(QUANTITY_FORMAT_MESSAGE);
    expect(quantityProblem(true)).toBe(QUANTITY_FORMAT_MESSAGE);
    expect(quantityProblem({ cpu: 1 })).toBe(QUANTITY_FORMAT_MESSAGE);
    expect(quantityProblem('1GB')).toBe(QUANTITY_FORMAT_MESSAGE);
    expect(quantityProblem('1Gi-')).toBe(QUANTITY_SUFFIX_MESSAGE);
    expect(quantityProblem('1K')).toBe(QUANTITY_SUFFIX_MESSAGE);
    expect(quantityProblem('1e')).toBe(QUANTITY_SUFFIX_MESSAGE);
    expect(quantityProblem('1Ki5')).toBe(QUANTITY_SUFFIX_MESSAGE);
    expect(quantityProblem('1e99999999999999999999')).toBe(QUANTITY_SUFFIX_MESSAGE);
  });
});

describe('checkAgainstSchema with formats', () => {
  const schema: Schema = {
    type: 'object',
    properties: {
      metadata: { type: 'object', properties: { creationTimestamp: { type: 'string', format: 'date-time', nullable: true }, generation: { type: 'integer', format: 'int64' } } },
      binaryData: { type: 'object', additionalProperties: { type: 'string', format: 'byte' } },
      ports: { type: 'array', items: { type: 'object', properties: { port: { type: 'integer', format: 'int32' }, targetPort: { 'x-svc-int-or-string': true } } } },
      limits: { type: 'object', additionalProperties: { format: 'quantity' } },
    },
  };

  it('names the field of each value that does not decode', () => {
    const result = checkAgainstSchema(
      {
        metadata: { creationTimestamp: 'garbage' },
        binaryData: { ok: 'aGk=', bad: 'abcd$' },
        ports: [{ port: 80 }, { port: 99999999999, targetPort: 2 ** 31 }],
        limits: { cpu: 'lots' },
      },
      schema,
      { formats: true },
    );
    expect(result.typeErrors).toEqual([
      { reason: 'FieldValueInvalid', field: 'metadata.creationTimestamp', message: 'metadata.creationTimestamp: parsing time "garbage" as "2006-01-02T15:04:05Z07:00": cannot parse "garbage" as "2006"' },
      { reason: 'FieldValueInvalid', field: 'binaryData[bad]', message: 'binaryData[bad]: illegal base64 data at input byte 4' },
      { reason: 'FieldValueInvalid', field: 'ports[1].port', message: 'ports[1].port: cannot unmarshal number 99999999999 into a field of type int32' },
      { reason: 'FieldValueInvalid', field: 'ports[1].targetPort', message: 'ports[1].targetPort: cannot unmarshal number 2147483648 into a field of type int32' },
      { reason: 'FieldValueInvalid', field: 'limits[cpu]', message: `limits[cpu]: ${QUANTITY_FORMAT_MESSAGE}` },
    ]);
  });

  it('stores times as the original writes them back, by precision', () => {
    const timed: Schema = { type: 'object', properties: { renewTime: { type: 'string', format: 'date-time', 'x-svc-micro-time': true }, lastTransitionTime: { type: 'string', format: 'date-time' } } };
    const result = checkAgainstSchema({ renewTime: '2024-01-02T03:04:05.560Z', lastTransitionTime: '2024-01-02T04:04:05.560+01:00' }, timed, { formats: true });
    expect(result.typeErrors).toEqual([]);
    expect(result.pruned).toEqual({ renewTime: '2024-01-02T03:04:05.560000Z', lastTransitionTime: '2024-01-02T03:04:05Z' });
    // Without formats (custom resources' own fields) a time is kept as sent.
    expect(checkAgainstSchema({ renewTime: '2024-01-02T03:04:05.560Z' }, timed).pruned).toEqual({ renewTime: '2024-01-02T03:04:05.560Z' });
  });

  it('stores the spelling the original stores, and keeps a null time', () => {
    const result = checkAgainstSchema({ metadata: { creationTimestamp: null }, binaryData: { wrapped: 'aGVs\nbG8=' } }, schema, { formats: true });
    expect(result.typeErrors).toEqual([]);
    expect(result.pruned).toEqual({ metadata: { creationTimestamp: null }, binaryData: { wrapped: 'aGVsbG8=' } });
  });

  it('leaves formats alone unless asked (custom resources, reads)', () => {
    const obj = { metadata: { creationTimestamp: 'garbage' }, binaryData: { bad: 'abcd$', wrapped: 'aGVs\nbG8=' }, ports: [{ port: 99999999999 }], limits: { cpu: 'lots' } };
    expect(checkAgainstSchema(obj, schema).typeErrors).toEqual([]);
    expect(checkAgainstSchema(obj, schema).pruned).toEqual(obj);
    expect(checkAgainstSchema(obj, schema, { unstructured: true }).typeErrors).toEqual([]);
  });

  it('decodes only the metadata of a custom resource (formats: metadata)', () => {
    const obj = { metadata: { creationTimestamp: 'garbage' }, binaryData: { bad: 'abcd$' }, ports: [{ port: 99999999999 }], limits: { cpu: 'lots' } };
    const result = checkAgainstSchema(obj, schema, { unstructured: true, formats: 'metadata' });
    expect(result.formatErrors.map((c) => c.field)).toEqual(['metadata.creationTimestamp']);
    expect(result.typeErrors.map((c) => c.field)).toEqual(['metadata.creationTimestamp']);
  });

  it('reports a mistyped value as a type mismatch, not a format problem', () => {
    const result = checkAgainstSchema({ binaryData: { n: 5 }, ports: [{ port: 1.5 }] }, schema, { formats: true });
    expect(result.typeErrors.map((c) => c.reason)).toEqual(['FieldValueTypeInvalid', 'FieldValueTypeInvalid']);
    expect(result.formatErrors).toEqual([]);
  });
});
