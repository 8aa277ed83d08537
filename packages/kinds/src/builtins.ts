import type { ResourceDefinition, ResourceRegistry } from '@svc/apimachinery';
import { admissionRegistrationDefinitions } from './admissionregistration';
import { authenticationDefinitions } from './authentication';
import { authorizationDefinitions } from './authorization';
import { configMapDefinition } from './config-map';
import { customResourceDefinitionDefinition } from './custom-resource-definition';
import { endpointsDefinition } from './endpoints';
import { eventDefinition } from './event';
import { eventsV1Definition } from './events-v1';
import { flowControlDefinitions } from './flowcontrol';
import { leaseDefinition } from './lease';
import { namespaceDefinition } from './namespace';
import { nodeDefinition } from './node';
import { podDefinition } from './pod';
import { podDisruptionBudgetDefinition } from './pod-disruption-budget';
import { rbacDefinitions } from './rbac';
import { secretDefinition } from './secret';
import { serviceDefinition } from './service';
import { serviceAccountDefinition } from './service-account';

/** Every built-in kind, in discovery order (core group first). */
export function builtinResources(): ResourceDefinition[] {
  return [
    namespaceDefinition(),
    configMapDefinition(),
    secretDefinition(),
    serviceAccountDefinition(),
    podDefinition(),
    serviceDefinition(),
    nodeDefinition(),
    endpointsDefinition(),
    eventDefinition(),
    leaseDefinition(),
    podDisruptionBudgetDefinition(),
    ...authenticationDefinitions(),
    ...rbacDefinitions(),
    ...authorizationDefinitions(),
    ...admissionRegistrationDefinitions(),
    eventsV1Definition(),
    ...flowControlDefinitions(),
    customResourceDefinitionDefinition(),
  ];
}

/** Adds every built-in kind to the registry (replacing entries of the same resource). */
export function registerBuiltins(registry: ResourceRegistry): void {
  for (const def of builtinResources()) registry.add(def);
}
