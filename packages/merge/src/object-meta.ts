/**
 * The merge topology of `metadata`. Every kind shares it, so a kind whose
 * schema leaves `metadata` loosely typed still merges labels, finalizers and
 * owner references the way clients expect.
 */
import type { Schema } from '@svc/apimachinery';

const stringMap: Schema = { type: 'object', additionalProperties: { type: 'string' } };

export const OBJECT_META_SCHEMA: Schema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    generateName: { type: 'string' },
    namespace: { type: 'string' },
    selfLink: { type: 'string' },
    uid: { type: 'string' },
    resourceVersion: { type: 'string' },
    generation: { type: 'integer' },
    creationTimestamp: { type: 'string', format: 'date-time', nullable: true },
    deletionTimestamp: { type: 'string', format: 'date-time' },
    deletionGracePeriodSeconds: { type: 'integer' },
    labels: stringMap,
    annotations: stringMap,
    ownerReferences: {
      type: 'array',
      'x-svc-list-type': 'map',
      'x-svc-list-map-keys': ['uid'],
      'x-svc-patch-strategy': 'merge',
      'x-svc-patch-merge-key': 'uid',
      items: {
        type: 'object',
        'x-svc-map-type': 'atomic',
        properties: {
          apiVersion: { type: 'string' },
          kind: { type: 'string' },
          name: { type: 'string' },
          uid: { type: 'string' },
          controller: { type: 'boolean' },
          blockOwnerDeletion: { type: 'boolean' },
        },
        required: ['apiVersion', 'kind', 'name', 'uid'],
      },
    },
    finalizers: {
      type: 'array',
      'x-svc-list-type': 'set',
      'x-svc-patch-strategy': 'merge',
      items: { type: 'string' },
    },
    managedFields: {
      type: 'array',
      'x-svc-list-type': 'atomic',
      items: { type: 'object', 'x-svc-preserve-unknown-fields': true },
    },
  },
};
