import type { status as GrpcStatus } from '@grpc/grpc-js';

/**
 * The one place every internal call passes, on both sides: a unary gRPC
 * call, a server stream, or a unary call multiplexed on a service's `Calls`
 * stream. Observers (metrics, traces) register here instead of each being
 * wired into every transport; with none registered a call pays one array
 * length check.
 */

export type CallSide = 'server' | 'client';

/** How the call travelled. */
export type CallTransport = 'unary' | 'server-stream' | 'calls';

export interface CallDescription {
  side: CallSide;
  /** The peer on the client side (`storage`, `authz`...); the serving service on the server side, when known. */
  service: string;
  /** The method's name as the proto declares it (`Get`, `Authorize`). */
  method: string;
  transport: CallTransport;
  requestId: string;
  /** Server side: the W3C trace headers the caller sent, to continue its trace. */
  carrier?: Record<string, string>;
}

/** What an observer does with one call. */
export interface CallObservation {
  /**
   * Runs the call's work inside the observer's context (a server handler
   * under its span, a client's send while its span is active so the sent
   * trace headers name it).
   */
  wrap?<T>(fn: () => T): T;
  /** The call ended with this gRPC status code (`OK` for success). */
  end(code: GrpcStatus): void;
}

export type CallObserver = (call: CallDescription) => CallObservation | undefined;

const observers: CallObserver[] = [];

/** Registers an observer for every later call in this process; returns its removal. */
export function addCallObserver(observer: CallObserver): () => void {
  observers.push(observer);
  return () => {
    const i = observers.indexOf(observer);
    if (i >= 0) observers.splice(i, 1);
  };
}

const NOTHING = {
  wrap<T>(fn: () => T): T {
    return fn();
  },
  end(): void {},
};

/** One call's observations, combined: `wrap` nests the observers' contexts (the last registered outermost), `end` tells each once. */
export interface ObservedCall {
  wrap<T>(fn: () => T): T;
  end(code: GrpcStatus): void;
}

export function observeCall(call: CallDescription): ObservedCall {
  if (observers.length === 0) return NOTHING;
  const taken: CallObservation[] = [];
  for (const observer of observers) {
    const o = observer(call);
    if (o) taken.push(o);
  }
  if (taken.length === 0) return NOTHING;
  let ended = false;
  return {
    wrap<T>(fn: () => T): T {
      let run = fn;
      for (const o of taken) {
        if (!o.wrap) continue;
        const inner = run;
        run = () => o.wrap!(inner);
      }
      return run();
    },
    end(code: GrpcStatus): void {
      if (ended) return;
      ended = true;
      for (const o of taken) o.end(code);
    },
  };
}

/** `/svc.storage.v1.Storage/Get` → `Get`. */
export function methodOfPath(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/**
 * A generated client's method bound to its client, keeping the method's
 * gRPC path (grpc-js puts it on the unbound method; `bind` would lose it),
 * so metrics and traces name the call.
 */
export function boundMethod<F extends (...args: never[]) => unknown>(client: object, method: F): F {
  const bound = method.bind(client) as F;
  const path = (method as { path?: unknown }).path;
  if (typeof path === 'string') Object.defineProperty(bound, 'path', { value: path });
  return bound;
}

/** The method a client function calls: from its gRPC path (`boundMethod`), else from its name (`bound authorize` → `Authorize`). */
export function methodOfFunction(fn: { name: string; path?: unknown }): string {
  if (typeof fn.path === 'string') return methodOfPath(fn.path);
  const name = fn.name.replace(/^bound /, '');
  return name ? name[0]!.toUpperCase() + name.slice(1) : 'unknown';
}
