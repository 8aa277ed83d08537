import { status } from '@grpc/grpc-js';
import { addCallObserver, boundMethod, methodOfFunction, methodOfPath, observeCall, type CallDescription } from './call-hooks';

const call: CallDescription = { side: 'client', service: 'storage', method: 'Get', transport: 'calls', requestId: 'r1' };

describe('call hooks', () => {
  test('with no observer a call runs its work unchanged', () => {
    expect(observeCall(call).wrap(() => 42)).toBe(42);
  });

  test('every observer sees the call, wraps its work (the last registered outermost) and hears its end once', () => {
    const seen: string[] = [];
    const remove = [
      addCallObserver((c) => ({
        wrap: (fn) => {
          seen.push(`a-in ${c.method}`);
          const r = fn();
          seen.push('a-out');
          return r;
        },
        end: (code) => seen.push(`a-end ${code}`),
      })),
      addCallObserver(() => ({
        wrap: (fn) => {
          seen.push('b-in');
          return fn();
        },
        end: (code) => seen.push(`b-end ${code}`),
      })),
      // An observer that takes no interest in this call.
      addCallObserver(() => undefined),
    ];
    try {
      const observed = observeCall(call);
      expect(observed.wrap(() => (seen.push('work'), 'done'))).toBe('done');
      observed.end(status.NOT_FOUND);
      observed.end(status.OK);
      expect(seen).toEqual(['b-in', 'a-in Get', 'work', 'a-out', `a-end ${status.NOT_FOUND}`, `b-end ${status.NOT_FOUND}`]);
    } finally {
      for (const r of remove) r();
    }
    seen.length = 0;
    observeCall(call).end(status.OK);
    expect(seen).toEqual([]);
  });

  test('method names from a path and from a bound generated method', () => {
    expect(methodOfPath('/svc.storage.v1.Storage/Get')).toBe('Get');
    const client = { authorize(): void {} };
    expect(methodOfFunction(client.authorize.bind(client))).toBe('Authorize');
    // grpc-js's generated methods are anonymous and carry their path, which bind() drops and boundMethod keeps.
    const generated = Object.assign((() => (): string => 'called')(), { path: '/svc.authz.v1.Authz/Authorize' });
    expect(methodOfFunction(generated.bind(client))).toBe('unknown');
    const kept = boundMethod(client, generated);
    expect(methodOfFunction(kept)).toBe('Authorize');
    expect(kept()).toBe('called');
  });
});
