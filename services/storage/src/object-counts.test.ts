import { MAX_COUNTED_RESOURCES, followedTypes, noteObjectType, prefixOfType } from './object-counts';

describe('stored object counts', () => {
  test("a resource's etcd prefix comes back from its type label", () => {
    expect(prefixOfType('configmaps')).toBe('/registry/configmaps/');
    expect(prefixOfType('deployments.apps')).toBe('/registry/apps/deployments/');
    expect(prefixOfType('widgets.metrics.example.com')).toBe('/registry/metrics.example.com/widgets/');
  });

  test('the resources counted are bounded; the empty type (no resource) is never counted', () => {
    noteObjectType('');
    expect(followedTypes().has('')).toBe(false);
    for (let i = 0; i < MAX_COUNTED_RESOURCES + 50; i++) noteObjectType(`things${i}.example.com`);
    expect(followedTypes().size).toBe(MAX_COUNTED_RESOURCES);
    expect(followedTypes().has(`things${MAX_COUNTED_RESOURCES + 10}.example.com`)).toBe(false);
  });
});
