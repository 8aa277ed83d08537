import { duplicateJsonFields } from './duplicate-fields';

describe('duplicateJsonFields', () => {
  it('finds nothing in a document without duplicates', () => {
    expect(duplicateJsonFields('{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}],"d":"{\\"a\\":1,\\"a\\":2}"}')).toEqual([]);
  });

  it('names each duplicate by its path, at any depth and inside lists', () => {
    const text = JSON.stringify({ x: 0 }).slice(0, -1) + ',"metadata":{"name":"a","labels":{"k":"1","k":"2"},"name":"b"},"spec":{"ports":[{"port":1},{"port":2,"port":3}]},"x":1}';
    expect(duplicateJsonFields(text)).toEqual(['metadata.labels.k', 'metadata.name', 'spec.ports[1].port', 'x']);
  });

  it('compares keys after unescaping, and is not fooled by strings that look like structure', () => {
    expect(duplicateJsonFields('{"a\\u0062":1,"ab":2,"s":"},{\\"","t":[",",{"k":1}]}')).toEqual(['ab']);
  });

  it('handles whitespace and empty containers', () => {
    expect(duplicateJsonFields(' { "a" : { } , "b" : [ ] , "a" : [ 1 , 2 ] } ')).toEqual(['a']);
  });
});
