import type { JsonObject, JsonValue } from '@svc/apimachinery';
import { QUERY_PARAMETERS, WATCH_MEDIA_TYPES, OBJECT_MEDIA_TYPES, type BodySchema, type Operation, type PathItem, type QueryParameter } from './operations';
import { refTo, setExtension, type Dialect } from './schema-convert';

/** Renders the operation model as Swagger 2.0 or OpenAPI 3.0 path items. */

const PATH_PARAMETER_DESCRIPTIONS = {
  name: (kind: string) => `name of the ${kind}`,
  namespace: () => 'object name and auth scope, such as for teams and projects',
};

function schemaOf(dialect: Dialect, body: BodySchema): JsonObject {
  return 'definition' in body ? refTo(dialect, body.definition) : { type: 'object' };
}

function v2Parameter(name: QueryParameter): JsonObject {
  const spec = QUERY_PARAMETERS[name];
  return { name, in: 'query', description: spec.description, type: spec.type, uniqueItems: true };
}

function v3Parameter(name: QueryParameter): JsonObject {
  const spec = QUERY_PARAMETERS[name];
  return { name, in: 'query', description: spec.description, schema: { type: spec.type, uniqueItems: true } };
}

function pathParameters(item: PathItem, kind: string, dialect: Dialect): JsonValue[] {
  const params: JsonValue[] = item.pathParameters.map((p) => {
    const description = PATH_PARAMETER_DESCRIPTIONS[p](kind);
    return dialect.openApiVersion === 2
      ? { name: p, in: 'path', required: true, description, type: 'string', uniqueItems: true }
      : { name: p, in: 'path', required: true, description, schema: { type: 'string', uniqueItems: true } };
  });
  params.push(dialect.openApiVersion === 2 ? v2Parameter('pretty') : v3Parameter('pretty'));
  return params;
}

function extensions(out: JsonObject, op: Operation): JsonObject {
  setExtension(out, 'x-svc-action', op.action);
  setExtension(out, 'x-svc-group-version-kind', { group: op.gvk.group, kind: op.gvk.kind, version: op.gvk.version });
  return out;
}

function renderV2(op: Operation): JsonObject {
  const dialect: Dialect = { openApiVersion: 2 };
  const parameters: JsonValue[] = op.query.map(v2Parameter);
  if (op.body) parameters.push({ name: 'body', in: 'body', required: op.method !== 'delete', schema: schemaOf(dialect, op.body.schema) });
  const responses: JsonObject = {};
  for (const r of op.responses) responses[r.code] = { description: r.description, schema: schemaOf(dialect, r.schema) };
  responses['401'] = { description: 'Unauthorized' };
  const out: JsonObject = {
    description: op.description,
    consumes: op.method === 'patch' ? [...(op.body?.mediaTypes ?? [])] : ['*/*'],
    produces: [...OBJECT_MEDIA_TYPES, ...(op.watchable ? WATCH_MEDIA_TYPES : [])],
    schemes: ['https'],
    tags: [op.tag],
    operationId: op.operationId,
    responses,
  };
  if (parameters.length > 0) out['parameters'] = parameters;
  return extensions(out, op);
}

function content(dialect: Dialect, schema: BodySchema, mediaTypes: string[]): JsonObject {
  const out: JsonObject = {};
  for (const mt of mediaTypes) out[mt] = { schema: schemaOf(dialect, schema) };
  return out;
}

function renderV3(op: Operation): JsonObject {
  const dialect: Dialect = { openApiVersion: 3 };
  const responses: JsonObject = {};
  const produced = [...OBJECT_MEDIA_TYPES, ...(op.watchable ? WATCH_MEDIA_TYPES : [])];
  for (const r of op.responses) responses[r.code] = { description: r.description, content: content(dialect, r.schema, produced) };
  responses['401'] = { description: 'Unauthorized' };
  const out: JsonObject = { description: op.description, operationId: op.operationId };
  if (op.query.length > 0) out['parameters'] = op.query.map(v3Parameter);
  if (op.body) {
    const body: JsonObject = { content: content(dialect, op.body.schema, op.body.mediaTypes) };
    if (op.method !== 'delete') body['required'] = true;
    out['requestBody'] = body;
  }
  out['responses'] = responses;
  out['tags'] = [op.tag];
  return extensions(out, op);
}

/** Path items keyed by path, for the given OpenAPI version. */
export function renderPaths(items: Array<{ item: PathItem; kind: string }>, dialect: Dialect): JsonObject {
  const paths: JsonObject = {};
  for (const { item, kind } of items) {
    const rendered: JsonObject = { parameters: pathParameters(item, kind, dialect) };
    for (const op of item.operations) rendered[op.method] = dialect.openApiVersion === 2 ? renderV2(op) : renderV3(op);
    paths[item.path] = rendered;
  }
  return paths;
}
