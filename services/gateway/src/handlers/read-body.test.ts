import { PassThrough } from 'node:stream';
import type { Request } from 'express';
import { ApiError } from '@svc/apimachinery';
import { readBody } from './common';

/** A request body as a stream, with the headers readBody reads. */
function request(headers: Record<string, string> = {}): PassThrough & Request {
  return Object.assign(new PassThrough(), { headers }) as unknown as PassThrough & Request;
}

describe('readBody', () => {
  it('answers the body, in however many chunks it comes', async () => {
    const req = request();
    const body = readBody(req, 100);
    req.write('{"a":');
    req.end('1}');
    expect((await body).toString()).toBe('{"a":1}');
    expect(req.listenerCount('data') + req.listenerCount('end') + req.listenerCount('error')).toBe(0);
  });

  it('answers an empty body, also for a request already read to its end', async () => {
    const req = request();
    const body = readBody(req, 100);
    req.end();
    expect((await body).length).toBe(0);
    expect((await readBody(req, 100)).length).toBe(0);
  });

  it('is 413 when the declared length is past the limit, before reading', async () => {
    const req = request({ 'content-length': '101' });
    await expect(readBody(req, 100)).rejects.toMatchObject({ code: 413, message: 'the request body of 101 bytes is larger than the limit of 100 bytes' });
    expect(req.destroyed).toBe(false);
  });

  it('is 413 when the body grows past the limit, and reads no further', async () => {
    const req = request();
    const body = readBody(req, 10);
    req.write('0123456789');
    req.write('x');
    const err = (await body.catch((e: unknown) => e)) as ApiError;
    expect([err.code, err.message]).toEqual([413, 'the request body is larger than the limit of 10 bytes']);
    expect(req.destroyed).toBe(true);
  });

  it('fails with the stream\'s error, and when the stream closes before its end', async () => {
    const failing = request();
    const failed = readBody(failing, 100);
    failing.write('{');
    failing.destroy(new Error('aborted'));
    await expect(failed).rejects.toThrow('aborted');
    const closing = request();
    const closed = readBody(closing, 100);
    closing.write('{');
    closing.destroy();
    await expect(closed).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
    await expect(readBody(closing, 100)).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
  });
});
