import { ApiError } from './errors';
import { checkFieldLabels } from './field-labels';

/** The field labels lists, watches and deletecollection accept, in one place. */
describe('checkFieldLabels', () => {
  const refused = (def: { group: string; kind: string; selectableFields?: readonly string[] }, selector: string): string => {
    try {
      checkFieldLabels(def, selector);
    } catch (err) {
      if (err instanceof ApiError) return `${err.code} ${err.message}`;
      throw err;
    }
    return 'accepted';
  };
  const configMap = { group: '', kind: 'ConfigMap' };
  const pod = { group: '', kind: 'Pod' };
  const namespace = { group: '', kind: 'Namespace' };
  const widget = { group: 'example.com', kind: 'Widget', selectableFields: ['spec.color'] };
  const NOT_KNOWN = 'is not a known field selector: only "metadata.name", "metadata.namespace"';

  test.each([
    [configMap, '', 'accepted'],
    [configMap, 'metadata.name=a,metadata.namespace!=b', 'accepted'],
    [configMap, 'spec.nodeName=n1', `400 "spec.nodeName" ${NOT_KNOWN}`],
    [configMap, 'data.key=x', `400 "data.key" ${NOT_KNOWN}`],
    [configMap, 'metadata.labels=x', `400 "metadata.labels" ${NOT_KNOWN}`],
    [pod, 'spec.nodeName=n1,status.phase=Running,metadata.namespace=a', 'accepted'],
    [pod, 'spec.bogus=x', '400 field label not supported: spec.bogus'],
    [namespace, 'status.phase=Active,metadata.name=a', 'accepted'],
    [namespace, 'metadata.namespace=a', '400 field label not supported: metadata.namespace'],
    [{ group: '', kind: 'Service' }, 'spec.clusterIP=None,spec.type=ClusterIP', 'accepted'],
    [{ group: '', kind: 'Secret' }, 'type=Opaque', 'accepted'],
    [{ group: '', kind: 'Event' }, 'involvedObject.name=x,reason=Started,type=Normal,source=s', 'accepted'],
    [widget, 'spec.color=red,metadata.name=w', 'accepted'],
    [widget, 'spec.size=3', `400 "spec.size" ${NOT_KNOWN}`],
    [{ group: 'example.com', kind: 'Gadget', selectableFields: [] }, 'status.phase=x', `400 "status.phase" ${NOT_KNOWN}`],
  ])('%j %j: %s', (def, selector, expected) => {
    expect(refused(def, selector)).toBe(expected);
  });

  test('an unparsable selector is refused as the parser refuses it', () => {
    expect(refused(configMap, 'no operator')).toMatch(/^400 invalid selector/);
  });
});
