import { selectedName } from './authorization';

describe('the name a list or watch is limited to', () => {
  const info = (verb: string, fieldSelector?: string, name = '') => ({ verb, name, query: new URLSearchParams(fieldSelector === undefined ? '' : `fieldSelector=${encodeURIComponent(fieldSelector)}`) });
  test.each([
    ['list', 'metadata.name=app-config', 'app-config'],
    ['watch', 'metadata.name==app-config', 'app-config'],
    ['list', 'metadata.namespace=x,metadata.name=a', 'a'],
    ['list', 'metadata.name!=a', ''],
    ['list', 'spec.nodeName=n1', ''],
    ['list', undefined, ''],
    ['get', 'metadata.name=a', ''],
  ])('%s with %j -> %j', (verb, selector, expected) => {
    expect(selectedName(info(verb, selector))).toBe(expected);
  });

  test('a named request keeps its name', () => {
    expect(selectedName(info('get', 'metadata.name=b', 'a'))).toBe('a');
  });
});
