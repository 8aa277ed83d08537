import { EventEmitter } from 'node:events';
import type { Request, Response } from 'express';
import { createLogger } from '@svc/service-kit';
import { initRequestState, withRequestInfo, withUser } from '../context';
import { parseRequestInfo, parseRequestPath } from '../request-info';
import { logRequestOnFinish } from './http-log';

function exchange(method: string, path: string): { req: Request; res: Response & EventEmitter; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger('gateway', { level: 'debug', write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const req = { method, httpVersion: '2.0', headers: { 'user-agent': 'kubectl/v1.32.0' }, socket: { remoteAddress: '10.0.0.7' } } as unknown as Request;
  const res = Object.assign(new EventEmitter(), { statusCode: 201 }) as unknown as Response & EventEmitter;
  initRequestState(req, 'audit-1', log.with({ requestId: 'audit-1' }));
  if (path) withRequestInfo(req, parseRequestInfo(method, parseRequestPath(path), new URLSearchParams()));
  return { req, res, lines };
}

describe('the request log', () => {
  test('one info line per request once answered, with verb, path, user, code, request id and client', () => {
    const { req, res, lines } = exchange('POST', '/api/v1/namespaces/default/configmaps');
    withUser(req, { username: 'alice', uid: '', groups: ['system:authenticated'], extra: {} });
    logRequestOnFinish(req, res, process.hrtime.bigint());
    expect(lines).toEqual([]);
    res.emit('finish');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'info',
      msg: 'HTTP',
      requestId: 'audit-1',
      verb: 'create',
      method: 'POST',
      path: '/api/v1/namespaces/default/configmaps',
      user: 'alice',
      code: 201,
      protocol: 'HTTP/2.0',
      userAgent: 'kubectl/v1.32.0',
      srcIP: '10.0.0.7',
    });
    expect(typeof lines[0]!['ms']).toBe('number');
  });

  test('a path refused before it parsed is logged as refused, without a user', () => {
    const { req, res, lines } = exchange('GET', '');
    logRequestOnFinish(req, res, process.hrtime.bigint());
    res.emit('finish');
    expect(lines[0]).toMatchObject({ level: 'info', path: '(refused)', verb: 'get' });
    expect(lines[0]).not.toHaveProperty('user');
  });

  test('health probes are logged at debug level', () => {
    const { req, res, lines } = exchange('GET', '/readyz');
    logRequestOnFinish(req, res, process.hrtime.bigint());
    res.emit('finish');
    expect(lines[0]).toMatchObject({ level: 'debug', path: '/readyz' });
  });
});
