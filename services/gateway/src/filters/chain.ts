import type { Request, Response } from 'express';

/** A step of the handler chain: handles the request or passes it on. */
export type Handler = (req: Request, res: Response) => Promise<void>;
