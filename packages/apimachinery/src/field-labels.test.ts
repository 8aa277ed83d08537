import { ApiError } from './errors';
import { checkFieldLabels } from './field-labels';

/** The field labels lists, watches and deletecollection accept, in one place. */
describe('checkFieldLabels', () => {
  const refused = (def: { selectableFields?: readonly string[] }, selector: string): string => {
    try {
      checkFieldLabels(def, selector);
    } catch (err) {
      if (err instanceof ApiError) return `${err.code} ${err.message}`;
      throw err;
    }
    return 'accepted';
  };

  test.each([
    [{}, '', 'accepted'],
    [{}, 'metadata.name=a,metadata.namespace!=b', 'accepted'],
    [{}, 'spec.nodeName=n1,status.phase=Running', 'accepted'],
    [{}, 'involvedObject.name=x,reason=Started,type=Normal,source=s', 'accepted'],
    [{}, 'data.key=x', '400 field label not supported: data.key'],
    [{}, 'metadata.labels=x', '400 field label not supported: metadata.labels'],
    [{ selectableFields: ['spec.color'] }, 'spec.color=red,metadata.name=w', 'accepted'],
    [{ selectableFields: ['spec.color'] }, 'spec.size=3', '400 field label not supported: spec.size'],
    [{ selectableFields: [] }, 'status.phase=x', '400 field label not supported: status.phase'],
  ])('%j %j: %s', (def, selector, expected) => {
    expect(refused(def, selector)).toBe(expected);
  });

  test('an unparsable selector is refused as the parser refuses it', () => {
    expect(refused({}, 'no operator')).toMatch(/^400 invalid selector/);
  });
});
