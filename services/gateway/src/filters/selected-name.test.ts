import { selectedName, selectorsOf } from './authorization';

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

describe('the selectors passed to authorization', () => {
  const info = (verb: string, query: string) => ({ verb, query: new URLSearchParams(query) });
  test.each([
    ['list', 'fieldSelector=spec.nodeName%3Dn1', { fieldSelector: 'spec.nodeName=n1' }],
    ['watch', 'labelSelector=app%3Dweb&fieldSelector=metadata.name%3Dn1', { labelSelector: 'app=web', fieldSelector: 'metadata.name=n1' }],
    ['deletecollection', 'labelSelector=a', { labelSelector: 'a' }],
    ['list', '', {}],
    ['get', 'fieldSelector=spec.nodeName%3Dn1', {}],
    ['create', 'labelSelector=a', {}],
  ])('%s ?%s', (verb, query, expected) => {
    expect(selectorsOf(info(verb, query))).toEqual(expected);
  });
});
