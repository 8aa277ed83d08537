import { ApiError } from '@svc/apimachinery';
import { requestInfoFrom } from '../context';
import type { Handler } from '../filters/chain';
import type { RequestInfo } from '../request-info';
import type { FlowControl } from './controller';

/**
 * `/debug/api_priority_and_fairness/dump_priority_levels`, `dump_queues`
 * and `dump_requests` (`?includeRequestDetails=1` adds who and what): the
 * original's text tables, columns separated by a comma and aligned.
 * Served behind authorization, as any non-resource URL.
 */

const PREFIX = ['debug', 'api_priority_and_fairness'];

export function apiVersionOf(info: Pick<RequestInfo, 'apiGroup' | 'apiVersion'>): string {
  return info.apiGroup ? `${info.apiGroup}/${info.apiVersion}` : info.apiVersion;
}

/** Rows of cells laid out as Go's tabwriter does with the original's settings (minimum width 8, padding 1, cells ending in a comma). */
export function formatTable(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  const cells = rows.map((r) => r.map((c, i) => (i < r.length - 1 ? `${c},` : c)));
  for (const r of cells) r.forEach((c, i) => i < r.length - 1 && (widths[i] = Math.max(widths[i] ?? 0, Math.max(8, c.length + 1))));
  return cells.map((r) => r.map((c, i) => (i < r.length - 1 ? c.padEnd(widths[i] as number) : c)).join('') + '\n').join('');
}

const time = (ms: number): string => (ms > 0 ? new Date(performance.timeOrigin + ms).toISOString() : '0001-01-01T00:00:00Z');

function dumpPriorityLevels(fc: FlowControl): string {
  const rows: string[][] = [['PriorityLevelName', 'ActiveQueues', 'IsIdle', 'IsQuiescing', 'WaitingRequests', 'ExecutingRequests', 'DispatchedRequests', 'RejectedRequests', 'TimedoutRequests', 'CancelledRequests']];
  for (const { name, queues, quiescing } of fc.levelStates()) {
    const d = queues.dump();
    const active = d.queues.filter((q) => q.waiting > 0).length;
    rows.push([name, String(active), String(queues.idle), String(quiescing), String(d.waiting), String(d.executing), String(d.dispatched), String(d.rejected), String(d.timedOut), String(d.cancelled)]);
  }
  return formatTable(rows);
}

function dumpQueues(fc: FlowControl): string {
  const rows: string[][] = [['PriorityLevelName', 'Index', 'PendingRequests', 'ExecutingRequests', 'SeatsInUse', 'NextDispatchR', 'InitialSeatsSum', 'MaxSeatsSum', 'TotalWorkSum']];
  for (const { name, queues } of fc.levelStates()) {
    for (const q of queues.dump().queues) {
      rows.push([name, String(q.index), String(q.waiting), String(q.executing), String(q.seatsInUse), `${q.nextDispatchR.toFixed(8)}ss`, String(q.waitingSeats), String(q.waitingSeats), `${q.waitingWork.toFixed(8)}ss`]);
    }
  }
  return formatTable(rows);
}

function dumpRequests(fc: FlowControl, details: boolean): string {
  const header = ['PriorityLevelName', 'FlowSchemaName', 'QueueIndex', 'RequestIndexInQueue', 'FlowDistingsher', 'ArriveTime', 'InitialSeats', 'FinalSeats', 'AdditionalLatency', 'StartTime'];
  if (details) header.push('UserName', 'Verb', 'APIPath', 'Namespace', 'Name', 'APIVersion', 'Resource', 'SubResource');
  const rows: string[][] = [header];
  for (const { name, queues } of fc.levelStates()) {
    for (const r of queues.dump().requests) {
      const row = [name, r.flowSchema, String(r.queueIndex), String(r.indexInQueue), r.distinguisher, time(r.arrivedAt), String(r.seats), '0', '0s', time(r.startedAt)];
      if (details) {
        const d = r.details;
        row.push(d?.user ?? '', d?.verb ?? '', d?.path ?? '', d?.namespace ?? '', d?.name ?? '', d?.apiVersion ?? '', d?.resource ?? '', d?.subresource ?? '');
      }
      rows.push(row);
    }
  }
  return formatTable(rows);
}

/** Serves the dumps; other paths go on. Without flow control (it is off) the paths are not served. */
export function withFlowControlDebug(next: Handler, fc: FlowControl | undefined): Handler {
  if (!fc) return next;
  return async (req, res) => {
    const info = requestInfoFrom(req);
    const s = info.segments;
    if (info.isResourceRequest || s.length !== 3 || s[0] !== PREFIX[0] || s[1] !== PREFIX[1]) return next(req, res);
    let body: string;
    if (s[2] === 'dump_priority_levels') body = dumpPriorityLevels(fc);
    else if (s[2] === 'dump_queues') body = dumpQueues(fc);
    else if (s[2] === 'dump_requests') body = dumpRequests(fc, (info.query.get('includeRequestDetails') ?? '') !== '');
    else return next(req, res);
    if (req.method !== 'GET' && req.method !== 'HEAD') throw ApiError.methodNotAllowed(`${req.method} is not allowed on ${info.path}`);
    res.status(200).setHeader('Content-Type', 'text/plain; charset=utf-8');
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}
